/**
 * The guard looks at the action itself, over HTTP with the real engine: transactions simulated on
 * a real anvil (chain id 8453, Circle's USDC at its Base address, the project's own contracts),
 * valued by an emulated price provider, and typed data read by its shape. Every transaction case
 * runs twice: on the operator's node (eth_simulateV1) and through a caller's node that refuses
 * eth_simulateV1 (a loopback proxy in front of the same anvil), with the same findings.
 */
import { MaxUint256, parseEther } from 'ethers';
import t, { type Test } from 'tap';
import { hashTypedData } from 'viem';
import { DecideResponse as validateResponse } from '../../src/generated/validators.js';
import { PERMIT2 } from '../../src/scan/changes.js';
import { forgetValues } from '../../src/scan/value.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { post, type TestApp } from '../helpers/app.js';
import { type RpcProxy, startRpcProxy } from '../helpers/rpc-proxy.js';
import { type ScanChain, startScanChain } from '../helpers/scan-chain.js';
import { startGuardApp } from '../guard/harness.js';

let chain: ScanChain;
let cg: CoinGeckoEmulator;
let proxy: RpcProxy;
let app: TestApp;
let alice: string;
let usdc: string;

const BOB = '0x000000000000000000000000000000000000b0b0';
const SPENDER = '0x000000000000000000000000000000000000beef';

t.before(async () => {
  [chain, cg] = await Promise.all([startScanChain(), startCoinGecko()]);
  proxy = await startRpcProxy(chain.rpcUrl, ['eth_simulateV1']);
  usdc = (await chain.usdc.getAddress()).toLowerCase();
  cg.setPrice('usd-coin', 'usd', 0.9998).setPrice('ethereum', 'usd', 3000);
  cg.setTokenPrice('base', usdc, 1).setTokenPrice('base', chain.tokenAddress, 2);
  const w = await chain.wallet(1_000_000_000_000n, 10n ** 19n);
  alice = w.address;
  // Real allowances on the chain: the swaps pull USDC with transferFrom.
  const asAlice = chain.usdc.connect(w) as typeof chain.usdc;
  await (await asAlice.approve(chain.fair, MaxUint256)).wait();
  await (await asAlice.approve(chain.drain, MaxUint256)).wait();
  app = await startGuardApp({
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    // The caller's node in these tests is the loopback proxy: only private targets allow it.
    ALLOW_PRIVATE_TARGETS: 'true',
    REQUEST_DEADLINE_MS: '5000',
  });
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([chain?.close(), cg?.close(), proxy?.close()]);
});

const guard = async (body: Record<string, unknown>) => {
  const res = await post(`${app.url}/v1/guard`, body);
  if (res.status !== 200) throw new Error(`guard answered ${res.status}: ${JSON.stringify(res.body)}`);
  if (!validateResponse(res.body)) throw new Error('not a DecideResponse');
  return res.body as {
    verdict: string;
    checks: Record<string, string>;
    failure_modes: string[];
    evidence: Array<{
      name: string;
      status: string;
      reason: string | null;
      message: string;
      observed: any;
      ttl_s: number;
    }>;
  };
};
const item = (body: Awaited<ReturnType<typeof guard>>, name: string) => {
  const e = body.evidence.find((x) => x.name === name);
  if (!e) throw new Error(`no ${name} in the evidence`);
  return e;
};

interface TxCase {
  name: string;
  body: () => Record<string, unknown>;
  status: string;
  reason: string | null;
  verdict: string;
  message?: RegExp;
  also?: (t: Test, observed: any) => void;
}

const transfer = (to: string, amount: bigint) => chain.iface.token.encodeFunctionData('transfer', [to, amount]);

const txCases: TxCase[] = [
  {
    name: 'a 100 USDC transfer declared as 100 USD passes',
    body: () => ({
      action: 'transfer',
      amount_usd: 100,
      transaction: { from: alice, to: usdc, data: transfer(BOB, 100_000_000n) },
    }),
    status: 'pass',
    reason: null,
    verdict: 'proceed',
    message: /sends 100 USDC \(\$100(\.00)?\) to 0x0000…b0b0/,
    also: (t, o) => {
      t.same(o.asset_changes, [
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
      t.equal(o.net_usd_out, 100);
    },
  },
  {
    name: 'the same calldata moving 10,000 USDC blocks',
    body: () => ({
      action: 'transfer',
      amount_usd: 100,
      transaction: { from: alice, to: usdc, data: transfer(BOB, 10_000_000_000n) },
    }),
    status: 'fail',
    reason: 'outflow_exceeds_declared',
    verdict: 'block',
    message: /sends \$10,000, more than the declared \$100/,
  },
  {
    name: 'an unlimited approval blocks',
    body: () => ({
      action: 'contract_call',
      transaction: {
        from: alice,
        to: usdc,
        data: chain.iface.token.encodeFunctionData('approve', [SPENDER, MaxUint256]),
      },
    }),
    status: 'fail',
    reason: 'unlimited_approval',
    verdict: 'block',
    also: (t, o) =>
      t.same(o.approval_changes, [
        { token: usdc, spender: SPENDER, amount: MaxUint256.toString(), unlimited: true, kind: 'erc20' },
      ]),
  },
  {
    name: 'an unlimited approval to a known-safe spender warns',
    body: () => ({
      action: 'contract_call',
      known_safe_addresses: [SPENDER.toUpperCase().replace('0X', '0x')],
      transaction: {
        from: alice,
        to: usdc,
        data: chain.iface.token.encodeFunctionData('approve', [SPENDER, MaxUint256]),
      },
    }),
    status: 'warn',
    reason: 'unlimited_approval',
    verdict: 'wait',
  },
  {
    name: 'a swap that pays nothing blocks',
    body: () => ({
      action: 'swap',
      amount_usd: 50,
      transaction: {
        from: alice,
        to: chain.drain,
        data: chain.iface.swap.encodeFunctionData('swap', [usdc, 50_000_000n, chain.tokenAddress, 10n ** 18n]),
      },
    }),
    status: 'fail',
    reason: 'swap_receives_nothing',
    verdict: 'block',
    message: /receives nothing/,
  },
  {
    name: 'a swap that pays back passes with both sides',
    body: () => ({
      action: 'swap',
      amount_usd: 50,
      transaction: {
        from: alice,
        to: chain.fair,
        data: chain.iface.swap.encodeFunctionData('swap', [usdc, 50_000_000n, chain.tokenAddress, 25n * 10n ** 18n]),
      },
    }),
    status: 'pass',
    reason: null,
    verdict: 'proceed',
    also: (t, o) => {
      const sides = o.asset_changes.map((c: any) => [c.symbol, c.direction, c.amount, c.usd]).sort();
      t.same(sides, [
        ['TST', 'in', String(25n * 10n ** 18n), 50],
        ['USDC', 'out', '50000000', 50],
      ]);
      t.equal(o.net_usd_out, 50, 'the inflow is not netted against the outflow');
    },
  },
  {
    name: 'a revert blocks with its reason',
    body: () => ({
      action: 'contract_call',
      transaction: { from: alice, to: chain.reverter, data: chain.iface.reverter.encodeFunctionData('failWithReason') },
    }),
    status: 'fail',
    reason: 'simulation_reverted',
    verdict: 'block',
    message: /reverts .*Reverter: always fails/,
    also: (t, o) => t.equal(o.revert_reason, 'Reverter: always fails'),
  },
  {
    name: 'native value is priced',
    body: () => ({
      action: 'transfer',
      amount_usd: 30,
      transaction: { from: alice, to: BOB, value: parseEther('0.01').toString() },
    }),
    status: 'pass',
    reason: null,
    verdict: 'proceed',
    also: (t, o) =>
      t.same(o.asset_changes, [
        {
          asset: 'native',
          standard: 'native',
          direction: 'out',
          counterparty: BOB,
          amount: '10000000000000000',
          decimals: 18,
          usd: 30,
        },
      ]),
  },
  {
    name: 'native value beyond the declared amount blocks (hex value)',
    body: () => ({
      action: 'transfer',
      amount_usd: 30,
      transaction: { from: alice, to: BOB, value: `0x${parseEther('1').toString(16)}` },
    }),
    status: 'fail',
    reason: 'outflow_exceeds_declared',
    verdict: 'block',
  },
];

for (const [mode, rpc, method] of [
  ['the operator node', null, 'eth_simulateV1'],
  ['a caller node without eth_simulateV1', 'proxy', 'debug_traceCall'],
] as const) {
  t.test(`transactions on ${mode}`, async (t) => {
    for (const c of txCases) {
      forgetValues();
      const body = { ...c.body(), ...(rpc ? { rpc_url: proxy.url } : {}) };
      const res = await guard(body);
      const sim = item(res, 'transaction_simulation');
      t.equal(sim.status, c.status, `${c.name}: status (${sim.message})`);
      t.equal(sim.reason, c.reason, `${c.name}: reason`);
      t.equal(sim.observed.method, method, `${c.name}: answered by ${method}`);
      t.equal(res.checks.transaction_simulation, c.status);
      t.equal(res.verdict, c.verdict, `${c.name}: verdict`);
      t.ok(sim.ttl_s <= 2, 'reused within one block at most');
      if (c.message) t.match(sim.message, c.message, `${c.name}: message`);
      c.also?.(t, sim.observed);
    }
  });
}

t.test('the proxy really refused eth_simulateV1 and answered debug_traceCall', async (t) => {
  t.ok(proxy.seen.includes('eth_simulateV1'));
  t.ok(proxy.seen.includes('debug_traceCall'));
});

t.test('one price call per simulation for all its tokens', async (t) => {
  forgetValues();
  cg.resetStats();
  await guard({
    action: 'swap',
    amount_usd: 50,
    transaction: {
      from: alice,
      to: chain.fair,
      data: chain.iface.swap.encodeFunctionData('swap', [usdc, 50_000_000n, chain.tokenAddress, 10n ** 18n]),
    },
  });
  const tokenCalls = cg.received.filter((r) => r.path.startsWith('/simple/token_price/'));
  t.equal(tokenCalls.length, 1, 'one token-price call');
  t.same(
    new Set(tokenCalls[0].query.get('contract_addresses')?.split(',')),
    new Set([usdc, chain.tokenAddress.toLowerCase()]),
  );
});

t.test('an unknown token price is null, never 0, and a declared amount then warns', async (t) => {
  forgetValues();
  cg.setTokenPrice('base', chain.tokenAddress, null);
  t.teardown(() => cg.setTokenPrice('base', chain.tokenAddress, 2));
  const res = await guard({
    action: 'transfer',
    amount_usd: 10,
    transaction: { from: chain.fair, to: chain.tokenAddress, data: transfer(BOB, 10n ** 18n) },
  });
  const sim = item(res, 'transaction_simulation');
  t.equal(sim.observed.asset_changes[0].usd, null);
  t.equal(sim.status, 'warn');
  t.equal(sim.reason, 'outflow_unpriced');
});

t.test('no node for the chain is error no_rpc', async (t) => {
  const res = await guard({ action: 'contract_call', chain: 'optimism', transaction: { from: alice, to: BOB } });
  const sim = item(res, 'transaction_simulation');
  t.equal(sim.status, 'error');
  t.equal(sim.reason, 'no_rpc');
  t.equal(res.verdict, 'wait', 'strict: an error waits');
  const lenient = await guard({
    action: 'contract_call',
    chain: 'optimism',
    strict_mode: false,
    transaction: { from: alice, to: BOB },
  });
  t.equal(lenient.checks.transaction_simulation, 'error');
});

// ----- typed data

const NOW = Math.floor(Date.now() / 1000);
const USDC_DOMAIN = () => ({ name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: usdc });
const PERMIT2_DOMAIN = { name: 'Permit2', chainId: 8453, verifyingContract: PERMIT2 };
const permitTypes = {
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
};
const permit2Types = {
  PermitSingle: [
    { name: 'details', type: 'PermitDetails' },
    { name: 'spender', type: 'address' },
    { name: 'sigDeadline', type: 'uint256' },
  ],
  PermitDetails: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint160' },
    { name: 'expiration', type: 'uint48' },
    { name: 'nonce', type: 'uint48' },
  ],
};
const authTypes = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

interface SigCase {
  name: string;
  body: () => Record<string, unknown>;
  status: string;
  reason: string | null;
  kind: string | null;
}

const sigCases: SigCase[] = [
  {
    name: 'an unlimited EIP-2612 permit blocks',
    body: () => ({
      typed_data: {
        domain: USDC_DOMAIN(),
        types: permitTypes,
        primaryType: 'Permit',
        message: { owner: alice, spender: SPENDER, value: MaxUint256.toString(), nonce: 0, deadline: NOW + 600 },
      },
    }),
    status: 'fail',
    reason: 'unlimited_permit',
    kind: 'eip2612_permit',
  },
  {
    name: 'an unlimited Permit2 allowance blocks',
    body: () => ({
      typed_data: {
        domain: PERMIT2_DOMAIN,
        types: permit2Types,
        primaryType: 'PermitSingle',
        message: {
          details: { token: usdc, amount: ((1n << 160n) - 1n).toString(), expiration: NOW + 3600, nonce: 0 },
          spender: SPENDER,
          sigDeadline: NOW + 600,
        },
      },
    }),
    status: 'fail',
    reason: 'unlimited_permit',
    kind: 'permit2_single',
  },
  {
    name: 'an EIP-3009 authorization beyond the declared amount blocks',
    body: () => ({
      amount_usd: 100,
      typed_data: {
        domain: USDC_DOMAIN(),
        types: authTypes,
        primaryType: 'TransferWithAuthorization',
        message: {
          from: alice,
          to: BOB,
          value: '500000000',
          validAfter: 0,
          validBefore: NOW + 600,
          nonce: `0x${'11'.repeat(32)}`,
        },
      },
    }),
    status: 'fail',
    reason: 'outflow_exceeds_declared',
    kind: 'eip3009_transfer',
  },
  {
    name: 'a domain on another chain blocks',
    body: () => ({
      typed_data: {
        domain: { ...USDC_DOMAIN(), chainId: 1 },
        types: permitTypes,
        primaryType: 'Permit',
        message: { owner: alice, spender: SPENDER, value: '1000000', nonce: 0, deadline: NOW + 600 },
      },
    }),
    status: 'fail',
    reason: 'chain_mismatch',
    kind: 'eip2612_permit',
  },
  {
    name: 'an exact, short-lived Permit2 to a known-safe spender passes',
    body: () => ({
      amount_usd: 100,
      known_safe_addresses: [SPENDER],
      typed_data: {
        domain: PERMIT2_DOMAIN,
        types: permit2Types,
        primaryType: 'PermitSingle',
        message: {
          details: { token: usdc, amount: '100000000', expiration: NOW + 3600, nonce: 0 },
          spender: SPENDER,
          sigDeadline: NOW + 600,
        },
      },
    }),
    status: 'pass',
    reason: null,
    kind: 'permit2_single',
  },
  {
    name: 'a long-lived permit warns',
    body: () => ({
      typed_data: {
        domain: USDC_DOMAIN(),
        types: permitTypes,
        primaryType: 'Permit',
        message: { owner: alice, spender: SPENDER, value: '1000000', nonce: 0, deadline: NOW + 90 * 86_400 },
      },
    }),
    status: 'warn',
    reason: 'long_lived_permit',
    kind: 'eip2612_permit',
  },
  {
    name: 'an unknown primaryType warns',
    body: () => ({
      typed_data: {
        domain: { name: 'Mail', version: '1', chainId: 8453 },
        types: { Mail: [{ name: 'contents', type: 'string' }] },
        primaryType: 'Mail',
        message: { contents: 'hello' },
      },
    }),
    status: 'warn',
    reason: 'unrecognised_typed_data',
    kind: null,
  },
];

t.test('typed data is read by its shape and judged', async (t) => {
  for (const c of sigCases) {
    forgetValues();
    const body: Record<string, unknown> = { action: 'contract_call', ...c.body() };
    // The messages are valid EIP-712 for an independent implementation too.
    const td = body.typed_data as any;
    t.doesNotThrow(() => hashTypedData(td), `${c.name}: viem hashes it`);
    const res = await guard(body);
    const sig = item(res, 'signature_scan');
    t.equal(sig.status, c.status, `${c.name}: status (${sig.message})`);
    t.equal(sig.reason, c.reason, `${c.name}: reason`);
    t.equal(sig.observed.kind, c.kind, `${c.name}: kind`);
    t.equal(res.checks.signature_scan, c.status);
  }
});

t.test('the pass message says who may move what, until when, in USD', async (t) => {
  const res = await guard({ action: 'contract_call', ...sigCases[4].body() });
  const sig = item(res, 'signature_scan');
  t.match(sig.message, /A Permit2 allowance lets 0x0000…beef move 100 USDC \(\$100(\.00)?\) until \d{4}-\d\d-\d\dT/);
  t.equal(sig.observed.usd, 100);
  t.equal(res.verdict, 'proceed');
});

t.test('a transaction and typed data in one request: both entries, one verdict', async (t) => {
  const res = await guard({
    action: 'transfer',
    amount_usd: 100,
    transaction: { from: alice, to: usdc, data: transfer(BOB, 100_000_000n) },
    ...sigCases[0].body(),
  });
  t.equal(res.checks.transaction_simulation, 'pass');
  t.equal(res.checks.signature_scan, 'fail');
  t.equal(res.verdict, 'block');
  t.ok(res.failure_modes.some((f) => f.includes('unlimited_permit')));
});

t.test('a revocation and a deployment (which anvil simulates only by tracing) pass', async (t) => {
  const res = await guard({
    action: 'contract_call',
    transaction: { from: alice, to: null, data: '0x6005600c60003960056000f360006000fd' },
  });
  t.equal(item(res, 'transaction_simulation').status, 'pass', item(res, 'transaction_simulation').message);
  t.equal(
    item(res, 'transaction_simulation').observed.method,
    'debug_traceCall',
    'anvil refuses a deployment in eth_simulateV1',
  );
  const revoke = await guard({
    action: 'contract_call',
    transaction: { from: alice, to: usdc, data: chain.iface.token.encodeFunctionData('approve', [SPENDER, 0n]) },
  });
  t.equal(item(revoke, 'transaction_simulation').status, 'pass', item(revoke, 'transaction_simulation').message);
});

t.test('in the worker pool, as production runs checks', async (t) => {
  const pooled = await startGuardApp({
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    POOL_THREADS: '1',
    REQUEST_DEADLINE_MS: '5000',
  });
  t.teardown(() => pooled.close());
  const res = await post(`${pooled.url}/v1/guard`, {
    action: 'swap',
    amount_usd: 50,
    transaction: {
      from: alice,
      to: chain.drain,
      data: chain.iface.swap.encodeFunctionData('swap', [usdc, 50_000_000n, chain.tokenAddress, 10n ** 18n]),
    },
    ...sigCases[0].body(),
  });
  t.equal(res.status, 200);
  t.equal(res.body.checks.transaction_simulation, 'fail');
  t.equal(res.body.checks.signature_scan, 'fail');
  t.ok(res.body.failure_modes.includes('transaction_simulation:swap_receives_nothing'), res.body.failure_modes.join());
});
