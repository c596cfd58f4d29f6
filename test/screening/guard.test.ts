/**
 * counterparty_screen through the guard, over HTTP with the real engine, on a real anvil (chain id
 * 8453, Circle's USDC at its Base address): USDC transfers simulated on the chain, their recipients
 * screened against a sanctions list served from loopback in the SDN Advanced shape; address
 * poisoning with the real May 2024 pair; a counterparty learned from an answered proceed; and
 * recipients delegated by real type-4 transactions to the project's Sweeper and BatchDelegate.
 */
import { type Contract, ContractFactory, Interface, type Wallet, parseEther } from 'ethers';
import t from 'tap';
import { compiled } from '../../contracts/compile.js';
import { DecideResponse as validateResponse } from '../../src/generated/validators.js';
import { designator } from '../../src/scan/delegation.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { post, startTestApp, type TestApp } from '../helpers/app.js';
import {
  type ListServer,
  sdnAdvancedXml,
  type SdnEntry,
  snapshotEntries,
  startListServer,
  until,
} from '../helpers/lists.js';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';
import { agentKey, call } from '../policy/helpers.js';

/** The May 2024 poisoning: the victim meant the first and paid the second (1,155 WBTC). */
const INTENDED = '0xd9A1b0B1e1aE382DbDc898Ea68012FfcB2853a91';
const POISON = '0xd9A1C3788D81257612E2581A6ea0aDa244853a91';
/** Three leading and three trailing hex digits like INTENDED: below the threshold. */
const THREE_THREE = `0xd9a${'5'.repeat(34)}a91`;
const MIXER = '0x1de1157ed000000000000000000000000000c0de';
const USDT_ONLY = '0x7e57000000000000000000000000000000005d77';
const COLLECTOR = '0x000000000000000000000000000000000000c011';
const ENTRIES: SdnEntry[] = [
  { uid: '52001', name: 'TEST MIXER LLC', addresses: [['ETH', MIXER]] },
  { uid: '52002', name: 'TEST OTC DESK', addresses: [['USDT', USDT_ONLY]] },
];
const erc20 = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);

let chain: UsdcChain;
let cg: CoinGeckoEmulator;
let lists: ListServer;
let app: TestApp;
let alice: Wallet;
let usdc: string;
let sweeper: string;
let honest: string;
let key: string;

t.before(async () => {
  [chain, cg, lists] = await Promise.all([startUsdcChain(), startCoinGecko(), startListServer()]);
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
  cg.setPrice('usd-coin', 'usd', 1).setPrice('ethereum', 'usd', 3000).setTokenPrice('base', usdc, 1);
  alice = await chain.wallet(1_000_000_000n, parseEther('10'));
  lists.set('/sdn.xml', sdnAdvancedXml('2025-03-21', [...snapshotEntries(), ...ENTRIES]));
  app = await startTestApp({
    BILLING: 'on',
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    REQUEST_DEADLINE_MS: '5000',
    SANCTIONS_LIST_URL: `${lists.url}/sdn.xml`,
    SCREENING_POLL_S: '1',
  });
  if (!(await until(() => app.screening.lists()[0].status === 'ok')))
    throw new Error('the sanctions list did not load');
  const s = await post(`${app.url}/v1/api-keys/signup`, { email: 'screen@example.com' });
  key = s.body.api_key;
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([chain?.close(), cg?.close(), lists?.close()]);
});

type Item = { name: string; status: string; reason: string | null; message: string; observed: any };
const guard = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const res = await post(`${app.url}/v1/guard`, body, { 'x-api-key': key, ...headers });
  if (res.status !== 200) throw new Error(`guard answered ${res.status}: ${JSON.stringify(res.body)}`);
  if (!validateResponse(res.body)) throw new Error('not a DecideResponse');
  const b = res.body as { verdict: string; evidence: Item[] };
  const screen = b.evidence.find((x) => x.name === 'counterparty_screen');
  if (!screen) throw new Error(`no counterparty_screen in ${JSON.stringify(b.evidence.map((x) => x.name))}`);
  return { verdict: b.verdict, screen, evidence: b.evidence };
};
/** A USDC transfer of `usd` dollars from `from` to `to`, as the agent would send it. */
const transfer = (to: string, extra: Record<string, unknown> = {}, from = alice.address, usd = 25) => ({
  action: 'transfer',
  chain: 'base',
  amount_usd: usd,
  strict_mode: false,
  transaction: {
    from,
    to: usdc,
    value: '0',
    data: erc20.encodeFunctionData('transfer', [to, BigInt(usd) * 10n ** 6n]),
  },
  ...extra,
});

t.test('a USDC transfer to a sanctioned address blocks; the recipient comes from the simulation', async (t) => {
  const r = await guard(transfer(MIXER));
  t.equal(r.verdict, 'block');
  t.match(r.screen, { status: 'fail', reason: 'sanctioned_address' });
  const a = r.screen.observed.addresses.find((x: any) => x.address === MIXER);
  t.same(a.roles, ['recipient']);
  t.same(a.sanctions, { list: 'ofac_sdn', date: '2025-03-21', uid: '52001', name: 'TEST MIXER LLC', assets: ['ETH'] });
  t.match(r.screen.message, /TEST MIXER LLC/);
  const to = r.screen.observed.addresses.find((x: any) => x.address === usdc);
  t.same(to.roles, ['to'], 'the token contract is screened as the transaction target');
});

t.test('a USDC transfer to an address tagged only under USDT blocks', async (t) => {
  const r = await guard(transfer(USDT_ONLY));
  t.equal(r.verdict, 'block');
  t.equal(r.screen.observed.addresses.find((x: any) => x.address === USDT_ONLY).sanctions.assets[0], 'USDT');
});

t.test('an address of the embedded snapshot is still on the list served', async (t) => {
  const real = snapshotEntries().find((e) => e.addresses.some(([a]) => a === 'USDT'))!.addresses[0][1];
  t.equal((await guard(transfer(real))).verdict, 'block');
});

t.test('address poisoning, the real 2024 pair, the intended address in known_safe_addresses', async (t) => {
  const poisoned = await guard(transfer(POISON, { known_safe_addresses: [INTENDED] }));
  t.equal(poisoned.verdict, 'block');
  t.equal(poisoned.screen.reason, 'address_lookalike');
  t.match(poisoned.screen.message, POISON.toLowerCase());
  t.match(poisoned.screen.message, INTENDED.toLowerCase());
  t.same(poisoned.screen.observed.addresses.find((x: any) => x.address === POISON.toLowerCase()).lookalike_of, [
    { known: INTENDED.toLowerCase(), prefix_digits: 4, suffix_digits: 6 },
  ]);
  const intended = await guard(transfer(INTENDED, { known_safe_addresses: [INTENDED] }));
  t.equal(intended.screen.status, 'pass', intended.screen.message);
  const near = await guard(transfer(THREE_THREE, { known_safe_addresses: [INTENDED] }));
  t.equal(near.screen.status, 'pass', 'a 3+3 likeness does not fire');
});

t.test('a counterparty learned from an answered proceed protects a later transfer', async (t) => {
  // A fresh key: its account has learned nothing yet.
  const s = await post(`${app.url}/v1/api-keys/signup`, { email: 'learner@example.com' });
  const mine = { 'x-api-key': s.body.api_key };
  // POST /v1/screen teaches nothing (a proceed of the lookalike would teach the lookalike).
  const before = await post(`${app.url}/v1/screen`, { addresses: [POISON] }, mine);
  t.equal(before.body.results[0].status, 'pass', 'with nothing known, the lookalike is just an address');
  const first = await guard(transfer(INTENDED), mine);
  t.equal(first.verdict, 'proceed', JSON.stringify(first.evidence.map((e) => [e.name, e.status, e.reason])));
  const later = await guard(transfer(POISON), mine);
  t.equal(later.verdict, 'block');
  t.equal(later.screen.reason, 'address_lookalike');
  t.match(later.screen.message, INTENDED.toLowerCase());
  const third = await post(`${app.url}/v1/api-keys/signup`, { email: 'third@example.com' });
  const other = await guard(transfer(POISON), { 'x-api-key': third.body.api_key });
  t.equal(other.screen.status, 'pass', "another account's counterparties are not this one's");
  const viaScreen = await post(`${app.url}/v1/screen`, { addresses: [POISON, INTENDED] }, mine);
  t.same(
    viaScreen.body.results.map((r: any) => r.reasons),
    [['address_lookalike'], []],
    'POST /v1/screen reads the same book',
  );
});

t.test("address poisoning with the intended address in a policy's address set", async (t) => {
  // A fresh account: nothing learned; the policy allows by default and only names its payees.
  const owner = (await post(`${app.url}/v1/api-keys/signup`, { email: 'policy-owner@example.com' })).body.api_key;
  const put = await call(app.url, 'PUT', '/v1/policies/payees', owner, {
    default: 'allow',
    address_sets: { payees: [INTENDED] },
  });
  t.ok(put.status === 201 || put.status === 200, JSON.stringify(put.body));
  const agent = await agentKey(app.url, owner, 'payments bot', 'payees');
  const poisoned = await guard(transfer(POISON), { 'x-api-key': agent.key });
  t.equal(poisoned.verdict, 'block');
  t.equal(poisoned.screen.reason, 'address_lookalike');
  t.match(poisoned.screen.message, INTENDED.toLowerCase());
  t.match(poisoned.screen.message, POISON.toLowerCase());
  const intended = await guard(transfer(INTENDED), { 'x-api-key': agent.key });
  t.equal(intended.screen.status, 'pass', intended.screen.message);
});

/** Delegates a fresh funded wallet to `delegate` with a real type-4 transaction the dev wallet sponsors. */
async function delegated(delegate: string): Promise<Wallet> {
  const victim = await chain.wallet(0n, parseEther('1'));
  const auth = await victim.authorize({ address: delegate, chainId: 8453n, nonce: await victim.getNonce() });
  const tx = await (chain.usdc.runner as Wallet).sendTransaction({
    type: 4,
    to: victim.address,
    data: '0x',
    authorizationList: [auth],
    gasLimit: 200_000,
  });
  await tx.wait();
  if ((await chain.provider.getCode(victim.address)).toLowerCase() !== designator(delegate))
    throw new Error('the delegation is not on the chain');
  return victim;
}

t.test(
  'a recipient delegated (type 4, on chain) to a sweeper blocks; to an honest batch delegate passes',
  async (t) => {
    const swept = await delegated(sweeper);
    const r = await guard(transfer(swept.address));
    t.equal(r.verdict, 'block');
    t.equal(r.screen.reason, 'recipient_delegated_to_sweeper');
    const a = r.screen.observed.addresses.find((x: any) => x.address === swept.address.toLowerCase());
    t.same(a.delegate, { address: sweeper, sweeps: true });
    t.match(r.screen.message, sweeper);

    const kept = await delegated(honest);
    const h = await guard(transfer(kept.address));
    t.equal(h.screen.status, 'pass', h.screen.message);
    t.same(h.screen.observed.addresses.find((x: any) => x.address === kept.address.toLowerCase()).delegate, {
      address: honest,
      sweeps: false,
    });
  },
);

t.test('a transaction paying native value to a sanctioned address blocks', async (t) => {
  const r = await guard({
    action: 'transfer',
    chain: 'base',
    amount_usd: 3,
    strict_mode: false,
    transaction: { from: alice.address, to: MIXER, value: '1000000000000000', data: '0x' },
  });
  t.equal(r.verdict, 'block');
  t.same(r.screen.observed.addresses.find((x: any) => x.address === MIXER).roles.sort(), ['recipient', 'to']);
});
