/**
 * The fleet measurement (docs/fleet.md): three service processes on one PostgreSQL database and
 * one Redis. Every distinct check is asked of all three instances at once (the cold single
 * flight), then of each again (the shared cache); the figure is upstream requests per distinct
 * check across the fleet, target 1.0. Needs the machine's PostgreSQL and Redis; without them it
 * is reported as not run.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { startServerChild, type Child } from './child.js';
import { serviceEnv } from './session.js';
import { COLD_KEYS, type Upstreams } from './upstreams.js';

export const FLEET_SIZE = 3;
/** Distinct checks asked; fresh price assets from the top of the cold range, below the probe key. */
const DISTINCT = 40;
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const FLEET_REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/12';

export interface FleetResult {
  instances: number;
  distinctChecks: number;
  answers: number;
  upstreamRequests: number;
  perCheck: number;
  non200: number;
}

export async function measureFleet(upstreams: Upstreams): Promise<FleetResult | { skipped: string }> {
  const redis = new Redis(FLEET_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
  const admin = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await redis.connect();
    await admin.connect();
  } catch (err) {
    redis.disconnect();
    await admin.end().catch(() => undefined);
    return { skipped: `PostgreSQL (${PG_URL}) and Redis (${FLEET_REDIS_URL}) are needed: ${(err as Error).message}` };
  }
  const db = `preflight_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${db}`);
  await redis.flushdb();
  const fleet: Child[] = [];
  try {
    const env = serviceEnv(upstreams, null, {
      DATABASE_URL: PG_URL.replace(/\/[^/]*$/, `/${db}`),
      REDIS_URL: FLEET_REDIS_URL,
      BILLING: 'off',
      // Each upstream answers in the bench's latency; a cold check has time to be shared.
      REQUEST_DEADLINE_MS: String(Math.max(1000, upstreams.latencyMs * 10)),
    });
    fleet.push(await startServerChild('./service.js', env));
    fleet.push(...(await Promise.all([startServerChild('./service.js', env), startServerChild('./service.js', env)])));
    const ask = async (child: Child, n: number): Promise<number> => {
      const res = await fetch(`${child.url}/v1/decide`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ goal: 'fleet', checks: [{ type: 'price', asset_id: `bench-${n}`, min_price: 1 }] }),
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer();
      return res.status;
    };
    const before = upstreams.counts().price_provider;
    const statuses: number[] = [];
    for (let i = 0; i < DISTINCT; i++) {
      const n = COLD_KEYS - 2 - i;
      statuses.push(...(await Promise.all(fleet.map((c) => ask(c, n)))));
      for (const c of fleet) statuses.push(await ask(c, n));
    }
    const upstreamRequests = upstreams.counts().price_provider - before;
    return {
      instances: fleet.length,
      distinctChecks: DISTINCT,
      answers: statuses.length,
      upstreamRequests,
      perCheck: Math.round((upstreamRequests / DISTINCT) * 100) / 100,
      non200: statuses.filter((s) => s !== 200).length,
    };
  } finally {
    await Promise.all(fleet.map((c) => c.stop()));
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    redis.disconnect();
  }
}
