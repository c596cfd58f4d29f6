/**
 * Policies across a fleet: three real service processes on one PostgreSQL (a schema of this
 * test's own) and one anvil Base with Circle's USDC. 30 concurrent 100 USD transfers spread over
 * the three under a 1,000 USD day limit: exactly 10 proceed and exactly 1,000 USD is reserved. An
 * agent key revoked on one instance is refused by every instance within 5 s, and a key's new
 * policy binding is honoured by all of them within the same time.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { Interface } from 'ethers';
import pg from 'pg';
import { spawnService, type ServiceProcess } from '../helpers/spawn.js';
import { requireServer } from '../helpers/servers.js';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { USDC_BASE } from '../../src/billing/x402/constants.js';
import { agentKey, call, signup } from './helpers.js';

const PG_URL = process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ERC20 = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);

const pgProblem = await requireServer('PostgreSQL', PG_URL, async () => {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  await c.connect();
  await c.end();
});

if (pgProblem === null) {
  const schema = `pf_policy_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const dbUrl = new URL(PG_URL);
  dbUrl.searchParams.set('options', `-c search_path=${schema}`);
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  let chain: UsdcChain;
  let cg: CoinGeckoEmulator;
  const fleet: ServiceProcess[] = [];
  t.before(async () => {
    [chain, cg] = await Promise.all([startUsdcChain(), startCoinGecko()]);
    cg.setPrice('usd-coin', 'usd', 0.9999);
    cg.setTokenPrice('base', USDC_BASE, 1);
    const env = {
      DATABASE_URL: dbUrl.toString(),
      BILLING: 'on',
      FREE_TIER_MONTHLY_LIMIT: '10000',
      POOL_THREADS: '1',
      PRICE_API_URL: cg.url,
      RPC_URLS: `base=${chain.rpcUrl}`,
      REQUEST_DEADLINE_MS: '5000',
      HEAD_STALE_SECONDS: '86400',
    };
    // One first, so the schema is migrated once; then the others.
    fleet.push(await spawnService(env, 30_000));
    fleet.push(...(await Promise.all([spawnService(env, 30_000), spawnService(env, 30_000)])));
  });
  t.teardown(async () => {
    for (const s of fleet) s.child.kill('SIGTERM');
    await Promise.all(fleet.map((s) => s.exited));
    await Promise.all([chain?.close(), cg?.close()]);
  });

  const policy = (payee: string) => ({
    address_sets: { payees: [payee] },
    rules: [{ id: 'payees', effect: 'allow', match: { to: [USDC_BASE], recipients: ['$payees'] } }],
    limits: [{ id: 'daily', window: 'day', max_usd: 1000 }],
  });

  t.test('30 concurrent 100 USD transfers over three instances: exactly 10 proceed, 1,000 USD reserved', async (t) => {
    const payer = await chain.wallet(10_000_000_000n, 10n ** 18n);
    const payee = (await chain.wallet()).address;
    const owner = await signup(fleet[0].url);
    t.equal((await call(fleet[0].url, 'PUT', '/v1/policies/race', owner, policy(payee))).status, 201);
    const bot = (await agentKey(fleet[0].url, owner, 'racer', 'race')).key;
    const body = {
      action: 'transfer',
      chain: 'base',
      amount_usd: 100,
      transaction: {
        from: payer.address,
        to: USDC_BASE,
        data: ERC20.encodeFunctionData('transfer', [payee, 100_000_000n]),
      },
    };
    // Warm each instance's simulation cache, so the race is between reservations.
    for (const s of fleet) await call(s.url, 'POST', '/v1/policies/race/evaluate', owner, body);
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call(fleet[i % 3].url, 'POST', '/v1/guard', bot, body)),
    );
    t.same(
      answers.map((a) => a.status),
      Array(30).fill(200),
    );
    const verdicts = answers.map((a) => a.body.verdict);
    t.equal(verdicts.filter((v) => v === 'proceed').length, 10, JSON.stringify(verdicts));
    t.equal(verdicts.filter((v) => v === 'wait').length, 20, 'the rest wait for the window');
    const reserved = answers
      .map((a) => a.body.evidence.find((e: any) => e.name === 'policy').observed.reserved_usd ?? 0)
      .reduce((s: number, x: number) => s + x, 0);
    t.equal(reserved, 1000);
    for (const s of fleet) {
      const [u] = (await call(s.url, 'GET', '/v1/policies/race/usage', owner)).body.limits;
      t.same([u.reserved_usd + u.committed_usd, u.count, u.remaining_usd], [1000, 10, 0], `usage as ${s.url} reads it`);
    }
  });

  t.test('an agent key revoked on one instance is refused by every instance within 5 s', async (t) => {
    const owner = await signup(fleet[0].url);
    await call(fleet[0].url, 'PUT', '/v1/policies/p', owner, {});
    const bot = await agentKey(fleet[0].url, owner, 'doomed', 'p');
    const guard = (s: ServiceProcess) => call(s.url, 'POST', '/v1/guard', bot.key, { action: 'swap' });
    // Every instance has the key in its cache now.
    for (const s of fleet) t.equal((await guard(s)).status, 200);
    for (const s of fleet) t.equal((await call(s.url, 'POST', '/v1/keys', bot.key, { name: 'x' })).status, 403);
    const revokedAt = Date.now();
    t.equal((await call(fleet[1].url, 'DELETE', `/v1/keys/${bot.id}`, owner)).status, 204);
    t.equal((await guard(fleet[1])).status, 401, 'the answering instance at once');
    const refusedAfter = await Promise.all(
      fleet.map(async (s) => {
        while ((await guard(s)).status !== 401) {
          if (Date.now() - revokedAt > 10_000) return Number.POSITIVE_INFINITY;
          await new Promise((r) => setTimeout(r, 100));
        }
        return Date.now() - revokedAt;
      }),
    );
    for (const ms of refusedAfter) t.ok(ms <= 5_500, `refused ${ms} ms after the revocation`);
  });
}
