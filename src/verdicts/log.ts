/**
 * The verdict log (docs/policies.md §10): every answer to a keyed call, one row each. Rows wait in
 * memory and are written in batches, at the latest a second after they were answered, so a busy
 * instance pays one commit per batch and a crash loses at most that second; an answer that
 * reserved budget in a policy's limit is written before it is sent. Rows older than
 * VERDICT_LOG_DAYS and expired Idempotency-Key answers are deleted in bounded rounds.
 */
import { keccak256 } from '../crypto/keccak.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { PolicyRefRecord, Store, VerdictRecord } from '../store/types.js';

/** What a keyed call's billing left on the response (the gate's BillingInfo, the part read here). */
export interface KeyedCaller {
  kind: string;
  keyId?: string;
  keyName?: string;
  accountId?: string;
}

/** The verdict-bearing part of an answer. */
interface JudgedBody {
  verdict?: unknown;
  risk?: unknown;
  failure_modes?: unknown;
  decision?: { policy?: PolicyRefRecord | null };
  attestation?: { typed_data?: { message?: { id?: unknown } } };
  evidence?: Array<{ type?: string; observed?: unknown }>;
}

/** The id of the answer with this answer id: its attestation's `id` and its reservation's (docs/attestations.md §1). */
export function answerRecordId(answerId: string): string {
  return `0x${keccak256(Buffer.from(answerId, 'utf8')).toString('hex')}`;
}

/** What the answer reserved in its policy's limits: the policy item's `observed.reserved_usd`, or null. */
function reservedUsd(body: JudgedBody): number | null {
  const evidence = body.evidence;
  if (!Array.isArray(evidence)) return null;
  for (const e of evidence) {
    if (e?.type !== 'policy') continue;
    const r = (e.observed as { reserved_usd?: unknown } | null | undefined)?.reserved_usd;
    return typeof r === 'number' ? r : null;
  }
  return null;
}

/** The log row of an answer to a keyed call, or null when the call was not keyed or the answer has no verdict. */
export function verdictRecord(
  caller: KeyedCaller | undefined,
  answerId: string,
  endpoint: string,
  body: object,
  at: number,
): VerdictRecord | null {
  if (caller?.kind !== 'key' || caller.keyId === undefined || caller.accountId === undefined) return null;
  const b = body as JudgedBody;
  if (typeof b.verdict !== 'string') return null;
  const signedId = b.attestation?.typed_data?.message?.id;
  return {
    // A signed answer carries its id already; hashing it again is most of a row's cost.
    id: typeof signedId === 'string' ? signedId : answerRecordId(answerId),
    accountId: caller.accountId,
    at,
    keyId: caller.keyId,
    keyName: caller.keyName ?? '',
    endpoint,
    verdict: b.verdict,
    risk: typeof b.risk === 'string' ? b.risk : null,
    failureModes: Array.isArray(b.failure_modes) ? b.failure_modes.map(String) : [],
    policy: b.decision?.policy ?? null,
    reservedUsd: reservedUsd(b),
  };
}

export interface VerdictLogOptions {
  /** VERDICT_LOG_DAYS: rows older than this many days are deleted. */
  retentionDays: number;
  /** The longest a row waits in memory (1 s). */
  flushMs?: number;
  /** Rows written per statement at most; a full batch is written at once. */
  batchRows?: number;
  /** Rows held while the store does not answer; the oldest are dropped past this. */
  maxQueued?: number;
  /** How often old rows are deleted. */
  pruneEveryMs?: number;
  metrics?: Pick<Metrics, 'verdictRows'>;
  now?: () => number;
}

const PRUNE_ROUND = 5000;
/** The longest an answer that reserved waits for its row (docs/policies.md §10). */
export const DURABLE_WAIT_MS = 2000;

export class VerdictLog {
  private queue: VerdictRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private pruner: NodeJS.Timeout | null = null;
  private readonly flushMs: number;
  private readonly batchRows: number;
  private readonly maxQueued: number;
  private readonly now: () => number;
  private readonly log: Logger;

  constructor(
    private readonly store: Pick<Store, 'appendVerdicts' | 'pruneKept'>,
    logger: Logger,
    private readonly opts: VerdictLogOptions,
  ) {
    this.flushMs = opts.flushMs ?? 1000;
    this.batchRows = opts.batchRows ?? 500;
    this.maxQueued = opts.maxQueued ?? 100_000;
    this.now = opts.now ?? Date.now;
    this.log = logger.child({ component: 'verdict-log' });
  }

  /**
   * Logs one answer. A row written with its reservation (`writtenWithReservation`) is only
   * counted; another row with a reservation is written now, and the promise settles once it is
   * durable; any other row joins the batch and nothing is returned (the answer does not wait).
   * The rows with a reservation asked for during one turn of the event loop are written in one
   * statement at its end: under load they share one commit instead of paying one each.
   */
  record(row: VerdictRecord, writtenWithReservation = false): Promise<void> | undefined {
    if (writtenWithReservation) {
      // In the store already, committed with its reservation: only counted here.
      this.opts.metrics?.verdictRows('written', 1);
      return undefined;
    }
    if (row.reservedUsd !== null) {
      return new Promise<void>((resolve) => {
        // A store that stops answering between the reservation and its row must not hold the
        // answer: past DURABLE_WAIT_MS it goes out, and the row is still written (or queued).
        const timer = setTimeout(resolve, DURABLE_WAIT_MS);
        timer.unref();
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        if (this.durable.push({ row, resolve: done }) === 1) setImmediate(this.writeDurable);
      });
    }
    this.enqueue(row);
    return undefined;
  }

  private durable: Array<{ row: VerdictRecord; resolve: () => void }> = [];

  private readonly writeDurable = (): void => {
    const group = this.durable;
    this.durable = [];
    const rows = group.map((g) => g.row);
    void this.store
      .appendVerdicts(rows)
      .then(
        () => this.opts.metrics?.verdictRows('written', rows.length),
        (err: unknown) => {
          // The reservations themselves are durable (committed before); their rows go with the next batch.
          this.opts.metrics?.verdictRows('retried', rows.length);
          this.log.error(
            { err, rows: rows.length },
            'verdicts with a reservation not written; queued for the next batch',
          );
          for (const r of rows) this.enqueue(r);
        },
      )
      .finally(() => {
        for (const g of group) g.resolve();
      });
  };

  private enqueue(row: VerdictRecord): void {
    this.queue.push(row);
    if (this.queue.length > this.maxQueued) {
      const dropped = this.queue.length - this.maxQueued;
      this.queue.splice(0, dropped);
      this.opts.metrics?.verdictRows('dropped', dropped);
      this.log.error({ dropped }, 'verdict log queue full: oldest rows dropped');
    }
    if (this.queue.length >= this.batchRows) void this.flush();
    else if (this.timer === null) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Writes every queued row (one batch after the other); rows of a failed batch go back to the front. */
  flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.writing) return this.writing.then(() => (this.queue.length > 0 ? this.flush() : undefined));
    if (this.queue.length === 0) return Promise.resolve();
    const batch = this.queue.splice(0, this.batchRows);
    let written = false;
    this.writing = this.store
      .appendVerdicts(batch)
      .then(
        () => {
          written = true;
          this.opts.metrics?.verdictRows('written', batch.length);
        },
        (err: unknown) => {
          this.opts.metrics?.verdictRows('retried', batch.length);
          this.log.error({ err, rows: batch.length }, 'verdict log batch not written; kept for the next one');
          this.queue.unshift(...batch);
        },
      )
      .finally(() => {
        this.writing = null;
      });
    return this.writing.then(() => {
      // More than a batch waiting: the next one now; after a failure, or a part batch, a second later.
      if (written && this.queue.length >= this.batchRows) return this.flush();
      if (this.queue.length > 0 && this.timer === null) {
        this.timer = setTimeout(() => void this.flush(), this.flushMs);
        this.timer.unref();
      }
    });
  }

  /** Rows waiting to be written. */
  get queued(): number {
    return this.queue.length;
  }

  /** Deletes rows past retention and expired Idempotency-Key answers, a bounded round at a time. */
  async prune(): Promise<{ verdicts: number; idempotency: number }> {
    const total = { verdicts: 0, idempotency: 0 };
    for (let round = 0; round < 20; round++) {
      const t = this.now();
      const out = await this.store.pruneKept(t, t - this.opts.retentionDays * 86_400_000, PRUNE_ROUND);
      total.verdicts += out.verdicts;
      total.idempotency += out.idempotency;
      if (out.verdicts < PRUNE_ROUND && out.idempotency < PRUNE_ROUND) break;
    }
    return total;
  }

  /** Starts the pruning: once now, then every `pruneEveryMs` (10 minutes). */
  start(): void {
    const run = () =>
      void this.prune().then(
        (n) => {
          if (n.verdicts + n.idempotency > 0) this.log.info(n, 'old verdicts and Idempotency-Key answers deleted');
        },
        (err: unknown) => this.log.warn({ err }, 'verdict log pruning failed; next round later'),
      );
    run();
    this.pruner = setInterval(run, this.opts.pruneEveryMs ?? 600_000);
    this.pruner.unref();
  }

  /** Stops pruning and writes what is queued. */
  async close(): Promise<void> {
    if (this.pruner !== null) clearInterval(this.pruner);
    this.pruner = null;
    for (let tries = 0; this.queue.length > 0 && tries < 100; tries++) await this.flush();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
