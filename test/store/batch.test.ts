/**
 * The reservation batcher (src/store/batch.ts): which asks share a transaction. The event loop's
 * turns are stepped by hand. A lone ask runs after one turn; a batch stays open while each turn
 * adds to it, for at most MAX_OPEN_TURNS turns; one key's batches never overlap, and each ask gets
 * its own result.
 */
import t from 'tap';
import { decideBatch, KeyedBatcher, MAX_OPEN_TURNS, summedAdds, unionLimits } from '../../src/store/batch.js';
import type { CounterRow } from '../../src/store/rows.js';
import type { LimitWindow, ReserveRequest } from '../../src/store/types.js';
import { seeded } from '../helpers/seeded.js';

function rig() {
  const turns: Array<() => void> = [];
  const batches: number[][] = [];
  const b = new KeyedBatcher<number, number>(
    async (inputs) => {
      batches.push(inputs);
      return inputs.map((x) => x * 10);
    },
    (fn) => turns.push(fn),
  );
  /** Ends one turn: runs what was waiting for it. */
  const endTurn = async (): Promise<void> => {
    const due = turns.splice(0);
    for (const fn of due) fn();
    await new Promise((r) => setImmediate(r)); // let the batch's promises settle
  };
  return { b, batches, endTurn, waiting: () => turns.length };
}

t.test('a lone ask runs after one turn, as a batch of one', async (t) => {
  const { b, batches, endTurn, waiting } = rig();
  const p = b.submit('k', 1);
  t.same(batches, [], 'not in the turn it was asked');
  await endTurn();
  t.same(batches, [[1]], 'run at the end of the next turn');
  t.equal(waiting(), 0);
  t.equal(await p, 10);
});

t.test('a batch stays open while each turn adds to it, for at most MAX_OPEN_TURNS turns', async (t) => {
  const { b, batches, endTurn } = rig();
  const out: Array<Promise<number>> = [];
  let n = 0;
  out.push(b.submit('k', n++));
  // One more ask before the end of each turn: a steady trickle.
  for (let i = 0; i < 2 * MAX_OPEN_TURNS; i++) {
    out.push(b.submit('k', n++));
    await endTurn();
  }
  await endTurn();
  await endTurn();
  t.equal(batches[0].length, MAX_OPEN_TURNS + 1, 'the first batch took the asks of its open turns, then closed');
  t.same(
    batches.flat(),
    Array.from({ length: n }, (_, i) => i),
    'every ask in exactly one batch, in order',
  );
  t.same(
    await Promise.all(out),
    Array.from({ length: n }, (_, i) => i * 10),
    'each ask gets its own result',
  );
});

t.test('asks after the first in its turn keep the batch open one turn more; each key batches on its own', async (t) => {
  const { b, batches, endTurn } = rig();
  const out = [b.submit('a', 1), b.submit('a', 2), b.submit('b', 3)];
  await endTurn();
  t.same(batches, [[3]], "b's lone ask closed after one turn; a's batch grew after it opened, so it waits");
  await endTurn();
  t.same(batches, [[3], [1, 2]], 'a turn that added nothing closed it');
  t.same(await Promise.all(out), [10, 20, 30]);
});

t.test('flush runs every waiting batch at once and resolves when none is waiting or running', async (t) => {
  const { b, batches, waiting } = rig();
  const out = [b.submit('a', 1), b.submit('a', 2), b.submit('b', 3)];
  t.equal(waiting(), 2, 'both keys wait for their turn');
  await b.flush();
  t.same(
    batches.sort((x, y) => x[0] - y[0]),
    [[1, 2], [3]],
    'run without the turns, each key in one batch',
  );
  t.same(await Promise.all(out), [10, 20, 30]);
  await b.flush();
  t.equal(batches.length, 2, 'nothing left to run');
});

/**
 * The reference: each ask alone, in order, against the stored rows plus one row per limit of every
 * ask accepted before it (what a batch of one would have read after their commits).
 */
function oneByOne(asks: ReserveRequest[], stored: CounterRow[]) {
  const rows = [...stored];
  return asks.map((r) => {
    const usage = r.limits.map((l) => {
      let committed = 0;
      let reserved = 0;
      let count = 0;
      for (const c of rows)
        if (c.limit_id === l.id && c.window_key === l.windowKey && Number(c.bucket) >= l.from) {
          reserved += Number(c.reserved_usd);
          committed += Number(c.usd) - Number(c.reserved_usd);
          count += Number(c.n);
        }
      return { committed, reserved, count };
    });
    const fullIds = r.limits
      .filter((l, i) => {
        const u = usage[i];
        return (
          (l.maxUsd !== null && u.committed + u.reserved + r.usd > l.maxUsd + 1e-6) ||
          (l.maxCount !== null && u.count + 1 > l.maxCount)
        );
      })
      .map((l) => l.id);
    const ok = fullIds.length === 0;
    if (ok && !r.dryRun)
      for (const l of r.limits)
        rows.push({
          limit_id: l.id,
          window_key: l.windowKey,
          bucket: l.bucket,
          usd: r.usd,
          n: 1,
          reserved_usd: r.expiresAt === null ? 0 : r.usd,
        });
    return { ok, usage, fullIds };
  });
}

t.test('a batch decides each ask as deciding it alone, in order, would have', async (t) => {
  const rand = seeded(7);
  const minute = 60_000;
  const t0 = 1_800_000_000_000;
  const stored: CounterRow[] = [];
  for (let b = 0; b < 60; b++)
    stored.push({
      limit_id: 'hour',
      window_key: 'rolling:3600',
      bucket: t0 - b * minute,
      usd: '5',
      n: '1',
      reserved_usd: b % 3 === 0 ? '5' : '0',
    });
  stored.push({ limit_id: 'day', window_key: 'day', bucket: t0 - (t0 % 86_400_000), usd: 120, n: 9, reserved_usd: 20 });
  let checked = 0;
  let refused = 0;
  for (let round = 0; round < 40; round++) {
    const asks: ReserveRequest[] = [];
    for (let i = 0; i < 50; i++) {
      const at = t0 + rand(3) * minute; // three buckets of the rolling window in one batch
      const hour: LimitWindow = {
        id: 'hour',
        windowKey: 'rolling:3600',
        bucket: at - (at % minute),
        from: at - 59 * minute - (at % minute),
        step: minute,
        maxUsd: 400 + rand(200),
        maxCount: null,
      };
      const day: LimitWindow = {
        id: 'day',
        windowKey: 'day',
        bucket: t0 - (t0 % 86_400_000),
        from: t0 - (t0 % 86_400_000),
        step: 86_400_000,
        maxUsd: null,
        maxCount: 30 + rand(20),
      };
      asks.push({
        id: `a${round}.${i}`,
        accountId: 'acct',
        policy: 'p',
        limits: rand(4) === 0 ? [hour] : [hour, day],
        usd: [0.1, 0.2, 7.25, 30][rand(4)],
        at,
        expiresAt: rand(2) === 0 ? null : at + 60_000,
        chain: 'base',
        actor: null,
        dryRun: rand(10) === 0,
      });
    }
    const { results, accepted } = decideBatch(asks, stored);
    const want = oneByOne(asks, stored);
    for (let i = 0; i < asks.length; i++) {
      const got = results[i];
      const w = want[i];
      if (got.ok !== w.ok) {
        t.fail(`round ${round} ask ${i}: ok ${got.ok}, alone ${w.ok}`);
        continue;
      }
      const close = got.usage.every(
        (u, k) =>
          Math.abs(u.committedUsd - w.usage[k].committed) < 1e-6 &&
          Math.abs(u.reservedUsd - w.usage[k].reserved) < 1e-6 &&
          u.count === w.usage[k].count,
      );
      if (!close)
        t.fail(`round ${round} ask ${i}: usage ${JSON.stringify(got.usage)}, alone ${JSON.stringify(w.usage)}`);
      if (!got.ok) {
        refused++;
        t.same(
          got.full.map((f) => f.id),
          w.fullIds,
          'the same limits are full',
        );
        for (const f of got.full) {
          // What each full limit's buckets hold adds up to what it counted.
          const k = asks[i].limits.findIndex((l) => l.id === f.id);
          const sum = f.buckets.reduce((s, b) => s + b.usd, 0);
          const counted = w.usage[k].committed + w.usage[k].reserved;
          if (Math.abs(sum - counted) > 1e-6)
            t.fail(`round ${round} ask ${i}: buckets of ${f.id} hold ${sum}, counted ${counted}`);
        }
      }
      checked++;
    }
    t.same(
      accepted.map((r) => r.id),
      asks.filter((r, i) => want[i].ok && !r.dryRun).map((r) => r.id),
      `round ${round}: the accepted asks`,
    );
  }
  t.equal(checked, 2000, 'every ask compared');
  // Both outcomes occur often, or the comparison would show little.
  t.ok(refused > 200, `${refused} asks refused`);
  t.ok(refused < 1800, `${2000 - refused} asks fit`);
});

t.test(
  "a batch's counter additions and union of windows read shared windows arrays once and add as ask by ask would",
  async (t) => {
    const rand = seeded(11);
    const minute = 60_000;
    const t0 = 1_800_000_000_000;
    const windows = (at: number): LimitWindow[] => [
      {
        id: 'hour',
        windowKey: 'rolling:3600',
        bucket: at - (at % minute),
        from: at - 59 * minute - (at % minute),
        step: minute,
        maxUsd: 1e9,
        maxCount: null,
      },
      { id: 'day', windowKey: 'day', bucket: t0, from: t0, step: 86_400_000, maxUsd: null, maxCount: 1e9 },
    ];
    // As the policy service hands them out: one frozen array per span, shared by its asks; some asks
    // bring arrays of their own with the same windows.
    const shared = [0, 1, 2].map((k) => Object.freeze(windows(t0 + k * minute)) as LimitWindow[]);
    for (let round = 0; round < 30; round++) {
      const asks: ReserveRequest[] = [];
      let span = 0;
      for (let i = 0; i < 60; i++) {
        if (rand(8) === 0) span = Math.min(2, span + 1);
        const own = rand(5) === 0;
        const limits = own ? windows(t0 + span * minute) : shared[span];
        const usd = [0.1, 0.2, 7.25, 30, 1 / 3][rand(5)];
        asks.push({
          id: `a${round}.${i}`,
          accountId: 'acct',
          policy: 'p',
          limits: rand(6) === 0 ? limits.slice(0, 1) : limits,
          usd,
          at: t0 + span * minute,
          expiresAt: rand(2) === 0 ? null : t0 + 120_000,
          chain: 'base',
          actor: null,
          dryRun: false,
        });
      }
      // Ask by ask, one keyed lookup per ask and limit.
      const want = new Map<string, unknown[]>();
      for (const r of asks)
        for (const l of r.limits) {
          const k = `${l.id}\u0000${l.windowKey}\u0000${l.bucket}`;
          const reserved = r.expiresAt === null ? 0 : r.usd;
          const row = want.get(k);
          if (row === undefined) want.set(k, [r.accountId, r.policy, l.id, l.windowKey, l.bucket, r.usd, 1, reserved]);
          else {
            row[5] = (row[5] as number) + r.usd;
            row[6] = (row[6] as number) + 1;
            row[7] = (row[7] as number) + reserved;
          }
        }
      t.strictSame(summedAdds(asks), [...want.values()], `round ${round}: the same sums, to the last bit`);
      const oldest = new Map<string, number>();
      for (const r of asks)
        for (const l of r.limits) oldest.set(l.id, Math.min(oldest.get(l.id) ?? Number.POSITIVE_INFINITY, l.from));
      t.strictSame(
        unionLimits(asks).map((l) => [l.id, l.from]),
        [...oldest],
        `round ${round}: each limit once, from its oldest bucket`,
      );
    }
  },
);
