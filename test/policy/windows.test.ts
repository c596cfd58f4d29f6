/**
 * The limit windows a policy's reservations count in (docs/policies.md §4), made once per span in
 * which they stay the same: across hour, day, week and month ends and every rolling bucket, in
 * either direction of the clock, they are what a fresh computation gives; and through the policy
 * service on a real SQLite store, a day limit that is full at 23:59:59.999 UTC takes a
 * reservation at 00:00 of the next day, and a rolling one takes it once its oldest bucket has
 * aged out, not a millisecond before.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { compilePolicy } from '../../src/policy/evaluate.js';
import { PolicyService, windowsAt, type JudgedAnswer } from '../../src/policy/service.js';
import { limitWindows } from '../../src/policy/windows.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { newKey } from '../store/suite.js';
import type { PolicyDocument } from '../../src/policy/document.js';
import type { GuardRequest } from '../../src/generated/types.js';

const ref = { name: 'w', version: 1, hash: `0x${'cd'.repeat(32)}` };

t.test('cached windows are what a fresh computation gives, at every step of a walking clock', async (t) => {
  const p = compilePolicy(ref, {
    limits: [
      { id: 'h', window: 'hour', max_usd: 1 },
      { id: 'd', window: 'day', max_usd: 1 },
      { id: 'w', window: 'week', max_usd: 1 },
      { id: 'm', window: 'month', max_usd: 1 },
      { id: 'r50', window: { rolling_s: 50 }, max_count: 1 }, // step clamped to 1 s
      { id: 'r7200', window: { rolling_s: 7200 }, max_usd: 1 }, // step 72 s
      { id: 'r12345', window: { rolling_s: 12345 }, max_usd: 1 }, // step 123.45 s
    ],
  } as PolicyDocument);
  // A seeded walk from 2026-02-27 (a month end, then a leap-less February) over a week and more,
  // with steps from 1 ms to 20 min, and back again for a while.
  let seed = 42;
  const rnd = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  let now = Date.UTC(2026, 1, 27, 23, 58, 0);
  let mismatches = 0;
  let steps = 0;
  const check = (at: number) => {
    steps++;
    const cached = windowsAt(p, at);
    const fresh = limitWindows(p.limits, at);
    if (JSON.stringify(cached) !== JSON.stringify(fresh)) {
      mismatches++;
      if (mismatches < 5) t.fail(`windows at ${new Date(at).toISOString()} differ from a fresh computation`);
    }
  };
  for (let i = 0; i < 20_000; i++) {
    now += rnd() < 0.5 ? Math.floor(rnd() * 1000) + 1 : Math.floor(rnd() * 1_200_000);
    check(now);
  }
  // Exactly at and around each boundary the walk may have jumped over.
  for (const b of [Date.UTC(2026, 2, 1), Date.UTC(2026, 2, 2), Date.UTC(2026, 2, 9), Date.UTC(2026, 2, 1, 13)])
    for (const d of [-1, 0, 1, -1, 0]) check(b + d);
  for (let i = 0; i < 2_000; i++) {
    now -= Math.floor(rnd() * 600_000);
    check(now);
  }
  t.equal(mismatches, 0, `${steps} instants, none different`);
  t.equal(windowsAt(p, now), windowsAt(p, now), 'within one span the same array is shared');
  t.ok(
    Object.isFrozen(windowsAt(p, now)) && windowsAt(p, now).every((w) => Object.isFrozen(w)),
    'and frozen, so no reservation can change what another counts in',
  );
});

t.test('through the policy service on SQLite: a window that ends frees its budget at once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pf-windows-'));
  let store: Store | undefined;
  t.teardown(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  store = await openStore({ databaseUrl: `sqlite:${join(dir, 'w.db')}` });
  const owner = newKey('windows@example.com');
  await store.createApiKey(owner);
  const account = owner.id;
  let clock = 0;
  const service = new PolicyService(store, { now: () => clock });
  // Each document its own version (the service compiles a (name, version, hash) once).
  let version = 0;
  const policy = (limit: PolicyDocument['limits']) =>
    service.compile({
      name: 'w',
      version: ++version,
      hash: `0x${String(version).repeat(64)}`,
      document: JSON.stringify({
        rules: [{ id: 'all', effect: 'allow', match: { actions: ['swap'] } }],
        limits: limit,
      }),
      createdAt: new Date(0),
    });
  const body = { action: 'swap', chain: 'base', amount_usd: 600 } as GuardRequest;
  const ask = async (p: ReturnType<typeof policy>, at: number, usd: number) => {
    clock = at;
    const base: JudgedAnswer = {
      verdict: 'proceed',
      risk: 'low',
      confidence: 0.9,
      expires_in: 60,
      decision: {
        verdict: 'proceed',
        summary: 'Proceed.',
        counts: { pass: 1, warn: 0, fail: 0, error: 0, skipped: 0 },
      },
      evidence: [],
      failure_modes: [],
    };
    const out = await service.decide({
      under: { accountId: account, policy: 'w' },
      policy: p,
      body: { ...body, amount_usd: usd },
      results: [],
      base,
      reservationId: `0x${randomBytes(32).toString('hex')}`,
      dryRun: false,
    });
    return out.verdict;
  };

  const day = policy([{ id: 'daily', window: 'day', max_usd: 1000 }]);
  const lastMs = Date.UTC(2026, 10, 28, 23, 59, 59, 999);
  t.equal(await ask(day, lastMs - 60_000, 600), 'proceed', '600 of 1,000 in the day');
  t.equal(await ask(day, lastMs, 600), 'wait', 'the same day is full at its last millisecond');
  t.equal(await ask(day, lastMs + 1, 600), 'proceed', 'the next day counts afresh from its first');
  t.equal(await ask(day, lastMs + 2, 600), 'wait', 'and fills in turn');

  // 100 s rolling: buckets of 1 s; a reservation at t counts while its bucket meets the last 100 s.
  const rolling = policy([{ id: 'r', window: { rolling_s: 100 }, max_usd: 1000 }]);
  const t0 = Date.UTC(2026, 10, 29, 12, 0, 0, 500);
  t.equal(await ask(rolling, t0, 600), 'proceed');
  t.equal(await ask(rolling, t0 + 50_000, 600), 'wait', 'within the window');
  // The first reservation's bucket [12:00:00, 12:00:01) leaves the window once now - 100 s reaches its end.
  const out = Date.UTC(2026, 10, 29, 12, 1, 41, 0);
  t.equal(await ask(rolling, out - 1, 600), 'wait', 'its bucket still counts a millisecond before');
  t.equal(await ask(rolling, out, 600), 'proceed', 'and no longer at that instant');
});
