/**
 * Policies in the bench (docs/policies.md): the 20-rule, two-limit policy the `guard-policy`
 * scenarios answer under, a PostgreSQL database of the bench's own for the `-pg` scenarios, and
 * the reservation's own cost, measured on the store directly (SQLite and PostgreSQL) at p50 and p99.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore } from '../src/store/index.js';
import type { LimitWindow, Store } from '../src/store/types.js';
import { PAIR } from './upstreams.js';
import { limitWindows } from '../src/policy/windows.js';

export const BENCH_PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const addr = (i: number): string => `0x${(0xbe00 + i).toString(16).padStart(40, '0')}`;

/**
 * Twenty rules, the one that covers the bench's guard (a declared swap on Base) last, and two
 * limits far above what a run can reach, so every answer reserves and none waits.
 */
export function benchPolicy(): Record<string, unknown> {
  const rules: Array<Record<string, unknown>> = [];
  for (let i = 0; i < 10; i++)
    rules.push({ id: `block-spender-${i}`, effect: 'block', match: { spenders: ['$denied'], chains: ['base'] } });
  for (let i = 0; i < 9; i++)
    rules.push({
      id: `pay-${i}`,
      effect: 'allow',
      match: { kinds: ['transaction'], recipients: ['$payees'], max_usd: 1000 },
    });
  rules.push({
    id: 'swaps',
    effect: 'allow',
    match: { kinds: ['declared'], actions: ['swap'], chains: ['base'], max_usd: 1e9 },
  });
  return {
    chains: ['base', 'ethereum'],
    address_sets: {
      payees: Array.from({ length: 200 }, (_, i) => addr(i)),
      denied: Array.from({ length: 200 }, (_, i) => addr(1000 + i)),
      pairs: [PAIR],
    },
    rules,
    approvals: { max_usd: 100000, max_permit_lifetime_s: 86400 },
    limits: [
      { id: 'daily', window: 'day', max_usd: 1e15 },
      { id: 'hourly-count', window: 'hour', max_count: 1e15 },
    ],
  };
}

/** An agent key of the owner's account bound to the bench policy, or null when the service refused. */
export async function policyKey(url: string, ownerKey: string): Promise<string | null> {
  const send = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-api-key': ownerKey },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as { api_key?: string } | null };
  };
  const put = await send('PUT', '/v1/policies/bench', benchPolicy());
  if (put.status !== 201 && put.status !== 200) return null;
  const key = await send('POST', '/v1/keys', { name: `bench ${randomUUID().slice(0, 8)}`, policy: 'bench' });
  return key.status === 201 && typeof key.body?.api_key === 'string' ? key.body.api_key : null;
}

/** A fresh PostgreSQL database for one scenario's service; `drop` removes it. */
export async function benchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = new pg.Client({ connectionString: BENCH_PG_URL, connectionTimeoutMillis: 2000 });
  await admin.connect();
  const db = `preflight_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${db}`);
  return {
    url: BENCH_PG_URL.replace(/\/[^/]*$/, `/${db}`),
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}

export interface ReservationCost {
  store: 'sqlite' | 'postgres';
  concurrency: number;
  reservations: number;
  p50Ms: number;
  p99Ms: number;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((s.length - 1) * p))] * 1000) / 1000;
};

/** `n` check-and-reserve calls in two limits at `concurrency` at a time; each call's latency. */
async function time(store: Store, account: string, n: number, concurrency: number): Promise<number[]> {
  const now = Date.now();
  const limits: LimitWindow[] = [
    ...limitWindows(
      [
        { id: 'daily', window: 'day', max_usd: 1e15 },
        { id: 'rolling-count', window: { rolling_s: 3600 }, max_count: 1e15 },
      ],
      now,
    ),
  ];
  const out: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const t0 = performance.now();
      const r = await store.reserve({
        id: `0x${randomBytes(32).toString('hex')}`,
        accountId: account,
        policy: 'bench',
        limits,
        usd: 25,
        at: Date.now(),
        expiresAt: Date.now() + 60_000,
        chain: 'base',
        actor: null,
      });
      out.push(performance.now() - t0);
      if (!r.ok) throw new Error('a bench reservation was refused');
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

/**
 * The reservation's cost: 1,000 reservations one at a time and 2,000 fifty at a time, into a
 * window already holding them, on SQLite and (when it answers) PostgreSQL.
 */
export async function measureReservations(): Promise<ReservationCost[] | { skipped: string }> {
  const out: ReservationCost[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'pf-bench-res-'));
  const targets: Array<{ kind: 'sqlite' | 'postgres'; url: string; drop(): Promise<void> }> = [
    {
      kind: 'sqlite',
      url: `sqlite:${join(dir, 'res.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    },
  ];
  try {
    const db = await benchDatabase();
    targets.push({ kind: 'postgres', url: db.url, drop: db.drop });
  } catch (err) {
    out.push({ store: 'postgres', concurrency: 0, reservations: 0, p50Ms: Number.NaN, p99Ms: Number.NaN });
    process.stderr.write(`bench: reservation cost on PostgreSQL not measured: ${(err as Error).message}\n`);
  }
  for (const t of targets) {
    const store = await openStore({ databaseUrl: t.url });
    try {
      const account = randomUUID();
      await store.createApiKey({
        id: account,
        keyHash: randomBytes(32).toString('hex'),
        prefix: 'pvk_bench',
        email: `${account}@bench.example`,
        plan: 'Basic',
        requestedPlan: null,
        company: null,
        fullName: null,
        useCase: null,
        website: null,
      });
      await time(store, account, 200, 1); // warm-up
      for (const [n, c] of [
        [1000, 1],
        [2000, 50],
      ] as const) {
        const lat = await time(store, account, n, c);
        out.push({ store: t.kind, concurrency: c, reservations: n, p50Ms: pct(lat, 0.5), p99Ms: pct(lat, 0.99) });
      }
    } finally {
      await store.close();
      await t.drop();
    }
  }
  return out.filter((r) => r.reservations > 0);
}
