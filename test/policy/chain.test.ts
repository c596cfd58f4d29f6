/**
 * Policies on a real local Base (anvil, chain id 8453, Circle's USDC at its Base address) with the
 * project's PreflightAccount as the acting account, on the real app (SQLite):
 * listed payee, unlisted address, a block rule on a spender inside an allowed call, a chain outside
 * `chains`, an unlimited approval and a long-lived permit, each with its reason and none relaxed by
 * `strict_mode: false`; a day limit of 1,000 USD with its usage and its dry run; and the release of
 * an unexecuted proceed's reservation after expiry while an executed one stays committed.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import {
  Contract,
  ContractFactory,
  Interface,
  MaxUint256,
  Wallet,
  type InterfaceAbi,
  verifyTypedData as ethersVerifyTypedData,
} from 'ethers';
import { decodeErrorResult, parseAbi, verifyTypedData, type Hex } from 'viem';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { USDC_BASE } from '../../src/billing/x402/constants.js';
import { agentKey, call, signup } from './helpers.js';

const ARTIFACT = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../../contracts/build/PreflightAccount.json', import.meta.url)), 'utf8'),
) as { abi: InterfaceAbi; bytecode: string };
const ERC20 = new Interface([
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
]);

let chain: UsdcChain;
let cg: CoinGeckoEmulator;
let app: TestApp;
let owner: Wallet;
let account: Contract;
let accountAddress: string;
let ownerKey: string;
let bot: string;
let signer: string;
const bob = Wallet.createRandom().address;
const stranger = Wallet.createRandom().address;
const evil = Wallet.createRandom().address;
const router = Wallet.createRandom().address;

const policy = () => ({
  chains: ['base'],
  address_sets: { payees: [bob], blocked: [evil], routers: [router] },
  rules: [
    { id: 'pay-payees', effect: 'allow', match: { kinds: ['transaction'], to: [USDC_BASE], recipients: ['$payees'] } },
    { id: 'usdc-approvals', effect: 'allow', match: { to: [USDC_BASE], selectors: ['0x095ea7b3'] } },
    { id: 'router-permits', effect: 'allow', match: { kinds: ['typed_data'], spenders: ['$routers'] } },
    { id: 'declared-small', effect: 'allow', match: { kinds: ['declared'], max_usd: 50 } },
    { id: 'no-evil', effect: 'block', match: { spenders: ['$blocked'] } },
  ],
  approvals: { max_permit_lifetime_s: 3600 },
  limits: [{ id: 'daily', window: 'day', max_usd: 1000 }],
});

t.before(async () => {
  [chain, cg] = await Promise.all([startUsdcChain(), startCoinGecko()]);
  cg.setPrice('usd-coin', 'usd', 0.9999);
  cg.setTokenPrice('base', USDC_BASE, 1);
  app = await startTestApp({
    BILLING: 'on',
    FREE_TIER_MONTHLY_LIMIT: '1000',
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    REQUEST_DEADLINE_MS: '3000',
    HEAD_STALE_SECONDS: '86400',
    POLICY_RELEASE_INTERVAL_MS: '500',
  });
  signer = ((await (await fetch(`${app.url}/v1/capabilities`)).json()) as any).attestation.signer;
  owner = await chain.wallet(1_000_000_000n, 10n ** 20n);
  const deployed = await new ContractFactory(ARTIFACT.abi, ARTIFACT.bytecode, owner).deploy(
    owner.address,
    signer,
    `0x${'00'.repeat(32)}`,
  );
  await deployed.waitForDeployment();
  accountAddress = await deployed.getAddress();
  account = new Contract(accountAddress, ARTIFACT.abi, owner);
  await (await chain.usdc.mint(accountAddress, 10_000_000_000n)).wait();
  await chain.provider.send('anvil_setBalance', [accountAddress, '0xde0b6b3a7640000']);
  ownerKey = await signup(app.url);
  const put = await call(app.url, 'PUT', '/v1/policies/payments', ownerKey, policy());
  if (put.status !== 201) throw new Error(JSON.stringify(put.body));
  bot = (await agentKey(app.url, ownerKey, 'payments agent', 'payments')).key;
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([chain?.close(), cg?.close()]);
});

const usdc = (n: number) => BigInt(Math.round(n * 1e6));
const tx = (data: string, to = USDC_BASE) => ({ from: accountAddress, to, value: '0', data });
const transferTx = (to: string, amount: number) => tx(ERC20.encodeFunctionData('transfer', [to, usdc(amount)]));

async function guard(body: Record<string, unknown>, key = bot) {
  const r = await call(app.url, 'POST', '/v1/guard', key, { action: 'transfer', chain: 'base', ...body });
  if (r.status !== 200) throw new Error(`guard answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}
/** The message as PreflightAccount takes it, in the order of the v2 Verdict type. */
const tuple = (a: any): unknown[] => {
  const m = a.typed_data.message;
  return [m.id, m.verdict, m.risk, m.confidenceBps, m.requestHash, m.actionHash, m.policyHash, m.issuedAt, m.expiresAt];
};
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const policyOf = (b: any) => b.evidence.find((e: any) => e.name === 'policy');
const codes = (b: any) => policyOf(b).observed.violations.map((v: any) => v.code);

t.test('a USDC transfer to a listed payee proceeds under the policy', async (t) => {
  const b = await guard({ amount_usd: 10, transaction: transferTx(bob, 10) });
  t.equal(b.verdict, 'proceed', JSON.stringify(b.checks));
  t.equal(policyOf(b).status, 'pass');
  t.equal(policyOf(b).observed.matched_rule, 'pay-payees');
  t.same(Object.keys(b.decision.policy).sort(), ['hash', 'name', 'version']);
  t.equal(b.decision.policy.name, 'payments');
  t.equal(b.checks.policy, 'pass');
  t.ok(b.attestation, 'signed');
  t.equal(b.evidence[b.evidence.length - 1].name, 'policy', 'the policy item comes after the plan checks');
  const n = b.evidence.length;
  const c = b.decision.counts;
  t.equal(c.pass + c.warn + c.fail + c.error + c.skipped, n, 'decision.counts counts the policy item too');
  t.match(
    b.decision.summary,
    new RegExp(`^Proceed: of ${n} checks, ${c.pass} passed, 0 warned, 0 failed`),
    'so does the summary',
  );
});

t.test('the same transfer to an unlisted address blocks with policy_no_rule_matched, strict or not', async (t) => {
  for (const strict of [true, false]) {
    const b = await guard({ amount_usd: 10, strict_mode: strict, transaction: transferTx(stranger, 10) });
    t.equal(b.verdict, 'block', `strict_mode ${strict}`);
    t.equal(policyOf(b).reason, 'policy_no_rule_matched');
    t.ok(b.failure_modes.includes('policy:policy_no_rule_matched'));
    // The summary counts what the evidence holds, and says what blocked.
    const counted = Object.values(b.decision.counts as Record<string, number>).reduce((a, n) => a + n, 0);
    t.equal(counted, b.evidence.length, 'decision.counts counts every evidence item, the policy one included');
    t.equal(b.decision.counts.fail, b.evidence.filter((e: any) => e.status === 'fail').length);
    t.match(
      b.decision.summary,
      new RegExp(
        `^Block: of ${b.evidence.length} checks, .*${b.decision.counts.fail} failed.*\\. ${escapeRegExp(policyOf(b).message)}$`,
      ),
      'the summary tells the counts and the policy item that blocked',
    );
  }
});

t.test('a block rule on a spender catches an approval inside an allowed call', async (t) => {
  for (const strict of [true, false]) {
    const b = await guard({
      action: 'approve',
      amount_usd: 10,
      strict_mode: strict,
      transaction: tx(ERC20.encodeFunctionData('approve', [evil, usdc(10)])),
    });
    t.equal(b.verdict, 'block', `strict_mode ${strict}`);
    t.equal(policyOf(b).reason, 'policy_rule_blocked');
    t.equal(policyOf(b).observed.violations[0].rule, 'no-evil');
    t.equal(policyOf(b).observed.matched_rule, 'usdc-approvals', 'the call itself is allowed');
  }
});

t.test('a chain outside chains, an unlimited approval and a long-lived permit each give their reason', async (t) => {
  for (const strict of [true, false]) {
    const other = await guard({ chain: 'ethereum', amount_usd: 10, strict_mode: strict });
    t.equal(other.verdict, 'block');
    t.equal(codes(other)[0], 'policy_chain_not_allowed');

    const unlimited = await guard({
      action: 'approve',
      strict_mode: strict,
      transaction: tx(ERC20.encodeFunctionData('approve', [router, MaxUint256])),
    });
    t.equal(unlimited.verdict, 'block');
    t.ok(codes(unlimited).includes('policy_unlimited_approval'), JSON.stringify(codes(unlimited)));

    const now = Math.floor(Date.now() / 1000);
    const permit = await guard({
      action: 'approve',
      amount_usd: 10,
      strict_mode: strict,
      typed_data: {
        domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: USDC_BASE },
        types: {
          Permit: [
            { name: 'owner', type: 'address' },
            { name: 'spender', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'nonce', type: 'uint256' },
            { name: 'deadline', type: 'uint256' },
          ],
        },
        primaryType: 'Permit',
        message: { owner: accountAddress, spender: router, value: '10000000', nonce: 0, deadline: now + 7 * 86400 },
      },
    });
    t.equal(permit.verdict, 'block');
    t.equal(policyOf(permit).reason, 'policy_permit_lifetime_exceeds_max', JSON.stringify(codes(permit)));
    t.equal(policyOf(permit).observed.matched_rule, 'router-permits');
  }
});

t.test('a day limit of 1,000 USD: three 300 USD transfers proceed, the fourth waits to the window end', async (t) => {
  const o = await signup(app.url);
  await call(app.url, 'PUT', '/v1/policies/daily', o, policy());
  const k = (await agentKey(app.url, o, 'daily agent', 'daily')).key;
  const verdicts: string[] = [];
  for (let i = 0; i < 3; i++) {
    const b = await guard({ amount_usd: 300, transaction: transferTx(bob, 300) }, k);
    verdicts.push(b.verdict);
    t.equal(policyOf(b).observed.reserved_usd, 300);
  }
  t.same(verdicts, ['proceed', 'proceed', 'proceed']);

  const dry = await call(app.url, 'POST', '/v1/policies/daily/evaluate', k, {
    action: 'transfer',
    amount_usd: 50,
    transaction: transferTx(bob, 50),
  });
  t.equal(dry.status, 200);
  t.equal(dry.body.decision.dry_run, true);
  t.equal(dry.body.verdict, 'proceed', 'it would fit');
  t.notOk('attestation' in dry.body, 'a dry run carries no attestation');

  for (const strict of [true, false]) {
    const fourth = await guard({ amount_usd: 300, strict_mode: strict, transaction: transferTx(bob, 300) }, k);
    t.equal(fourth.verdict, 'wait', `strict_mode ${strict}`);
    t.equal(policyOf(fourth).status, 'warn');
    t.equal(policyOf(fourth).reason, 'policy_limit_exceeded');
    const d = new Date();
    const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
    t.ok(
      Math.abs(fourth.decision.retry_after_s - (end - Date.now()) / 1000) <= 3,
      `retry_after_s ${fourth.decision.retry_after_s} to the day's end`,
    );
  }
  const big = await guard({ amount_usd: 1200, transaction: transferTx(bob, 1200) }, k);
  t.equal(big.verdict, 'block');
  t.equal(policyOf(big).reason, 'policy_limit_exceeded');
  t.equal(policyOf(big).status, 'fail', 'the action alone exceeds the limit');

  const usage = await call(app.url, 'GET', '/v1/policies/daily/usage', k);
  t.equal(usage.status, 200);
  const [daily] = usage.body.limits;
  t.same(
    [daily.id, daily.window, daily.committed_usd + daily.reserved_usd, daily.remaining_usd, daily.count, daily.max_usd],
    ['daily', 'day', 900, 100, 3, 1000],
    'the usage shows the sums; the dry run, the waits and the block reserved nothing',
  );
  t.equal(new Date(daily.window_end).getTime() - new Date(daily.window_start).getTime(), 86_400_000);
});

t.test('an unexecuted proceed is released after expiry, an executed one stays committed', async (t) => {
  const o = await signup(app.url);
  await call(app.url, 'PUT', '/v1/policies/release', o, policy());
  const k = (await agentKey(app.url, o, 'release agent', 'release')).key;
  const executed = await guard({ amount_usd: 100, transaction: transferTx(bob, 100) }, k);
  const unexecuted = await guard({ amount_usd: 200, transaction: transferTx(bob, 200) }, k);
  t.equal(executed.verdict, 'proceed');
  t.equal(unexecuted.verdict, 'proceed');
  const a = executed.attestation;
  const m = a.typed_data.message;
  const call1 = transferTx(bob, 100);
  const v = tuple(a);
  await (await account.execute(call1.to, 0n, call1.data, v, a.signature)).wait();
  t.equal(await account.used(m.id), true);

  const expiry = Math.max(Number(m.expiresAt), Number(unexecuted.attestation.typed_data.message.expiresAt)) * 1000;
  const usage = async () => (await call(app.url, 'GET', '/v1/policies/release/usage', o)).body.limits[0];
  t.same([(await usage()).reserved_usd, (await usage()).count], [300, 2], 'both reserved before expiry');
  const deadline = expiry + 60_000;
  let u = await usage();
  while (u.reserved_usd > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    u = await usage();
  }
  t.ok(Date.now() < deadline, `settled ${Math.round((Date.now() - expiry) / 1000)} s after expiry`);
  t.same(
    [u.reserved_usd, u.committed_usd, u.count],
    [0, 100, 1],
    'the unexecuted 200 released, the executed 100 committed',
  );
  // The verdict log follows each reservation; what was reserved stays on the row (docs/policies.md §10).
  const log = (await call(app.url, 'GET', '/v1/verdicts', o)).body.verdicts;
  t.same(
    log.map((r: any) => [r.id, r.reserved_usd, r.reservation]),
    [
      [unexecuted.attestation.typed_data.message.id, 200, 'released'],
      [m.id, 100, 'committed'],
    ],
    'the verdict log shows the release and the commit',
  );
});

t.test(
  '30 concurrent 100 USD transfers in one process on SQLite: exactly 10 proceed, 1,000 USD reserved',
  async (t) => {
    const o = await signup(app.url);
    await call(app.url, 'PUT', '/v1/policies/race', o, policy());
    const k = (await agentKey(app.url, o, 'race agent', 'race')).key;
    const body = { action: 'transfer', chain: 'base', amount_usd: 100, transaction: transferTx(bob, 100) };
    await call(app.url, 'POST', '/v1/policies/race/evaluate', o, body);
    const answers = await Promise.all(Array.from({ length: 30 }, () => call(app.url, 'POST', '/v1/guard', k, body)));
    const verdicts = answers.map((a) => a.body.verdict);
    t.equal(verdicts.filter((v) => v === 'proceed').length, 10, JSON.stringify(verdicts));
    const [u] = (await call(app.url, 'GET', '/v1/policies/race/usage', o)).body.limits;
    t.same([u.reserved_usd + u.committed_usd, u.count], [1000, 10]);
  },
);

t.test('an account pinned to the policy executes its proceed and refuses one from a key with no policy', async (t) => {
  const hash = (await call(app.url, 'GET', '/v1/policies/payments', ownerKey)).body.hash as Hex;
  const factory = new ContractFactory(ARTIFACT.abi, ARTIFACT.bytecode, owner);
  const deployed = await factory.deploy(owner.address, signer, hash);
  await deployed.waitForDeployment();
  const pinnedAddress = await deployed.getAddress();
  const pinned = new Contract(pinnedAddress, ARTIFACT.abi, owner);
  await (await chain.usdc.mint(pinnedAddress, 1_000_000_000n)).wait();
  const call1 = {
    from: pinnedAddress,
    to: USDC_BASE,
    value: '0',
    data: ERC20.encodeFunctionData('transfer', [bob, usdc(5)]),
  };

  const bound = await guard({ amount_usd: 5, transaction: call1 });
  t.equal(bound.verdict, 'proceed');
  const free = await guard({ amount_usd: 5, transaction: call1 }, await signup(app.url));
  t.equal(free.verdict, 'proceed', 'a fresh key with no policy gets a proceed too');
  t.notOk(free.decision.policy, 'answered under no policy');
  t.equal(bound.attestation.typed_data.message.policyHash, hash, "the bound key's verdict signs the policy's hash");
  t.equal(free.attestation.typed_data.message.policyHash, `0x${'00'.repeat(32)}`);
  for (const a of [bound.attestation, free.attestation]) {
    t.ok(
      await verifyTypedData({ address: signer as Hex, ...(a.typed_data as any), signature: a.signature }),
      'viem recovers the signer',
    );
    const td = a.typed_data;
    const { EIP712Domain: _d, ...types } = td.types;
    t.equal(ethersVerifyTypedData(td.domain, types, td.message, a.signature), signer, 'ethers recovers the signer');
  }

  // The bypass a misled agent would try: its answer is refused by the account.
  let reverted: string | null = null;
  try {
    await pinned.execute.staticCall(call1.to, 0n, call1.data, tuple(free.attestation), free.attestation.signature);
  } catch (err) {
    const data = (err as { data?: string }).data as Hex;
    reverted = decodeErrorResult({
      abi: parseAbi(['error PolicyMismatch(bytes32 expected, bytes32 signed)']),
      data,
    }).errorName;
  }
  t.equal(reverted, 'PolicyMismatch');
  const before = await chain.balanceOf(bob);
  await (await pinned.execute(call1.to, 0n, call1.data, tuple(bound.attestation), bound.attestation.signature)).wait();
  t.equal(await chain.balanceOf(bob), before + usdc(5), "the bound key's proceed executes");
});
