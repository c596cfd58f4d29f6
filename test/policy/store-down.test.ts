/**
 * The database stopped mid-load: the service reaches PostgreSQL (a schema of this test's own)
 * through a TCP proxy this test kills while guards under a policy are in flight. From then on a
 * guard under the policy answers `wait` (policy_unavailable) or 503 with Retry-After, never
 * `proceed`; management calls answer 503 with Retry-After; nothing is half-written: once the
 * database is back, every proceed answered has its reservation and nothing else was reserved.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { Interface } from 'ethers';
import pg from 'pg';
import { requireServer } from '../helpers/servers.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { USDC_BASE } from '../../src/billing/x402/constants.js';
import { agentKey, call, signup } from './helpers.js';

const PG_URL = process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ERC20 = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);

/** A TCP proxy to PostgreSQL on a loopback port; `kill` closes it and cuts every connection. */
async function pgProxy(target: URL): Promise<{ port: number; kill(): void; restart(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let server: net.Server;
  const listen = (port: number) =>
    new Promise<number>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 5432), target.hostname);
        sockets.add(client);
        sockets.add(upstream);
        client.pipe(upstream).pipe(client);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
      });
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  const port = await listen(0);
  return {
    port,
    kill() {
      server.close();
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    async restart() {
      await listen(port);
    },
  };
}

const pgProblem = await requireServer('PostgreSQL', PG_URL, async () => {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  await c.connect();
  await c.end();
});

if (pgProblem === null) {
  const schema = `pf_down_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  const proxy = await pgProxy(new URL(PG_URL));
  const viaProxy = new URL(PG_URL);
  viaProxy.port = String(proxy.port);
  viaProxy.searchParams.set('options', `-c search_path=${schema}`);

  let chain: UsdcChain;
  let cg: CoinGeckoEmulator;
  let app: TestApp;
  t.before(async () => {
    [chain, cg] = await Promise.all([startUsdcChain(), startCoinGecko()]);
    cg.setPrice('usd-coin', 'usd', 0.9999);
    cg.setTokenPrice('base', USDC_BASE, 1);
    app = await startTestApp({
      BILLING: 'on',
      FREE_TIER_MONTHLY_LIMIT: '100000',
      DATABASE_URL: viaProxy.toString(),
      PRICE_API_URL: cg.url,
      RPC_URLS: `base=${chain.rpcUrl}`,
      REQUEST_DEADLINE_MS: '3000',
      HEAD_STALE_SECONDS: '86400',
    });
  });
  t.teardown(async () => {
    await app?.close();
    proxy.kill();
    await Promise.all([chain?.close(), cg?.close()]);
  });

  t.test('guards under a policy never proceed while the database is gone; management answers 503', async (t) => {
    const payer = await chain.wallet(10_000_000_000n, 10n ** 18n);
    const payee = (await chain.wallet()).address;
    const owner = await signup(app.url);
    const doc = {
      address_sets: { payees: [payee] },
      rules: [{ id: 'payees', effect: 'allow', match: { to: [USDC_BASE], recipients: ['$payees'] } }],
      limits: [{ id: 'daily', window: 'day', max_usd: 1_000_000 }],
    };
    t.equal((await call(app.url, 'PUT', '/v1/policies/p', owner, doc)).status, 201);
    const bot = (await agentKey(app.url, owner, 'loaded', 'p')).key;
    const body = {
      action: 'transfer',
      chain: 'base',
      amount_usd: 1,
      transaction: {
        from: payer.address,
        to: USDC_BASE,
        data: ERC20.encodeFunctionData('transfer', [payee, 1_000_000n]),
      },
    };
    const first = await call(app.url, 'POST', '/v1/guard', bot, body);
    t.equal(first.body.verdict, 'proceed', 'with the database up, the transfer proceeds');

    let killedAt = Number.POSITIVE_INFINITY;
    const answers: Array<{
      started: number;
      status: number;
      verdict?: string;
      modes?: string[];
      retry: string | null;
    }> = [];
    let stop = false;
    const loop = async () => {
      while (!stop) {
        const started = Date.now();
        const r = await call(app.url, 'POST', '/v1/guard', bot, body);
        answers.push({
          started,
          status: r.status,
          verdict: r.body?.verdict,
          modes: r.body?.failure_modes,
          retry: r.headers.get('retry-after'),
        });
      }
    };
    const loops = Array.from({ length: 6 }, loop);
    await new Promise((r) => setTimeout(r, 800));
    killedAt = Date.now();
    proxy.kill();
    await new Promise((r) => setTimeout(r, 2500));

    const mgmt = await Promise.all([
      call(app.url, 'GET', '/v1/keys', owner),
      call(app.url, 'PUT', '/v1/policies/p', owner, { ...doc, default: 'block' }),
      call(app.url, 'GET', '/v1/policies/p/usage', owner),
      call(app.url, 'POST', '/v1/keys', owner, { name: 'during' }),
    ]);
    for (const m of mgmt) {
      t.equal(m.status, 503, JSON.stringify(m.body));
      t.ok(Number(m.headers.get('retry-after')) > 0, 'with Retry-After');
    }
    await new Promise((r) => setTimeout(r, 5000));
    // Once the key cache has lapsed too, the key itself cannot be checked: 503.
    t.equal((await call(app.url, 'POST', '/v1/guard', bot, body)).status, 503);
    stop = true;
    await Promise.all(loops);

    const before = answers.filter((a) => a.started < killedAt - 200);
    const after = answers.filter((a) => a.started > killedAt + 50);
    t.ok(
      before.some((a) => a.verdict === 'proceed'),
      `proceeds before the kill (${before.length} answers)`,
    );
    t.ok(after.length > 5, `${after.length} answers after the kill`);
    t.same(
      after.filter((a) => a.verdict === 'proceed'),
      [],
      'no proceed once the database is gone',
    );
    const unexpected = after.filter((a) =>
      a.status === 503
        ? a.retry === null
        : a.status !== 200 || a.verdict !== 'wait' || !a.modes?.includes('policy:policy_unavailable'),
    );
    t.same(unexpected.slice(0, 5), [], 'each a wait (policy_unavailable) or a 503 with Retry-After');
    t.ok(
      after.some((a) => a.status === 200 && a.verdict === 'wait'),
      'a guard under a policy answers wait while its key is still known',
    );

    await proxy.restart();
    // Back up: the store answers again, and what was reserved is exactly what was answered proceed.
    const proceeds = answers.filter((a) => a.verdict === 'proceed').length + 1;
    let usage = await call(app.url, 'GET', '/v1/policies/p/usage', owner);
    for (let i = 0; usage.status !== 200 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 200));
      usage = await call(app.url, 'GET', '/v1/policies/p/usage', owner);
    }
    t.equal(usage.status, 200, 'management answers again');
    t.equal(usage.body.limits[0].count, proceeds, 'one reservation per proceed, none half-written');
    t.equal(usage.body.version, 1, 'the PUT that met the outage made no version');
    const keys = (await call(app.url, 'GET', '/v1/keys', owner)).body.keys.map((k: any) => k.name);
    t.same(keys, ['owner', 'loaded'], 'the POST that met the outage made no key');
  });
}
