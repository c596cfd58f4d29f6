/**
 * Reservations in batches (docs/policies.md §4): the reservations asked for one (account, policy)
 * in the same few turns of the event loop, or while its previous batch is in the database, go
 * together into its next transaction, which reads the counters once, decides each ask in order
 * against them and what the asks before it took, and writes them all. Each ask gets what deciding
 * it alone, in order, would have given; a busy policy pays one transaction per batch instead of
 * one per answer, and no batch of a policy overlaps another of the same policy in this process
 * (across processes the transaction's lock orders them).
 */
import { PairMap } from '../pair-map.js';
import { addCounted, bucketsOf, overflowing, usageFromCounters, type CounterRow } from './rows.js';
import type { LimitUsage, LimitWindow, ReserveRequest, ReserveResult } from './types.js';

/** At most this many asks per transaction (PostgreSQL takes at most 65,535 parameters a statement). */
export const MAX_BATCH = 200;
/** At most this many turns of the event loop between a batch's first ask and its transaction. */
export const MAX_OPEN_TURNS = 3;

interface Ask<I, O> {
  input: I;
  resolve(o: O): void;
  reject(err: unknown): void;
}

interface Queue<I, O> {
  pending: Array<Ask<I, O>>;
  running: boolean;
  scheduled: boolean;
  /** The batch in the database, while `running`. */
  draining: Promise<void> | null;
}

/** Runs the inputs submitted under one key in batches, one batch of a key at a time. */
export class KeyedBatcher<I, O> {
  private readonly queues = new Map<string, Queue<I, O>>();

  /** `nextTurn` runs a function at the end of the event loop's next turn (setImmediate; tests step it by hand). */
  constructor(
    private readonly runBatch: (inputs: I[]) => Promise<O[]>,
    private readonly nextTurn: (fn: () => void) => void = setImmediate,
  ) {}

  submit(key: string, input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let q = this.queues.get(key);
      if (q === undefined) {
        q = { pending: [], running: false, scheduled: false, draining: null };
        this.queues.set(key, q);
      }
      q.pending.push({ input, resolve, reject });
      if (!q.running && !q.scheduled) {
        q.scheduled = true;
        const queue = q;
        this.closeLater(key, queue, queue.pending.length, 1);
      }
    });
  }

  /**
   * The batch stays open for another turn of the event loop while the last turn added to it, up to
   * MAX_OPEN_TURNS: the answers whose requests were read together reach their reservation a few
   * turns apart (each awaits its checks, cached or not), and on SQLite a commit costs about as
   * much as the rows it writes, so a batch twice the size is half the commits (bench/README.md,
   * "Policies"). A lone ask, or the last of a burst, closes after one turn, as before.
   */
  private closeLater(key: string, q: Queue<I, O>, seen: number, turns: number): void {
    this.nextTurn(() => {
      if (q.pending.length > seen && turns < MAX_OPEN_TURNS && q.pending.length < MAX_BATCH)
        this.closeLater(key, q, q.pending.length, turns + 1);
      else void this.drain(key, q);
    });
  }

  private drain(key: string, q: Queue<I, O>): Promise<void> {
    q.scheduled = false;
    if (q.running) return q.draining ?? Promise.resolve();
    if (q.pending.length === 0) return Promise.resolve();
    q.running = true;
    const batch = q.pending.splice(0, MAX_BATCH);
    q.draining = this.runOne(key, q, batch);
    return q.draining;
  }

  private async runOne(key: string, q: Queue<I, O>, batch: Array<Ask<I, O>>): Promise<void> {
    try {
      const out = await this.runBatch(batch.map((a) => a.input));
      for (let i = 0; i < batch.length; i++) batch[i].resolve(out[i]);
    } catch (err) {
      for (const a of batch) a.reject(err);
    } finally {
      q.running = false;
      q.draining = null;
      if (q.pending.length > 0) void this.drain(key, q);
      else if (this.queues.get(key) === q) this.queues.delete(key);
    }
  }

  /**
   * Runs every waiting batch now, without waiting for its turns, and resolves once no batch is
   * waiting or in the database: what a store does before it closes its connections.
   */
  async flush(): Promise<void> {
    for (;;) {
      const open = [...this.queues].filter(([, q]) => q.running || q.pending.length > 0);
      if (open.length === 0) return;
      await Promise.all(open.map(([key, q]) => this.drain(key, q)));
    }
  }
}

/** The keys made so far, by account and policy. */
const RESERVE_KEYS = new PairMap<string>();

/**
 * The key reservations are batched and locked under: made once per (account, policy), then found
 * with the caller's own strings (../pair-map.ts), not joined again on every answer.
 */
export function reserveKey(r: Pick<ReserveRequest, 'accountId' | 'policy'>): string {
  let key = RESERVE_KEYS.get(r.accountId, r.policy);
  if (key === undefined) {
    key = `limits/${r.accountId}/${r.policy}`;
    RESERVE_KEYS.set(r.accountId, r.policy, key);
  }
  return key;
}

/** Every limit of the batch's asks once, from the oldest bucket any of them counts. */
export function unionLimits(asks: ReserveRequest[]): LimitWindow[] {
  const by = new Map<string, LimitWindow>();
  let last: readonly LimitWindow[] | null = null;
  for (const r of asks) {
    // The asks of one span share its windows array (policy/service.ts, windowsAt): read once.
    if (r.limits === last) continue;
    last = r.limits;
    for (const l of r.limits) {
      const k = `${l.id}\u0000${l.windowKey}`;
      const seen = by.get(k);
      if (seen === undefined || l.from < seen.from) by.set(k, l);
    }
  }
  return [...by.values()];
}

/** What a batch's accepted asks took from one (limit, window, bucket). */
interface TakenRow extends CounterRow {
  bucket: number;
  usd: number;
  n: number;
  reserved_usd: number;
}

/**
 * Decides the asks in order against the counter rows read for the batch: an ask that fits takes
 * its amounts (unless a dry run), so the asks after it see them. The accepted asks are to be written.
 * The stored rows are summed once per limit and window start; what the accepted asks took is kept
 * summed per (limit, window, bucket), as the counters' upserts will write it. Each ask then reads
 * a few sums, not every row and every ask before it.
 */
export function decideBatch(
  asks: ReserveRequest[],
  rows: CounterRow[],
): { results: ReserveResult[]; accepted: ReserveRequest[] } {
  const taken: TakenRow[] = [];
  const accepted: ReserveRequest[] = [];
  // What the stored rows count for a limit from a bucket on, summed once per batch, not once per
  // ask. A batch holds a few (limit, window, start)s: a short list is searched faster than a map's
  // string key is built.
  const stored: Array<{ l: LimitWindow; u: LimitUsage }> = [];
  const usageOf = (l: LimitWindow): LimitUsage => {
    let base: LimitUsage | undefined;
    for (const s of stored)
      if (s.l.id === l.id && s.l.windowKey === l.windowKey && s.l.from === l.from) {
        base = s.u;
        break;
      }
    if (base === undefined) {
      base = usageFromCounters([l], rows)[0];
      stored.push({ l, u: base });
    }
    return addCounted({ ...base }, l, taken);
  };
  const results = asks.map((r): ReserveResult => {
    const usage = r.limits.map(usageOf);
    const over = overflowing(r.limits, usage, r.usd);
    if (over.length > 0) {
      const all = rows.concat(taken);
      return { ok: false, usage, full: over.map((l) => ({ id: l.id, buckets: bucketsOf(l, all) })) };
    }
    if (!r.dryRun) {
      accepted.push(r);
      const reserved = r.expiresAt === null ? 0 : r.usd;
      for (const l of r.limits) {
        const t = taken.find((c) => c.limit_id === l.id && c.window_key === l.windowKey && c.bucket === l.bucket);
        if (t === undefined)
          taken.push({
            limit_id: l.id,
            window_key: l.windowKey,
            bucket: l.bucket,
            usd: r.usd,
            n: 1,
            reserved_usd: reserved,
          });
        else {
          t.usd += r.usd;
          t.n += 1;
          t.reserved_usd += reserved;
        }
      }
    }
    return { ok: true, usage };
  });
  return { results, accepted };
}

/**
 * The accepted asks' counter additions summed per (limit, window, bucket): one upsert each. The
 * (limit, window, bucket) rows are looked up once per run of asks sharing a windows array (the
 * asks of one span share it), and each ask's amounts are added to them in order, as one lookup
 * per ask and limit would add them.
 */
export function summedAdds(accepted: ReserveRequest[]): unknown[][] {
  const by = new Map<string, unknown[]>();
  let last: readonly LimitWindow[] | null = null;
  let rows: unknown[][] = [];
  for (const r of accepted) {
    if (r.limits !== last) {
      last = r.limits;
      rows = r.limits.map((l) => {
        const k = `${l.id}\u0000${l.windowKey}\u0000${l.bucket}`;
        let row = by.get(k);
        if (row === undefined) {
          row = [r.accountId, r.policy, l.id, l.windowKey, l.bucket, 0, 0, 0];
          by.set(k, row);
        }
        return row;
      });
    }
    const reserved = r.expiresAt === null ? 0 : r.usd;
    for (const row of rows) {
      row[5] = (row[5] as number) + r.usd;
      row[6] = (row[6] as number) + 1;
      row[7] = (row[7] as number) + reserved;
    }
  }
  return [...by.values()];
}
