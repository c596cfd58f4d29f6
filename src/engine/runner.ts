/**
 * Runs a request's checks: cache first (a hit never goes to the pool), identical checks in
 * flight share one call, the rest go to the executor as one batch, and the request answers
 * at its deadline whatever is still out. A late answer still lands in the cache, so the
 * caller's retry is served from it.
 */
import type { Config } from '../config.js';
import { upstreamLabel } from '../checks/index.js';
import type { CheckOutcome, CheckResult } from '../checks/types.js';
import type { Metrics } from '../metrics.js';
import { ResultCache, type CacheEntry } from './cache.js';
import type { SharedCache } from './shared-cache.js';
import { checkKey } from './canonical.js';
import type { Executor } from './worker-pool.js';
import type { ExecItem, ExecResult } from './timed-check.js';
import { JSON_TEXT, jsonString } from '../wire.js';

export interface PlannedCheck {
  /** Stable evidence name: `price`, `http[2]`, `rpc_health`. */
  name: string;
  check: { type: string; [k: string]: unknown };
  /** checkKey(check), when the caller has it already (CheckKeys, src/engine/canonical.ts). */
  key?: string;
}

export interface RunOptions {
  deadlineMs: number;
  requestId: string;
}

export interface Engine {
  run(planned: PlannedCheck[], opts: RunOptions): Promise<CheckResult[]>;
  readonly cache: ResultCache;
  readonly executor: Executor;
  /** The fleet's shared cache (REDIS_URL), or null. */
  readonly shared: SharedCache | null;
  close(): Promise<void>;
}

/** How often expired cache entries are swept out. */
const SWEEP_MS = 5000;
/** A fleet lock outlives its holder's hard timeout by this much, then lapses (the holder died). */
export const LOCK_MARGIN_MS = 500;

/** The JSON text of each outcome's status, reason, message, observed, expected and source, once made. */
const OUTCOME_TEXT = new WeakMap<CheckOutcome, string>();

/** A number's JSON text when it is a finite number (JSON writes anything else differently). */
function numberText(n: unknown): string | undefined {
  return typeof n === 'number' && Number.isFinite(n) ? `${n}` : undefined;
}

/**
 * An evidence item. Every item is built the same way, in the order of its schema, so answers
 * share one object shape and serialize fast. The fields only the decision reads (basis, unknown
 * inputs, components) are getters on the class, read from the outcome: the decision sees them,
 * the serialized evidence does not.
 */
class Evidence implements CheckResult {
  name: string;
  type: string;
  status: CheckOutcome['status'];
  reason: string | null;
  message: string;
  observed: unknown;
  expected: unknown;
  source: string | null;
  latency_ms: number;
  cached: boolean;
  age_s: number;
  ttl_s: number;
  declare retry_after_s?: number;
  readonly #outcome: CheckOutcome;

  constructor(name: string, type: string, outcome: CheckOutcome, latencyMs: number, cached: boolean, ageS: number) {
    this.name = name;
    this.type = type;
    this.status = outcome.status;
    this.reason = outcome.reason;
    this.message = outcome.message;
    this.observed = outcome.observed;
    this.expected = outcome.expected;
    this.source = outcome.source;
    this.latency_ms = latencyMs;
    this.cached = cached;
    this.age_s = ageS;
    this.ttl_s = outcome.ttl_s;
    if (outcome.retry_after_s !== undefined) this.retry_after_s = outcome.retry_after_s;
    this.#outcome = outcome;
  }

  /**
   * This item's JSON text, for sendJson (JSON_TEXT, src/wire.ts). The outcome's part (status to
   * source: most of an item's text, and the same for every answer the cached outcome serves) is
   * serialized once per outcome; the item's own fields are written around it. Undefined, and
   * the item walked by JSON.stringify instead, if a field no longer holds what the constructor
   * put there or a number is not a finite number.
   */
  get [JSON_TEXT](): string | undefined {
    const o = this.#outcome;
    if (
      this.status !== o.status ||
      this.reason !== o.reason ||
      this.message !== o.message ||
      this.observed !== o.observed ||
      this.expected !== o.expected ||
      this.source !== o.source ||
      typeof this.name !== 'string' ||
      typeof this.type !== 'string' ||
      typeof this.cached !== 'boolean'
    )
      return undefined;
    const latency = numberText(this.latency_ms);
    const age = numberText(this.age_s);
    const ttl = numberText(this.ttl_s);
    if (latency === undefined || age === undefined || ttl === undefined) return undefined;
    let retry = '';
    if (this.retry_after_s !== undefined) {
      const r = numberText(this.retry_after_s);
      if (r === undefined) return undefined;
      retry = `,"retry_after_s":${r}`;
    }
    let part = OUTCOME_TEXT.get(o);
    if (part === undefined) {
      const { status, reason, message, observed, expected, source } = o;
      // JSON.stringify of the same six fields in the same order: a field that is undefined is
      // left out here exactly as it is left out of the item.
      part = JSON.stringify({ status, reason, message, observed, expected, source }).slice(1, -1);
      OUTCOME_TEXT.set(o, part);
    }
    const head = `{"name":${jsonString(this.name)},"type":${jsonString(this.type)}`;
    return `${head}${part === '' ? '' : ','}${part},"latency_ms":${latency},"cached":${this.cached},"age_s":${age},"ttl_s":${ttl}${retry}}`;
  }

  get basis(): CheckOutcome['basis'] {
    return this.#outcome.basis;
  }

  get unknown_inputs(): CheckOutcome['unknown_inputs'] {
    return this.#outcome.unknown_inputs;
  }

  get components(): CheckOutcome['components'] {
    return this.#outcome.components;
  }
}

/** The evidence item for an outcome (see Evidence). */
export function result(
  name: string,
  type: string,
  outcome: CheckOutcome,
  latencyMs: number,
  cached: boolean,
  ageS: number,
): CheckResult {
  return new Evidence(name, type, outcome, latencyMs, cached, ageS);
}

function deadlineOutcome(deadlineMs: number): CheckOutcome {
  return {
    status: 'error',
    reason: 'deadline_exceeded',
    message: `No answer within the ${deadlineMs} ms deadline; the answer is cached when it arrives, so retry in 1 s.`,
    source: null,
    ttl_s: 0,
    retry_after_s: 1,
  };
}

export function createEngine(deps: {
  config: Readonly<Config>;
  metrics: Metrics;
  executor: Executor;
  shared?: SharedCache | null;
}): Engine {
  const { config, metrics, executor } = deps;
  const shared = deps.shared ?? null;
  const cache = new ResultCache(config.cacheMaxEntries);
  const sweeper = setInterval(() => cache.sweep(), SWEEP_MS).unref();
  let nextId = 0;
  /** Entries read from the shared cache: answered as cached, like a local hit. */
  const fromShared = new WeakSet<CacheEntry>();

  /**
   * What every fresh outcome goes through: the cache, for as long as its TTL says (an error has
   * TTL 0 and is never kept, except a rate limit or an open circuit, kept for its retry-after so a
   * provider that said stop is not asked again at once), and the upstream counter.
   */
  function landed(key: string, type: string, entry: CacheEntry): void {
    cache.set(key, entry);
    const upstream = upstreamLabel(type, entry.outcome);
    if (upstream !== null) {
      metrics.upstream(upstream, entry.outcome.status === 'error' ? (entry.outcome.reason ?? 'error') : 'ok');
    }
  }

  // With a shared cache, a miss first asks Redis, so checks reach the pool one await later; the
  // ones that arrive in the same turn still go as one batch.
  let queue: ExecItem[] = [];
  const queued = new Map<number, (e: CacheEntry) => void>();
  function flush(): void {
    const batch = queue;
    queue = [];
    const taskStart = performance.now();
    void executor
      .execute(batch, config.checkHardTimeoutMs, (r: ExecResult) => {
        queued.get(r.id)?.({ outcome: r.outcome, storedAt: Date.now(), latencyMs: r.latencyMs });
        queued.delete(r.id);
      })
      .finally(() => metrics.poolTask((performance.now() - taskStart) / 1000));
  }
  function submit(type: string, check: PlannedCheck['check']): Promise<CacheEntry> {
    return new Promise((resolve) => {
      const id = nextId++;
      if (queue.length === 0) setImmediate(flush);
      queue.push({ id, type, check });
      queued.set(id, resolve);
    });
  }

  /**
   * A local miss in a fleet: the result another instance stored, else the fleet-wide lock and our
   * own upstream call, else (another instance holds the lock) its result when it lands. A lock
   * that goes away without a result (an error outcome, a crash) lets us go ahead ourselves.
   */
  async function fleetMiss(fleet: SharedCache, key: string, type: string, check: PlannedCheck['check']) {
    const found = (entry: CacheEntry): CacheEntry => {
      cache.set(key, entry);
      fromShared.add(entry);
      return entry;
    };
    const stored = await fleet.get(key);
    if (stored !== undefined) return found(stored);
    let claim = await fleet.lock(key);
    if (typeof claim === 'object') return found(claim);
    if (claim === 'theirs') {
      const theirs = await fleet.wait(key, performance.now() + config.checkHardTimeoutMs + LOCK_MARGIN_MS);
      if (theirs !== undefined) return found(theirs);
      claim = await fleet.lock(key);
      if (typeof claim === 'object') return found(claim);
    }
    const mine = claim === 'mine';
    const entry = await submit(type, check);
    landed(key, type, entry);
    // The result is stored before the lock goes, so a waiter never finds neither.
    const share = entry.outcome.ttl_s > 0 ? fleet.set(key, entry) : Promise.resolve();
    if (mine) void share.then(() => fleet.unlock(key));
    return entry;
  }

  async function run(planned: PlannedCheck[], opts: RunOptions): Promise<CheckResult[]> {
    const started = performance.now();
    const out = new Array<CheckResult>(planned.length);
    const pending: Array<Promise<void>> = [];
    const batch: ExecItem[] = [];
    const waiters = new Map<number, (e: CacheEntry) => void>();

    planned.forEach((p, i) => {
      const type = p.check.type;
      const key = p.key ?? checkKey(p.check);
      const hit = cache.get(key);
      if (hit) {
        const ageS = Math.floor((Date.now() - hit.storedAt) / 1000);
        out[i] = result(p.name, type, hit.outcome, 0, true, ageS);
        metrics.cacheEvent('hit');
        metrics.check(type, hit.outcome.status, 'hit', 0);
        return;
      }
      const { promise, joined } = cache.flight(key, () =>
        shared !== null
          ? fleetMiss(shared, key, type, p.check)
          : new Promise<CacheEntry>((resolve) => {
              const id = nextId++;
              batch.push({ id, type, check: p.check });
              waiters.set(id, (entry) => {
                landed(key, type, entry);
                resolve(entry);
              });
            }),
      );
      const mode = joined ? 'join' : 'miss';
      // Without a fleet a lookup is counted at once; in a fleet, when it is known whether Redis had it.
      if (shared === null) metrics.cacheEvent(mode);
      pending.push(
        promise.then((entry) => {
          if (out[i]) return; // answered at the deadline already; the cache still got the value
          const waited = Math.round(performance.now() - started);
          if (fromShared.has(entry)) {
            const ageS = Math.floor((Date.now() - entry.storedAt) / 1000);
            out[i] = result(p.name, type, entry.outcome, waited, true, ageS);
            metrics.cacheEvent('shared');
            metrics.check(type, entry.outcome.status, 'shared', waited / 1000);
            return;
          }
          if (shared !== null) metrics.cacheEvent(mode);
          out[i] = result(p.name, type, entry.outcome, joined ? waited : entry.latencyMs, false, 0);
          metrics.check(type, entry.outcome.status, mode, (joined ? waited : entry.latencyMs) / 1000);
        }),
      );
    });

    if (batch.length > 0) {
      const taskStart = performance.now();
      void executor
        .execute(batch, config.checkHardTimeoutMs, (r: ExecResult) => {
          waiters.get(r.id)?.({ outcome: r.outcome, storedAt: Date.now(), latencyMs: r.latencyMs });
          waiters.delete(r.id);
        })
        .finally(() => metrics.poolTask((performance.now() - taskStart) / 1000));
    }

    if (pending.length > 0) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, opts.deadlineMs - (performance.now() - started)));
      });
      await Promise.race([Promise.all(pending), deadline]);
      clearTimeout(timer);
      planned.forEach((p, i) => {
        if (out[i]) return;
        out[i] = result(
          p.name,
          p.check.type,
          deadlineOutcome(opts.deadlineMs),
          Math.round(performance.now() - started),
          false,
          0,
        );
        metrics.check(p.check.type, 'error', 'miss', opts.deadlineMs / 1000);
      });
    }
    return out;
  }

  return {
    run,
    cache,
    executor,
    shared,
    close: async () => {
      clearInterval(sweeper);
      await shared?.close();
      return executor.close();
    },
  };
}
