/**
 * EIP-7702 delegations through the guard, over HTTP with the real engine, on a real anvil (chain
 * id 8453, Prague rules, Circle's USDC at its Base address) with the project's own sweeper and
 * honest batch delegate compiled by the pinned solc; source verification from the Sourcify
 * emulator, prices from the price-provider emulator. The sweeper's cases run twice: on the
 * operator's node (eth_simulateV1) and through a caller's node that refuses eth_simulateV1.
 */
import { type Contract, ContractFactory, Interface, type Wallet, parseEther } from 'ethers';
import t from 'tap';
import { compiled } from '../../contracts/compile.js';
import { DecideResponse as validateResponse } from '../../src/generated/validators.js';
import { designator } from '../../src/scan/delegation.js';
import { forgetValues } from '../../src/scan/value.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { startSourcify, type SourcifyEmulator } from '../emulators/sourcify.js';
import { post, type TestApp } from '../helpers/app.js';
import { type RpcProxy, startRpcProxy } from '../helpers/rpc-proxy.js';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';
import { startGuardApp } from '../guard/harness.js';

let chain: UsdcChain;
let cg: CoinGeckoEmulator;
let sf: SourcifyEmulator;
let proxy: RpcProxy;
let app: TestApp;
let alice: Wallet;
let usdc: string;
let sweeper: string;
/** Verified on Sourcify. */
let honest: string;
/** Not verified anywhere. */
let unverified: string;
/** Not verified, but on the operator's DELEGATE_ALLOWLIST. */
let operatorListed: string;

const COLLECTOR = '0x000000000000000000000000000000000000c011';
const BOB = '0x000000000000000000000000000000000000b0b0';
const NO_CODE = '0x00000000000000000000000000000000000d0d0d';
const ZERO = '0x0000000000000000000000000000000000000000';
const erc20 = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);
const batch = new Interface(compiled('BatchDelegate').abi as never);

t.before(async () => {
  [chain, cg, sf] = await Promise.all([startUsdcChain(), startCoinGecko(), startSourcify()]);
  proxy = await startRpcProxy(chain.rpcUrl, ['eth_simulateV1']);
  usdc = (await chain.usdc.getAddress()).toLowerCase();
  const deployer = chain.usdc.runner as Wallet;
  const deploy = async (name: string, ...args: unknown[]): Promise<string> => {
    const c = compiled(name);
    const ct = (await new ContractFactory(c.abi as never, c.bytecode, deployer).deploy(...args)) as Contract;
    await ct.waitForDeployment();
    return (await ct.getAddress()).toLowerCase();
  };
  sweeper = await deploy('Sweeper', COLLECTOR, usdc);
  honest = await deploy('BatchDelegate');
  unverified = await deploy('BatchDelegate');
  operatorListed = await deploy('BatchDelegate');
  sf.setVerified(8453, sweeper).setVerified(8453, honest);
  cg.setPrice('ethereum', 'usd', 3000).setTokenPrice('base', usdc, 1);
  alice = await chain.wallet(1_000_000_000n, parseEther('10'));
  app = await startGuardApp({
    PRICE_API_URL: cg.url,
    SOURCIFY_URL: sf.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    DELEGATE_ALLOWLIST: operatorListed,
    ALLOW_PRIVATE_TARGETS: 'true',
    REQUEST_DEADLINE_MS: '5000',
  });
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([chain?.close(), cg?.close(), sf?.close(), proxy?.close()]);
});
t.beforeEach(() => forgetValues());

type Item = { name: string; status: string; reason: string | null; message: string; observed: any };
const guard = async (body: Record<string, unknown>) => {
  const res = await post(`${app.url}/v1/guard`, body);
  if (res.status !== 200) throw new Error(`guard answered ${res.status}: ${JSON.stringify(res.body)}`);
  if (!validateResponse(res.body)) throw new Error('not a DecideResponse');
  const b = res.body as { verdict: string; evidence: Item[] };
  const item = (name: string): Item => {
    const e = b.evidence.find((x) => x.name === name);
    if (!e) throw new Error(`no ${name} in ${JSON.stringify(b.evidence.map((x) => x.name))}`);
    return e;
  };
  return { verdict: b.verdict, item };
};
const authorize = (address: string, chain_id = 8453, extra: Record<string, unknown> = {}) => ({
  action: 'contract_call',
  authorization: { authority: alice.address, address, chain_id, nonce: 0 },
  ...extra,
});

for (const via of ['operator node', 'caller node without eth_simulateV1'] as const) {
  const rpc = () => (via === 'operator node' ? {} : { rpc_url: proxy.url });
  t.test(
    `${via}: an authorization to the sweeper blocks, naming where the funds go, though its source is verified`,
    async (t) => {
      const r = await guard(authorize(sweeper, 8453, rpc()));
      const d = r.item('delegation_scan');
      t.equal(d.status, 'fail');
      t.equal(d.reason, 'delegate_sweeps_funds');
      t.equal(r.verdict, 'block');
      t.match(d.message, COLLECTOR);
      t.match(d.message, /1,000 USDC \(\$1,000(\.00)?\)/);
      const [del] = d.observed.delegations;
      t.equal(del.verified, true, 'verified, and blocked anyway');
      t.equal(del.code, true);
      t.equal(del.probe.method, via === 'operator node' ? 'eth_simulateV1' : 'debug_traceCall');
      const out = del.probe.asset_changes;
      t.ok(
        out.some(
          (c: any) => c.asset === usdc && c.counterparty === COLLECTOR && c.amount === '1000000000' && c.usd === 1000,
        ),
        'the USDC goes to the collector',
      );
      t.ok(
        out.some(
          (c: any) => c.asset === 'native' && c.counterparty === COLLECTOR && BigInt(c.amount) >= parseEther('10'),
        ),
        'the native coin goes to the collector',
      );
      t.ok(d.observed.signals.includes('delegate_sweeps_funds'));
      t.ok(d.observed.signals.includes('unlisted_delegate'), 'every match is a signal');
    },
  );

  t.test(`${via}: a type-4 transaction to self through the sweeper blocks on what it sends`, async (t) => {
    const r = await guard({
      action: 'contract_call',
      amount_usd: 0,
      ...rpc(),
      transaction: {
        from: alice.address,
        to: alice.address,
        data: '0x',
        authorization_list: [{ address: sweeper, chain_id: 8453, nonce: 1 }],
      },
    });
    const sim = r.item('transaction_simulation');
    t.equal(sim.status, 'fail');
    t.equal(sim.reason, 'outflow_exceeds_declared');
    t.ok(
      sim.observed.asset_changes.some(
        (c: any) =>
          c.asset === usdc && c.direction === 'out' && c.counterparty === COLLECTOR && c.amount === '1000000000',
      ),
      'the sweep is in asset_changes',
    );
    t.equal(r.item('delegation_scan').reason, 'delegate_sweeps_funds');
    t.equal(r.verdict, 'block');
  });
}

t.test('an honest delegate: listed, verified, unverified, listed by the operator', async (t) => {
  const listed = await guard(authorize(honest, 8453, { known_safe_addresses: [honest] }));
  t.equal(listed.item('delegation_scan').status, 'pass');
  t.match(listed.item('delegation_scan').message, /may act for .* on chain 8453/);
  t.same(listed.item('delegation_scan').observed.delegations[0].probe.asset_changes, [], 'quiet under the probe');

  const verified = (await guard(authorize(honest))).item('delegation_scan');
  t.equal(verified.status, 'warn');
  t.equal(verified.reason, 'unlisted_delegate');

  const unv = (await guard(authorize(unverified))).item('delegation_scan');
  t.equal(unv.status, 'fail');
  t.equal(unv.reason, 'unverified_delegate');
  t.equal(unv.observed.delegations[0].verified, false);

  const op = (await guard(authorize(operatorListed))).item('delegation_scan');
  t.equal(op.status, 'pass', 'DELEGATE_ALLOWLIST lists it');
  t.equal(op.observed.delegations[0].listed, true);
});

t.test('a batched 100 USDC transfer through the honest delegate, declared 100, passes with that outflow', async (t) => {
  const call = erc20.encodeFunctionData('transfer', [BOB, 100_000_000n]);
  const data = batch.encodeFunctionData('execute', [[{ to: usdc, value: 0n, data: call }]]);
  const r = await guard({
    action: 'transfer',
    amount_usd: 100,
    known_safe_addresses: [honest],
    transaction: {
      from: alice.address,
      to: alice.address,
      data,
      authorization_list: [{ address: honest, chain_id: 8453, nonce: 1 }],
    },
  });
  const sim = r.item('transaction_simulation');
  t.equal(sim.status, 'pass', sim.message);
  t.same(sim.observed.asset_changes, [
    {
      asset: usdc,
      standard: 'erc20',
      direction: 'out',
      counterparty: BOB,
      amount: '100000000',
      decimals: 6,
      symbol: 'USDC',
      usd: 100,
    },
  ]);
  t.equal(r.item('delegation_scan').status, 'pass');
  // Without the delegation installed the same call to self runs no code and moves nothing.
  const plain = await guard({
    action: 'transfer',
    amount_usd: 100,
    transaction: { from: alice.address, to: alice.address, data },
  });
  t.same(plain.item('transaction_simulation').observed.asset_changes, []);
});

t.test('chains, code and revocations', async (t) => {
  const listedAll = (await guard(authorize(honest, 0, { known_safe_addresses: [honest] }))).item('delegation_scan');
  t.equal(listedAll.status, 'warn');
  t.equal(listedAll.reason, 'all_chains_authorization');
  const unlistedAll = (await guard(authorize(honest, 0))).item('delegation_scan');
  t.equal(unlistedAll.status, 'fail');
  t.equal(unlistedAll.reason, 'all_chains_authorization');
  const other = (await guard(authorize(honest, 1, { known_safe_addresses: [honest] }))).item('delegation_scan');
  t.equal(other.status, 'fail');
  t.equal(other.reason, 'chain_mismatch');
  const empty = (await guard(authorize(NO_CODE))).item('delegation_scan');
  t.equal(empty.status, 'fail');
  t.equal(empty.reason, 'delegate_has_no_code');
  t.equal(empty.observed.delegations[0].code, false);
  const revoke = await guard(authorize(ZERO));
  t.equal(revoke.item('delegation_scan').status, 'pass');
  t.match(revoke.item('delegation_scan').message, /clears the delegation/);
});

t.test('no node for the chain is error no_rpc, never a pass', async (t) => {
  const r = await guard({ ...authorize(honest, 1, { known_safe_addresses: [honest] }), chain: 'ethereum' });
  const d = r.item('delegation_scan');
  t.equal(d.status, 'error');
  t.equal(d.reason, 'no_rpc');
  const strict = await guard({ ...authorize(honest, 1), chain: 'ethereum', strict: true });
  t.not(strict.verdict, 'proceed');
});

t.test('a node that offers only eth_call cannot run the probe: error effects_unknown, never a pass', async (t) => {
  const bare = await startRpcProxy(chain.rpcUrl, ['eth_simulateV1', 'debug_traceCall']);
  t.teardown(() => bare.close());
  const d = (await guard(authorize(honest, 8453, { known_safe_addresses: [honest], rpc_url: bare.url }))).item(
    'delegation_scan',
  );
  t.equal(d.status, 'error');
  t.equal(d.reason, 'effects_unknown');
  // A fact that did answer still decides.
  const e = (await guard(authorize(NO_CODE, 8453, { rpc_url: bare.url }))).item('delegation_scan');
  t.equal(e.reason, 'delegate_has_no_code');
});

t.test('a failed source lookup of an unlisted delegate is an error, not a pass', async (t) => {
  const fresh = (await new ContractFactory(
    compiled('BatchDelegate').abi as never,
    compiled('BatchDelegate').bytecode,
    chain.usdc.runner as Wallet,
  ).deploy()) as Contract;
  await fresh.waitForDeployment();
  sf.unsupportedChains.add(8453);
  try {
    const d = (await guard(authorize(await fresh.getAddress()))).item('delegation_scan');
    t.equal(d.status, 'error');
    t.equal(d.observed.delegations[0].verified, null);
    // The sweeper still blocks: its probe decides whatever its source.
    const s = (await guard(authorize(sweeper))).item('delegation_scan');
    t.equal(s.reason, 'delegate_sweeps_funds');
  } finally {
    sf.unsupportedChains.delete(8453);
  }
});

t.test(
  'a real type-4 transaction signed with ethers authorize() installs the designator the probe assumes',
  async (t) => {
    // Bob-the-victim delegates to the sweeper for real; the dev wallet sponsors the transaction.
    const victim = await chain.wallet(5_000_000n, parseEther('1'));
    const sponsor = chain.usdc.runner as Wallet;
    const auth = await victim.authorize({ address: sweeper, chainId: 8453n, nonce: await victim.getNonce() });
    const probe = (
      await guard({
        action: 'contract_call',
        authorization: { authority: victim.address, address: sweeper, chain_id: 8453, nonce: Number(auth.nonce) },
      })
    ).item('delegation_scan');
    const predicted = probe.observed.delegations[0].probe.asset_changes.find((c: any) => c.asset === usdc);
    t.equal(predicted.amount, '5000000');

    const tx = await sponsor.sendTransaction({
      type: 4,
      to: victim.address,
      data: '0x',
      authorizationList: [auth],
      gasLimit: 200_000,
    });
    const receipt = await tx.wait();
    t.equal(receipt?.status, 1);
    t.equal(
      (await chain.provider.getCode(victim.address)).toLowerCase(),
      designator(sweeper),
      'the chain holds 0xef0100 ‖ delegate',
    );
    // The real call swept what the probe said it would.
    t.equal(await chain.balanceOf(COLLECTOR), 5_000_000n);
    t.equal(await chain.balanceOf(victim.address), 0n);
  },
);

t.test('malformed authorizations are 422s with exact loc', async (t) => {
  const A = '0x1111111111111111111111111111111111111111';
  const cases: Array<[string, Record<string, unknown>, Array<string | number>]> = [
    ['authority missing', { authorization: { address: A, chain_id: 1 } }, ['body', 'authorization', 'authority']],
    [
      'address short',
      { authorization: { authority: A, address: '0x12', chain_id: 1 } },
      ['body', 'authorization', 'address'],
    ],
    [
      'chain_id negative',
      { authorization: { authority: A, address: A, chain_id: -1 } },
      ['body', 'authorization', 'chain_id'],
    ],
    [
      'chain_id a string',
      { authorization: { authority: A, address: A, chain_id: '1' } },
      ['body', 'authorization', 'chain_id'],
    ],
    [
      'nonce fractional',
      { authorization: { authority: A, address: A, chain_id: 1, nonce: 1.5 } },
      ['body', 'authorization', 'nonce'],
    ],
    [
      'nine in a list',
      { transaction: { from: A, authorization_list: Array.from({ length: 9 }, () => ({ address: A, chain_id: 1 })) } },
      ['body', 'transaction', 'authorization_list'],
    ],
    [
      'a list entry without address',
      { transaction: { from: A, authorization_list: [{ address: A, chain_id: 1 }, { chain_id: 1 }] } },
      ['body', 'transaction', 'authorization_list', 1, 'address'],
    ],
    [
      'a list entry with a bad authority',
      { transaction: { from: A, authorization_list: [{ authority: 'me', address: A, chain_id: 1 }] } },
      ['body', 'transaction', 'authorization_list', 0, 'authority'],
    ],
  ];
  for (const [name, body, loc] of cases) {
    const res = await post(`${app.url}/v1/guard`, { action: 'contract_call', ...body });
    t.equal(res.status, 422, name);
    const detail = (res.body as { detail: Array<{ loc: unknown[]; msg: string }> }).detail;
    t.same(detail[0].loc, loc, name);
    if (name === 'address short') t.equal(detail[0].msg, 'Input should be a 0x-prefixed 20-byte hex address');
  }
  const eight = await post(`${app.url}/v1/guard`, {
    action: 'contract_call',
    chain: 'ethereum',
    transaction: {
      from: alice.address,
      authorization_list: Array.from({ length: 8 }, () => ({ address: ZERO, chain_id: 1 })),
    },
  });
  t.equal(eight.status, 200, 'eight are accepted');
});

t.test('/v1/capabilities and /openapi.json carry authorization and authorization_list from the schema', async (t) => {
  const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as {
    guard: { fields: Array<{ name: string; type: unknown; required: boolean }> };
  };
  const field = caps.guard.fields.find((f) => f.name === 'authorization');
  t.same(field?.type, ['object', 'null']);
  t.equal(field?.required, false);
  const doc = JSON.stringify(await (await fetch(`${app.url}/openapi.json`)).json());
  t.ok(doc.includes('"authorization_list"') && doc.includes('"authorization"'));
});
