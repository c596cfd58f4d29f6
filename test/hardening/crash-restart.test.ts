/**
 * kill -9 under keyed load, then a restart on the same database: every key that was issued
 * (a 200 with a key) still works, and every call that was answered 2xx is in its key's usage
 * count, which holds no more than the calls still in flight at the kill on top. Run on SQLite,
 * and on PostgreSQL when it is reachable (required when CI=true).
 */
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { spawnService, type ServiceProcess, untilReady } from '../helpers/spawn.js';

const CLIENTS = 10;
/** Load runs at least MIN_LOAD_MS and until MIN_SERVED keyed calls were answered (at most MAX_LOAD_MS). */
const MIN_LOAD_MS = 1000;
const MAX_LOAD_MS = 20_000;
const MIN_SERVED = 60;
const DECIDES_PER_KEY = 5;
const LIMIT = 1_000_000_000;

interface Key {
  key: string;
  served: number;
  inflight: number;
  inflightAtKill: number;
}

const env = (databaseUrl: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  BILLING: 'on',
  POOL_THREADS: '2',
  SIGNUPS_PER_HOUR: '1000000',
  FREE_TIER_MONTHLY_LIMIT: String(LIMIT),
});

function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
}

const decideBody = (n: number) => ({
  goal: 'crash test',
  checks: [{ type: 'approval_amount', amount: String(n), spender: '0x1111111111111111111111111111111111111111' }],
});

/** CLIENTS loops of: sign up, then DECIDES_PER_KEY keyed decides; until `stopped()`. */
async function load(
  svc: ServiceProcess,
  keys: Key[],
  stopped: () => boolean,
): Promise<{ signups: number; refusedAfterKill: number }> {
  let n = 0;
  let signups = 0;
  let refusedAfterKill = 0;
  const client = async (c: number): Promise<void> => {
    while (!stopped()) {
      let issued: string | null = null;
      try {
        const r = await postJson(`${svc.url}/v1/api-keys/signup`, {
          email: `load-${c}-${n++}-${randomBytes(3).toString('hex')}@example.com`,
        });
        const body = (await r.json()) as { api_key?: string | null };
        if (r.status === 200 && typeof body.api_key === 'string') issued = body.api_key;
        signups++;
      } catch {
        refusedAfterKill++;
        return;
      }
      if (issued === null) continue;
      const k: Key = { key: issued, served: 0, inflight: 0, inflightAtKill: 0 };
      keys.push(k);
      for (let i = 0; i < DECIDES_PER_KEY && !stopped(); i++) {
        k.inflight++;
        try {
          const r = await postJson(`${svc.url}/v1/decide`, decideBody(n++), { 'x-api-key': issued });
          await r.arrayBuffer();
          if (r.status >= 200 && r.status < 300) k.served++;
        } catch {
          refusedAfterKill++;
        } finally {
          k.inflight--;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  return { signups, refusedAfterKill };
}

async function crashAndRestart(t: Test, databaseUrl: string): Promise<void> {
  const first = await spawnService(env(databaseUrl));
  t.teardown(() => void first.child.kill('SIGKILL'));
  const keys: Key[] = [];
  let killed = false;
  const running = load(first, keys, () => killed);
  const started = performance.now();
  const servedSoFar = () => keys.reduce((s, k) => s + k.served, 0);
  while (
    performance.now() - started < MAX_LOAD_MS &&
    (performance.now() - started < MIN_LOAD_MS || servedSoFar() < MIN_SERVED)
  ) {
    await new Promise((r) => setTimeout(r, 20));
  }
  // The snapshot and the kill in one synchronous step: nothing is answered in between.
  for (const k of keys) k.inflightAtKill = k.inflight;
  first.child.kill('SIGKILL');
  killed = true;
  t.match(await first.exited, { signal: 'SIGKILL' }, 'killed with -9');
  const stats = await running;
  const served = keys.reduce((s, k) => s + k.served, 0);
  const inflight = keys.reduce((s, k) => s + k.inflightAtKill, 0);
  t.comment(
    `${keys.length} keys issued, ${served} keyed calls served, ${inflight} keyed calls in flight at the kill, ${stats.signups} signups answered`,
  );
  t.ok(keys.length >= CLIENTS && served >= MIN_SERVED, 'the service was under load when it died');

  const second = await spawnService(env(databaseUrl));
  t.teardown(() => void second.child.kill('SIGKILL'));
  // Calls wait for the warm-up; on a host the rest of the suite loads, it alone has taken longer
  // than a call's 10 s bound. The keys are tried once the restarted service says it is ready.
  await untilReady(second.url, 60_000);
  const broken: string[] = [];
  const miscounted: string[] = [];
  for (let i = 0; i < keys.length; i += CLIENTS) {
    await Promise.all(
      keys.slice(i, i + CLIENTS).map(async (k, j) => {
        const r = await postJson(`${second.url}/v1/decide`, decideBody(LIMIT + i + j), { 'x-api-key': k.key });
        await r.arrayBuffer();
        if (r.status !== 200) {
          broken.push(`${k.key.slice(0, 12)}: ${r.status}`);
          return;
        }
        // This call is counted too: the usage before it is one less.
        const before = LIMIT - Number(r.headers.get('ratelimit-remaining')) - 1;
        if (before < k.served || before > k.served + k.inflightAtKill)
          miscounted.push(`${k.key.slice(0, 12)}: usage ${before}, served ${k.served}, in flight ${k.inflightAtKill}`);
      }),
    );
  }
  t.same(broken, [], 'every issued key works after the restart');
  t.same(miscounted, [], 'served <= usage <= served + in flight at the kill, for every key');
  second.child.kill('SIGTERM');
  t.same(await second.exited, { code: 0, signal: null }, 'the restarted service stops cleanly');
}

t.test('SQLite', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'preflight-crash-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await crashAndRestart(t, `sqlite:${join(dir, 'crash.db')}`);
});

t.test('PostgreSQL', async (t) => {
  const candidates = process.env.PG_TEST_URL
    ? [process.env.PG_TEST_URL]
    : ['postgres://postgres@127.0.0.1:5432/test', 'postgres://root@127.0.0.1:5432/test'];
  let admin: pg.Client | null = null;
  let adminUrl = candidates[0];
  let problem = '';
  for (const url of candidates) {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await c.connect();
      admin = c;
      adminUrl = url;
      break;
    } catch (err) {
      problem ||= (err as Error).message;
      await c.end().catch(() => undefined);
    }
  }
  if (admin === null) {
    if (process.env.CI === 'true') t.fail(`PostgreSQL is required in CI: ${problem}`);
    else t.plan(0, `skipped: PostgreSQL at ${adminUrl} is unreachable (${problem}); set PG_TEST_URL`);
    return;
  }
  const db = admin;
  const schema = `pf_crash_${process.pid}_${randomBytes(4).toString('hex')}`;
  await db.query(`CREATE SCHEMA ${schema}`);
  t.teardown(async () => {
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await db.end();
  });
  const u = new URL(adminUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  await crashAndRestart(t, u.toString());
});
