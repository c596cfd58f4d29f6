/**
 * Every Prometheus metric the service exports, on one prom-client Registry per call so tests can
 * build several apps side by side. Record calls sit on the request hot path, so each one resolves
 * its labelled child through nested Maps (no label object or string built per call) and the
 * gauges that describe other components (pool, ledger) are read only when scraped.
 *
 * Labels carry closed vocabularies only: route patterns, check types, reason codes, plan names.
 * Each metric caps its distinct label sets so a caller that passes a raw URL by mistake cannot
 * grow the registry without bound; past the cap every new value is reported as "other".
 */
import { Counter, type CounterConfiguration, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { LeafHistogram } from './metric-histogram.js';
import type { CircuitState } from './net/breaker.js';
import type { Verdict } from './wire.js';

/** hit: this instance's cache; shared: the fleet's (Redis); join: a call already in flight. */
export type CacheOutcome = 'hit' | 'miss' | 'join' | 'shared';
export interface PoolSnapshot {
  queueSize: number;
  utilization: number;
  threads: number;
}

export interface Metrics {
  registry: Registry;
  httpRequest(route: string, method: string, status: number, seconds: number): void;
  verdict(endpoint: string, verdict: Verdict): void;
  check(type: string, status: string, cache: CacheOutcome, seconds: number): void;
  cacheEvent(event: CacheOutcome): void;
  /** upstream: price_provider|dex_provider|sourcify|etherscan|rpc|http_target|bridge_status; outcome: ok or a reason code. */
  upstream(upstream: string, outcome: string): void;
  poolTask(seconds: number): void;
  setPoolSource(fn: () => PoolSnapshot): void;
  payment(outcome: string): void;
  setLedgerSource(fn: () => Promise<Record<string, number>>): void;
  quotaRejection(plan: string): void;
  /** An Idempotency-Key's outcome: first, replayed, conflict, in_flight (docs/policies.md §9). */
  idempotency(outcome: string): void;
  /** Verdict-log rows by outcome: written, retried (a batch failed; kept), dropped (queue full) (docs/policies.md §10). */
  verdictRows(outcome: string, n: number): void;
  circuitState(upstream: string, state: CircuitState): void;
  /** The fleet cache (Redis): one command's outcome. */
  sharedCache(op: string, outcome: string): void;
  /** The fleet cache's state, read when scraped: 'ok', 'degraded', or null when none is configured. */
  setSharedCacheSource(fn: () => 'ok' | 'degraded' | null): void;
  /** A screening list's refresh: outcome ok, refused or failed (docs/screening.md §6). */
  screeningRefresh(list: string, outcome: 'ok' | 'refused' | 'failed'): void;
  /** Entries of a fetched list that were skipped as malformed. */
  screeningMalformed(list: string, n: number): void;
  /** A screening hit: the kind of list or rule (sanctions, blocklist, lookalike, sweeper), never an address. */
  screeningHit(rule: string): void;
  /** The lists in use, read when scraped: name, kind, size, age in seconds. */
  setScreeningSource(fn: () => ReadonlyArray<{ name: string; kind: string; size: number; ageS: number | null }>): void;
  metricsText(): Promise<string>;
  contentType: string;
}

/** Request latency: resolves 5 ms to 2.5 s, with a bucket edge at the 300 ms alerting target. */
export const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5];
/** Check and pool task latency: cache hits are sub-millisecond, upstream calls end at the hard timeout. */
export const TASK_BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const MAX_LABEL_SETS = 500;
const CIRCUIT_STATES: readonly CircuitState[] = ['closed', 'open', 'half_open'];

/** A labelled child resolved once per distinct label tuple, keyed by nested Maps. */
type Leaf<C> = { child: C };
class ChildCache<C> {
  private readonly root = new Map<string, unknown>();
  private size = 0;
  private overflow: C | undefined;
  constructor(private readonly make: (values: string[]) => C) {}

  get(...values: string[]): C {
    let node = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = node.get(values[i]) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        node.set(values[i], next);
      }
      node = next;
    }
    const leaf = node.get(values[last]) as Leaf<C> | undefined;
    if (leaf !== undefined) return leaf.child;
    return this.add(node, values);
  }

  private add(node: Map<string, unknown>, values: string[]): C {
    // Past the cap every new tuple shares one "other" child and nothing more is stored.
    if (this.size >= MAX_LABEL_SETS) {
      this.overflow ??= this.make(values.map(() => 'other'));
      return this.overflow;
    }
    this.size++;
    const leaf: Leaf<C> = { child: this.make(values) };
    node.set(values[values.length - 1], leaf);
    return leaf.child;
  }
}

/**
 * A counter's labelled child that counts in a plain number. prom-client resolves a child's labels
 * on every inc (validation and a hash of the label object), a measurable share of a cached answer
 * that counts nine things; the counter's collect, run on every read of the counter (a scrape),
 * hands each tally's count to prom-client first, so a read always sees every inc made before it.
 */
class Tally {
  n = 0;
  constructor(readonly child: { inc(value?: number): void }) {}
  inc(): void {
    this.n++;
  }
}

/**
 * A Counter whose labelled children are Tallies, resolved once per label tuple (ChildCache); its
 * collect hands every tally's count to prom-client before the counter is read.
 */
function talliedCounter(config: CounterConfiguration<string>): ChildCache<Tally> {
  const list: Tally[] = [];
  const counter = new Counter({
    ...config,
    collect() {
      for (const t of list) {
        if (t.n === 0) continue;
        const n = t.n;
        t.n = 0;
        t.child.inc(n);
      }
    },
  });
  return new ChildCache((v) => {
    const t = new Tally(counter.labels(...v));
    list.push(t);
    return t;
  });
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // These three default gauges end in _total, which Prometheus reserves for counters (promtool
  // rejects them); the same counts stay available, by type, in nodejs_active_{handles,requests,resources}.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
    registry.removeSingleMetric(name);
  const reg = [registry];

  const http = new LeafHistogram({
    name: 'preflight_http_request_duration_seconds',
    help: 'HTTP request duration by route pattern, method and status.',
    labelNames: ['route', 'method', 'status'],
    buckets: HTTP_BUCKETS,
    registers: reg,
  });
  const verdictChildren = talliedCounter({
    name: 'preflight_verdicts_total',
    help: 'Verdicts returned, by endpoint and verdict.',
    labelNames: ['endpoint', 'verdict'],
    registers: reg,
  });
  const checkChildren = talliedCounter({
    name: 'preflight_checks_total',
    help: 'Checks evaluated, by check type and result status.',
    labelNames: ['type', 'status'],
    registers: reg,
  });
  const checkDuration = new LeafHistogram({
    name: 'preflight_check_duration_seconds',
    help: 'Check duration by check type and cache outcome (hit, shared, miss, join).',
    labelNames: ['type', 'cache'],
    buckets: TASK_BUCKETS,
    registers: reg,
  });
  const cacheChildren = talliedCounter({
    name: 'preflight_cache_lookups_total',
    help: 'Check cache lookups by result: hit, shared (found in the fleet cache), miss, or join of a call in flight.',
    labelNames: ['result'],
    registers: reg,
  });
  const upstreamChildren = talliedCounter({
    name: 'preflight_upstream_requests_total',
    help: 'Upstream calls by upstream and outcome (ok or a reason code).',
    labelNames: ['upstream', 'outcome'],
    registers: reg,
  });
  const poolTask = new Histogram({
    name: 'preflight_pool_task_duration_seconds',
    help: 'Worker pool task duration, queue wait included.',
    buckets: TASK_BUCKETS,
    registers: reg,
  });
  const paymentChildren = talliedCounter({
    name: 'preflight_payments_total',
    help: 'x402 payment attempts by outcome.',
    labelNames: ['outcome'],
    registers: reg,
  });
  const quotaChildren = talliedCounter({
    name: 'preflight_quota_rejections_total',
    help: 'Requests rejected for an exhausted plan quota, by plan.',
    labelNames: ['plan'],
    registers: reg,
  });
  const idempotencyChildren = talliedCounter({
    name: 'preflight_idempotency_keys_total',
    help: 'Keyed POSTs carrying an Idempotency-Key, by outcome: first, replayed, conflict, in_flight.',
    labelNames: ['outcome'],
    registers: reg,
  });
  // Counted per batch, not per answer: a plain counter.
  const verdictRows = new Counter({
    name: 'preflight_verdict_log_rows_total',
    help: 'Verdict-log rows by outcome: written, retried (its batch failed and is kept), dropped (the queue was full).',
    labelNames: ['outcome'],
    registers: reg,
  });
  const circuit = new Gauge({
    name: 'preflight_circuit_breaker_state',
    help: 'Circuit breaker state per upstream: 1 for the current state, 0 for the others.',
    labelNames: ['upstream', 'state'],
    registers: reg,
  });

  let poolSource: (() => PoolSnapshot) | null = null;
  const readPool = (pick: (s: PoolSnapshot) => number) =>
    function (this: Gauge) {
      if (poolSource === null) return;
      try {
        this.set(pick(poolSource()));
      } catch {
        sourceErrors.inc({ source: 'pool' });
      }
    };
  new Gauge({
    name: 'preflight_pool_queue_size',
    help: 'Tasks waiting in the worker pool queue.',
    registers: reg,
    collect: readPool((s) => s.queueSize),
  });
  new Gauge({
    name: 'preflight_pool_utilization_ratio',
    help: 'Worker pool utilisation, 0 to 1.',
    registers: reg,
    collect: readPool((s) => s.utilization),
  });
  new Gauge({
    name: 'preflight_pool_threads',
    help: 'Worker pool threads (0 runs checks inline).',
    registers: reg,
    collect: readPool((s) => s.threads),
  });

  let ledgerSource: (() => Promise<Record<string, number>>) | null = null;
  let ledgerRead: Promise<void> = Promise.resolve();
  new Gauge({
    name: 'preflight_payment_ledger_entries',
    help: 'Payments in the ledger by state.',
    labelNames: ['state'],
    registers: reg,
    collect() {
      if (ledgerSource === null) return;
      const read = ledgerSource;
      ledgerRead = (async () => {
        try {
          const states = await read();
          this.reset();
          for (const [state, n] of Object.entries(states)) this.set({ state }, n);
        } catch {
          // A failed read leaves the last values in place and is counted, never fails the scrape.
          sourceErrors.inc({ source: 'ledger' });
        }
      })();
      return ledgerRead;
    },
  });
  // Registered after the sources and waiting for the ledger read, so a failure shows in the same scrape.
  const sourceErrors = new Counter({
    name: 'preflight_metrics_source_errors_total',
    help: 'Scrape-time metric sources that failed to answer.',
    labelNames: ['source'],
    registers: reg,
    collect: () => ledgerRead,
  });

  const sharedChildren = talliedCounter({
    name: 'preflight_shared_cache_ops_total',
    help: 'Fleet cache (Redis) commands by operation (get, set, lock, wait) and outcome (hit, miss, ok, busy, corrupt, error, timeout).',
    labelNames: ['op', 'outcome'],
    registers: reg,
  });
  let sharedSource: (() => 'ok' | 'degraded' | null) | null = null;
  new Gauge({
    name: 'preflight_shared_cache_up',
    help: 'Whether the fleet cache (Redis) is in use: 1 ok, 0 degraded (answers go on without it); absent when REDIS_URL is unset.',
    registers: reg,
    collect() {
      const state = sharedSource?.() ?? null;
      if (state === null) this.reset();
      else this.set(state === 'ok' ? 1 : 0);
    },
  });

  const screeningRefreshChildren = talliedCounter({
    name: 'preflight_screening_refresh_total',
    help: 'Screening list refreshes by list (the sanctions list, or a blocklist by its URL) and outcome (ok, refused, failed).',
    labelNames: ['list', 'outcome'],
    registers: reg,
  });
  const screeningMalformed = new Counter({
    name: 'preflight_screening_malformed_total',
    help: 'Entries of a fetched screening list skipped as malformed, by list.',
    labelNames: ['list'],
    registers: reg,
  });
  const screeningHitChildren = talliedCounter({
    name: 'preflight_screening_hits_total',
    help: 'Screened addresses that failed, by rule (sanctions, blocklist, lookalike, sweeper).',
    labelNames: ['rule'],
    registers: reg,
  });
  let screeningSource: Parameters<Metrics['setScreeningSource']>[0] | null = null;
  new Gauge({
    name: 'preflight_screening_list_size',
    help: 'Distinct addresses of each screening list in use.',
    labelNames: ['list', 'kind'],
    registers: reg,
    collect() {
      this.reset();
      for (const l of screeningSource?.() ?? []) this.set({ list: l.name, kind: l.kind }, l.size);
    },
  });
  new Gauge({
    name: 'preflight_screening_list_age_seconds',
    help: 'Seconds since each screening list in use was last confirmed current (its last successful fetch, or the snapshot date).',
    labelNames: ['list', 'kind'],
    registers: reg,
    collect() {
      this.reset();
      for (const l of screeningSource?.() ?? []) if (l.ageS !== null) this.set({ list: l.name, kind: l.kind }, l.ageS);
    },
  });

  const httpChildren = new ChildCache((v) => http.leaf(v));
  const checkDurationChildren = new ChildCache((v) => checkDuration.leaf(v));
  // Status codes are few; their label strings are made once.
  const statusText: string[] = [];
  for (let s = 100; s < 600; s++) statusText[s] = String(s);

  return {
    registry,
    contentType: registry.contentType,
    httpRequest(route, method, status, seconds) {
      httpChildren.get(route, method, statusText[status] ?? 'other').observe(seconds);
    },
    verdict(endpoint, verdict) {
      verdictChildren.get(endpoint, verdict).inc();
    },
    check(type, status, cacheOutcome, seconds) {
      checkChildren.get(type, status).inc();
      checkDurationChildren.get(type, cacheOutcome).observe(seconds);
    },
    cacheEvent(event) {
      cacheChildren.get(event).inc();
    },
    upstream(upstream, outcome) {
      upstreamChildren.get(upstream, outcome).inc();
    },
    poolTask(seconds) {
      poolTask.observe(seconds);
    },
    setPoolSource(fn) {
      poolSource = fn;
    },
    payment(outcome) {
      paymentChildren.get(outcome).inc();
    },
    setLedgerSource(fn) {
      ledgerSource = fn;
    },
    quotaRejection(plan) {
      quotaChildren.get(plan).inc();
    },
    idempotency(outcome) {
      idempotencyChildren.get(outcome).inc();
    },
    verdictRows(outcome, n) {
      verdictRows.labels(outcome).inc(n);
    },
    circuitState(upstream, state) {
      for (const s of CIRCUIT_STATES) circuit.set({ upstream, state: s }, s === state ? 1 : 0);
    },
    sharedCache(op, outcome) {
      sharedChildren.get(op, outcome).inc();
    },
    setSharedCacheSource(fn) {
      sharedSource = fn;
    },
    screeningRefresh(list, outcome) {
      screeningRefreshChildren.get(list, outcome).inc();
    },
    screeningMalformed(list, n) {
      if (n > 0) screeningMalformed.inc({ list }, n);
    },
    screeningHit(rule) {
      screeningHitChildren.get(rule).inc();
    },
    setScreeningSource(fn) {
      screeningSource = fn;
    },
    metricsText() {
      return registry.metrics();
    },
  };
}
