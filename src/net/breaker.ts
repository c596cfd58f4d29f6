/**
 * Circuit breakers, one per upstream host: after FAILURES_TO_OPEN failures in a row (within
 * FAILURE_WINDOW_MS) the host is not called for COOL_DOWN_MS and callers get `circuit_open` at
 * once; then ONE call goes through as a probe, and its result closes or reopens the circuit.
 *
 * What fails: a timeout, a reset or refused connection, an unparsable or cut-short answer, an
 * HTTP 5xx. What does not: any other answer (a 404 "not verified", a 429, a provider's own error
 * envelope) - the host is up. A call cancelled by its caller counts as neither.
 *
 * Where the state lives: each thread that runs checks (every worker, or the main thread when
 * POOL_THREADS=0) keeps its own breakers, in a map bounded by MAX_TRACKED (least recently used
 * first out). Sharing them across threads would need a lock-free table in shared memory; with
 * per-thread state a host may see up to FAILURES_TO_OPEN failures per thread before every thread
 * stops calling it, which is the price of that simplicity. Every state change is broadcast on a
 * BroadcastChannel; the main thread's `watchCircuits` (wired in compose.ts) folds them into one
 * state per metric label - the worst among that label's hosts, last report per host winning.
 *
 * Keys: `scope|label|host:port`. A caller's URL (scope `target`) never shares a breaker with a
 * configured provider (scope `provider`), even on the same host, so a caller cannot open a
 * provider's circuit. Metric labels are the closed set CIRCUIT_LABELS; hosts never leave this file
 * except in the (in-process) broadcast.
 *
 * Breakers belong to the running service: on the main thread they are on while a service watches
 * them (compose.ts), and pool workers exist only inside one. A process that uses the upstream
 * clients without the service (a script, a unit test of a client) makes plain calls, with no
 * state carried from one call to the next.
 */
import { BroadcastChannel, isMainThread } from 'node:worker_threads';
import type { UpstreamErrorReason, UpstreamFail } from './result.js';
import { OldestFirst } from '../oldest-first.js';

/** A host's circuit: closed (calls go), open (answered fast without a call), half_open (one probe). */
export type CircuitState = 'closed' | 'open' | 'half_open';

export const FAILURES_TO_OPEN = 5;
export const FAILURE_WINDOW_MS = 30_000;
export const COOL_DOWN_MS = 5_000;
const MAX_TRACKED = 1024;
const CHANNEL = 'preflight:circuit';

/** Labels of the circuit gauge: configured providers, the operator's RPC, the x402 facilitator, and caller-supplied targets. */
export const CIRCUIT_LABELS = [
  'price_provider',
  'dex_provider',
  'sourcify',
  'etherscan',
  'rpc',
  'rpc_target',
  'http_target',
  'facilitator',
] as const;
export type CircuitLabel = (typeof CIRCUIT_LABELS)[number];

/** How the breaker counts one call against its host: for it, against it, or not at all. */
export type CallClass = 'success' | 'failure' | 'ignore';
export type Admission = { ok: true; probe: boolean } | { ok: false; retryAfterMs: number };

/** The state machine of one host, with the clock injected. */
export class CircuitBreaker {
  state: CircuitState = 'closed';
  private failures = 0;
  private firstFailureAt = 0;
  private openedAt = 0;
  private probing = false;

  constructor(private readonly onChange: (s: CircuitState) => void = () => {}) {}

  admit(now: number): Admission {
    if (this.state === 'closed') return { ok: true, probe: false };
    if (this.state === 'open') {
      const left = this.openedAt + COOL_DOWN_MS - now;
      if (left > 0) return { ok: false, retryAfterMs: left };
      this.move('half_open');
    }
    // Half open: one probe at a time; everyone else is answered fast until it reports.
    if (this.probing) return { ok: false, retryAfterMs: 1000 };
    this.probing = true;
    return { ok: true, probe: true };
  }

  record(probe: boolean, cls: CallClass, now: number): void {
    if (probe) this.probing = false;
    if (cls === 'ignore') return;
    if (this.state === 'half_open') {
      // Only the probe decides; a call admitted before the circuit opened reports too late to count.
      if (!probe) return;
      if (cls === 'success') {
        this.failures = 0;
        this.move('closed');
      } else {
        this.open(now);
      }
      return;
    }
    if (this.state !== 'closed') return;
    if (cls === 'success') {
      this.failures = 0;
      return;
    }
    if (this.failures === 0 || now - this.firstFailureAt > FAILURE_WINDOW_MS) {
      this.failures = 0;
      this.firstFailureAt = now;
    }
    if (++this.failures >= FAILURES_TO_OPEN) this.open(now);
  }

  private open(now: number): void {
    this.openedAt = now;
    this.move('open');
  }

  private move(s: CircuitState): void {
    if (s === this.state) return;
    this.state = s;
    this.onChange(s);
  }
}

interface Report {
  label: string;
  key: string;
  state: CircuitState;
}

let channel: BroadcastChannel | null = null;
function broadcast(r: Report): void {
  if (channel === null) {
    channel = new BroadcastChannel(CHANNEL);
    channel.unref();
  }
  channel.postMessage(r);
}

const breakers = new Map<string, CircuitBreaker>();
const breakersOldest = new OldestFirst(breakers);
let watchers = 0;
const enabled = (): boolean => !isMainThread || watchers > 0;

function breakerFor(label: string, key: string): CircuitBreaker {
  const b = breakers.get(key) ?? new CircuitBreaker((state) => broadcast({ label, key, state }));
  breakers.delete(key); // re-inserted: the map's order is least recently used first
  breakers.set(key, b);
  const evicted = breakers.size > MAX_TRACKED ? breakersOldest.evict() : undefined;
  if (evicted !== undefined) {
    const [oldKey, old] = evicted;
    // Forgotten means closed: the next call goes through.
    if (old.state !== 'closed') broadcast({ label: oldKey.split('|')[1] ?? 'other', key: oldKey, state: 'closed' });
  }
  return b;
}

/** host:port of a URL, the port spelled out. */
export function hostPort(url: URL): string {
  return `${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
}

export interface CircuitCall {
  scope: 'provider' | 'target';
  label: string;
  /** host:port */
  host: string;
}

/**
 * Runs `call` through the host's breaker: answers `circuit_open` without calling while it is
 * open, otherwise records `classify(result)`.
 */
export async function throughCircuit<R>(
  c: CircuitCall,
  source: string,
  call: () => Promise<R>,
  classify: (r: R) => CallClass,
): Promise<R | UpstreamFail> {
  if (!enabled()) return call();
  const b = breakerFor(c.label, `${c.scope}|${c.label}|${c.host}`);
  const a = b.admit(performance.now());
  if (!a.ok) {
    const retryAfterS = Math.max(1, Math.ceil(a.retryAfterMs / 1000));
    // A fragment, like the transport's messages: each client words the sentence around it.
    const message = `circuit breaker open after ${FAILURES_TO_OPEN} failures in a row, not called; next try in ${retryAfterS} s`;
    return { ok: false, reason: 'circuit_open', message, source, latencyMs: 0, retryAfterS };
  }
  let cls: CallClass = 'ignore';
  try {
    const r = await call();
    cls = classify(r);
    return r;
  } finally {
    b.record(a.probe, cls, performance.now());
  }
}

/** True when the signal was aborted by its owner rather than by a time limit. */
export function cancelled(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && (signal.reason as { name?: string } | undefined)?.name !== 'TimeoutError';
}

/** Whether a failed call speaks against the host: no answer, or no usable one. */
export function failureClass(reason: UpstreamErrorReason, status?: number): CallClass {
  switch (reason) {
    case 'upstream_timeout':
    case 'upstream_unreachable':
    case 'upstream_bad_response':
      return 'failure';
    case 'upstream_http_error':
      return (status ?? 0) >= 500 ? 'failure' : 'success';
    case 'target_forbidden':
    case 'circuit_open':
      return 'ignore'; // no call was made
    default:
      return 'success'; // the host answered: a 429, a provider's own error, redirects
  }
}

/** How the breaker counts an UpstreamResult whose data carries the HTTP status. */
export function hostClass(r: { ok: true; data: { status: number } } | UpstreamFail): CallClass {
  if (r.ok) return r.data.status >= 500 ? 'failure' : 'success';
  return failureClass(r.reason, r.status);
}

const RANK: Readonly<Record<CircuitState, number>> = { closed: 0, half_open: 1, open: 2 };
const MAX_WATCHED = 4096;

/**
 * Main thread: follows every thread's breakers and calls `onState(label, state)` when a label's
 * folded state changes. Returns a stop function.
 */
export function watchCircuits(onState: (label: CircuitLabel | 'other', state: CircuitState) => void): () => void {
  const known = new Set<string>(CIRCUIT_LABELS);
  const hosts = new Map<string, Map<string, CircuitState>>(); // label → key → state (not closed)
  const folded = new Map<string, CircuitState>();
  let watched = 0;
  const ch = new BroadcastChannel(CHANNEL);
  ch.unref();
  watchers++;
  ch.onmessage = (e: unknown) => {
    const r = (e as { data: Report }).data;
    const label = known.has(r.label) ? (r.label as CircuitLabel) : 'other';
    let m = hosts.get(label);
    if (!m) {
      m = new Map();
      hosts.set(label, m);
    }
    if (m.delete(r.key)) watched--;
    if (r.state !== 'closed' && watched < MAX_WATCHED) {
      m.set(r.key, r.state);
      watched++;
    }
    let worst: CircuitState = 'closed';
    for (const s of m.values()) if (RANK[s] > RANK[worst]) worst = s;
    if ((folded.get(label) ?? 'closed') === worst) return;
    folded.set(label, worst);
    onState(label, worst);
  };
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    watchers--;
    ch.close();
  };
}
