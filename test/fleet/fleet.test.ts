/**
 * A fleet of real service processes on one PostgreSQL and one Redis (REDIS_URL): a result one
 * instance computed is `cached: true` on the others with one upstream request in all; identical
 * cold checks sent to three instances at once make one upstream request; a corrupt or foreign
 * value under a cache key is never served. Redis is the machine's (its own database number) and
 * PostgreSQL the machine's, each in a schema or database of this test's own.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { spawnService, type ServiceProcess } from '../helpers/spawn.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { requireServer } from '../helpers/servers.js';

const REDIS_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379/10';
const PG_URL = process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const redisProblem = await requireServer('Redis', REDIS_URL, async () => {
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
  try {
    await r.connect();
    await r.ping();
  } finally {
    r.disconnect();
  }
});
const pgProblem = await requireServer('PostgreSQL', PG_URL, async () => {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  await c.connect();
  await c.end();
});

if (redisProblem === null && pgProblem === null) {
  const redis = new Redis(REDIS_URL);
  await redis.flushdb();
  t.teardown(() => redis.quit());

  // A database of our own, so the instances share one ledger and nothing else's.
  const dbName = `preflight_fleet_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = PG_URL.replace(/\/[^/]*$/, `/${dbName}`);
  t.teardown(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  });

  const cg: CoinGeckoEmulator = await startCoinGecko();
  t.teardown(() => cg.close());

  const env = {
    DATABASE_URL: dbUrl,
    REDIS_URL,
    BILLING: 'off',
    POOL_THREADS: '1',
    PRICE_API_URL: cg.url,
    REQUEST_DEADLINE_MS: '3000',
    // Generous for a loaded test machine: this file is about sharing, not about a slow Redis.
    REDIS_TIMEOUT_MS: '1000',
  };
  const fleet: ServiceProcess[] = [];
  // One first, so the schema is migrated once; then the others.
  fleet.push(await spawnService(env));
  fleet.push(...(await Promise.all([spawnService(env), spawnService(env)])));
  t.teardown(async () => {
    for (const s of fleet) s.child.kill('SIGTERM');
    await Promise.all(fleet.map((s) => s.exited));
  });

  // The port opens before the service is loaded; its /health names the fleet cache once it is.
  for (const svc of fleet) {
    for (let i = 0; i < 300; i++) {
      const h = (await (await fetch(`${svc.url}/health`)).json()) as { shared_cache?: string };
      if (h.shared_cache === 'ok') break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const decide = async (svc: ServiceProcess, asset: string) => {
    const res = await fetch(`${svc.url}/v1/decide`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ goal: 'fleet', checks: [{ type: 'price', asset_id: asset }] }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json()) as { evidence: Array<{ status: string; cached: boolean; observed: unknown }> };
    return { status: res.status, evidence: body.evidence[0] };
  };

  t.test('a check one instance answered is cached on the others, one upstream request in all', async (t) => {
    cg.setPrice('fleet-one', 'usd', 1234.5);
    cg.resetStats();
    const first = await decide(fleet[0], 'fleet-one');
    t.equal(first.status, 200);
    t.equal(first.evidence.status, 'pass');
    t.equal(first.evidence.cached, false, 'computed by the first instance');
    for (const [i, svc] of [fleet[1], fleet[2]].entries()) {
      const other = await decide(svc, 'fleet-one');
      t.equal(other.evidence.cached, true, `instance ${i + 2} answers from the fleet cache`);
      t.same(other.evidence.observed, first.evidence.observed, 'the same observation');
    }
    t.equal(cg.stats.requests, 1, 'one upstream request for three answers');
  });

  t.test('identical cold checks sent to three instances at once make one upstream request', async (t) => {
    cg.setPrice('fleet-cold', 'usd', 99);
    cg.resetStats();
    cg.faultOn('/simple/price', { delayMs: 400 });
    t.teardown(() => cg.faultOn('/simple/price', null));
    const started = performance.now();
    const answers = await Promise.all(fleet.map((svc) => decide(svc, 'fleet-cold')));
    const took = performance.now() - started;
    t.same(
      answers.map((a) => [a.status, a.evidence.status]),
      [
        [200, 'pass'],
        [200, 'pass'],
        [200, 'pass'],
      ],
      'all three answered from the one call',
    );
    if (cg.stats.requests !== 1) {
      for (const svc of fleet) {
        const m = await (await fetch(`${svc.url}/metrics`)).text();
        t.comment(
          m
            .split('\n')
            .filter((l) => l.startsWith('preflight_shared') || l.startsWith('preflight_cache'))
            .join('\n'),
        );
      }
    }
    t.equal(cg.stats.requests, 1, 'one upstream request');
    t.ok(took < 3000, `all three within the 3000 ms deadline (${Math.round(took)} ms)`);
    t.equal(answers.filter((a) => a.evidence.cached).length, 2, 'two of them from the fleet cache');
  });

  t.test('a corrupt or foreign value under a cache key is ignored, never served', async (t) => {
    /**
     * The Redis key holding the result for `asset`, found by its content. The instance writes it
     * after it answers, so it is looked for during up to 2 s.
     */
    const keyOf = async (asset: string): Promise<string | null> => {
      for (const until = Date.now() + 2000; ; ) {
        for (const k of await redis.keys('preflight:v1:r:*')) {
          if ((await redis.get(k))?.includes(asset)) return k;
        }
        if (Date.now() > until) return null;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const variants: Array<[string, (stored: Record<string, unknown>) => string]> = [
      ['not JSON', () => 'not json at all'],
      ['another format version', (v) => JSON.stringify({ ...v, f: 99 })],
      ['stored for another key', (v) => JSON.stringify({ ...v, k: 'price:{"asset_id":"bitcoin","type":"price"}' })],
      ['a status no check has', (v) => JSON.stringify({ ...v, o: { ...(v.o as object), status: 'proceed' } })],
      ['no outcome', (v) => JSON.stringify({ ...v, o: null })],
      ['an array', () => JSON.stringify([1, 2, 3])],
    ];
    for (const [i, [name, spoil]] of variants.entries()) {
      const asset = `fleet-bad-${i}`;
      cg.setPrice(asset, 'usd', 7 + i);
      const computed = await decide(fleet[0], asset);
      const key = await keyOf(asset);
      t.ok(key, `${name}: the result is in Redis under a preflight key`);
      if (key === null) continue;
      t.match(key, /^preflight:v1:r:[A-Za-z0-9_-]{43}$/);
      const stored = JSON.parse((await redis.get(key)) as string) as Record<string, unknown>;
      // Something else writes a value that claims to be a price, but not for this check: keep its status.
      const spoiled = spoil(stored).replace(`${7 + i}`, '123456');
      await redis.set(key, spoiled, 'PX', 60_000);
      const before = cg.stats.requests;
      const got = await decide(fleet[1], asset);
      t.equal(got.evidence.cached, false, `${name}: not served from Redis`);
      t.equal(
        (got.evidence.observed as { price: number }).price,
        (computed.evidence.observed as { price: number }).price,
        `${name}: the real price`,
      );
      t.equal(cg.stats.requests, before + 1, `${name}: asked upstream instead`);
    }
  });
}
