/**
 * The cold path (bench/README.md, "Cold path"): what a fresh instance answers first, and how many
 * fresh checks a second one instance carries.
 *
 * First answers: the emulated upstreams warmed by a throwaway process (their own first answers are
 * slower than their latency), then a service process started for the measurement, its port polled
 * from the moment it is forked until `/health` says `ok`, then, at once, 20 cold decides one after
 * another (four fresh checks each, upstreams at the bench's latency); then a second fresh process
 * answers 200 bridge-risk calls one after another, each over three status pages it has never read,
 * which answer in 120 ms; then a third fresh process, whose first request is a guard, answers
 * FIRST_GUARD_ROUNDS rounds of one guard of each kind that reads the node (a simulation, an
 * authorization's delegate, a signed order), each on a token or delegate it has never seen. Every
 * latency is kept, the first included.
 *
 * Capacity ramp: after the 300 req/s scenario, the same load at rising rates, each on keys no
 * earlier step used, until p99 reaches 300 ms or an answer fails; the highest rate that held is
 * reported.
 */
import { createServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import { startStatusPage, type StatusPageEmulator } from '../test/emulators/statuspage.js';
import { generateApiKey } from '../src/billing/keys.js';
import { openStore } from '../src/store/index.js';
import { startServerChild, type Child } from './child.js';
import { fill, serviceEnv, type Row } from './session.js';
import { COLD_DECIDE, GUARD_DELEGATION, GUARD_ORDER, GUARD_SIMULATION, type Scenario } from './scenarios.js';
import type { Upstreams } from './upstreams.js';

/** How many cold decides, and bridge-risk calls, a fresh process answers for the measurement. */
export const FIRST_DECIDES = 20;
export const BRIDGE_CALLS = 200;
/** The status pages' answer delay. */
export const STATUS_PAGE_MS = 120;
/** Cold keys of the first decides: above every load's range, below the fleet's and the probe's. */
const FIRST_N = 50_000;
/**
 * Rounds of first guards, one of each kind per round, and their cold keys (after the decides' and
 * the warm-up's): each kind has a range of its own, so no guard finds a token another kind priced.
 */
export const FIRST_GUARD_ROUNDS = 10;
const FIRST_GUARD_N = FIRST_N + 100;
const guardN = (kind: number, i: number): number => FIRST_GUARD_N + 100 * kind + i;
/** The guards a fresh process answers first: each reads the node and the price provider on fresh keys. */
const FIRST_GUARDS: ReadonlyArray<readonly [string, string]> = [
  ['simulation', GUARD_SIMULATION],
  ['delegation', GUARD_DELEGATION],
  ['order', GUARD_ORDER],
];

export interface FirstAnswers {
  /** From the fork to the first `/health` that said `ok`, and the states it said before. */
  healthOkMs: number;
  healthStates: string[];
  /** Each cold decide's latency in ms, in order; NaN for one that failed. */
  decideMs: number[];
  /** Each bridge-risk call's latency in ms, in order (on a fresh process of its own). */
  bridgeMs: number[];
  /** Each guard kind's latencies in ms, in order (on a third fresh process, kinds taken in turn). */
  guardMs: Array<{ kind: string; ms: number[] }>;
  /** Answers that were not a 200 carrying `proceed`, with the first one's text. */
  failures: number;
  firstFailure: string | null;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/**
 * Forks the service on a known port and polls `/health` every 5 ms from the fork on; resolves when
 * it says `ok`, with the child (whose own start-up message may come later).
 */
async function startAndAwaitHealth(
  env: Record<string, string>,
): Promise<{ child: Promise<Child>; url: string; ms: number; states: string[] }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = startServerChild('./service.js', { ...env, PORT: String(port) });
  child.catch(() => undefined);
  const states: string[] = [];
  const deadline = t0 + 60_000;
  while (performance.now() < deadline) {
    const status = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) })
      .then(async (r) => ((await r.json()) as { status?: string }).status ?? `http ${r.status}`)
      .catch(() => null);
    if (status !== null && states.at(-1) !== status) states.push(status);
    if (status === 'ok') return { child, url, ms: Math.round(performance.now() - t0), states };
    await new Promise((r) => setTimeout(r, 5));
  }
  (await child.catch(() => null))?.proc.kill('SIGKILL');
  throw new Error(`the service did not say ok on /health within 60 s (it said ${states.join(', ') || 'nothing'})`);
}

/** An API key written to the service's database before it starts, so its first request is a decide. */
async function keyBeforeStart(databaseUrl: string): Promise<string> {
  const store = await openStore({ databaseUrl });
  try {
    const issued = generateApiKey();
    await store.createApiKey({
      id: randomUUID(),
      keyHash: issued.hash,
      prefix: issued.prefix,
      email: `first-answers-${issued.prefix}@example.com`,
      plan: 'Basic',
      requestedPlan: null,
      company: null,
      fullName: null,
      useCase: 'bench',
      website: null,
    });
    return issued.key;
  } finally {
    await store.close();
  }
}

async function timedPost(
  url: string,
  headers: Record<string, string>,
  body: string,
  note: (failure: string) => void,
): Promise<number> {
  const t = performance.now();
  try {
    const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    const ms = performance.now() - t;
    if (res.status !== 200 || !text.includes('"verdict":"proceed"')) note(`${res.status}: ${text.slice(0, 300)}`);
    return Math.round(ms * 10) / 10;
  } catch (err) {
    note((err as Error).message);
    return Number.NaN;
  }
}

/** Cold decides a throwaway process sends to warm the emulators: keys after the measured ones. */
const WARM_DECIDES = 5;

async function warmUpstreams(upstreams: Upstreams): Promise<void> {
  const env = serviceEnv(upstreams, null, {});
  const apiKey = await keyBeforeStart(env.DATABASE_URL);
  const warm = await startAndAwaitHealth(env);
  try {
    const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
    for (let i = 0; i < WARM_DECIDES; i++) {
      const body = fill(COLD_DECIDE, FIRST_N + FIRST_DECIDES + i);
      await timedPost(`${warm.url}/v1/decide`, headers, body, () => undefined);
      for (const [k, [, guard]] of FIRST_GUARDS.entries())
        await timedPost(`${warm.url}/v1/guard`, headers, fill(guard, guardN(k, FIRST_GUARD_ROUNDS + i)), () => {});
    }
  } finally {
    await (await warm.child).stop();
  }
}

export async function measureFirstAnswers(upstreams: Upstreams): Promise<FirstAnswers> {
  let failures = 0;
  let firstFailure: string | null = null;
  const note = (f: string): void => {
    failures++;
    firstFailure ??= f;
  };
  // The upstreams answer in the bench's latency only once their own code is warm: an emulator's
  // first answers (its JIT, its first connections) take several ms longer, which would be counted
  // against the service. A throwaway process asks them the same kind of cold decide first, on keys
  // the measured process never asks, so it meets upstreams as warm as a real one.
  await warmUpstreams(upstreams);
  // The decides: a fresh process with a key already in its database.
  const env = serviceEnv(upstreams, null, {});
  const apiKey = await keyBeforeStart(env.DATABASE_URL);
  const first = await startAndAwaitHealth(env);
  const decideMs: number[] = [];
  try {
    const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
    for (let i = 0; i < FIRST_DECIDES; i++) {
      const body = fill(COLD_DECIDE, FIRST_N + i);
      decideMs.push(await timedPost(`${first.url}/v1/decide`, headers, body, note));
    }
  } finally {
    await (await first.child).stop();
  }

  // The bridge-risk calls: another fresh process, three status pages at 120 ms, fresh URLs per call.
  const pages: StatusPageEmulator[] = await Promise.all([startStatusPage(), startStatusPage(), startStatusPage()]);
  const bridgeMs: number[] = [];
  try {
    for (const p of pages) p.fault = { delayMs: STATUS_PAGE_MS };
    const second = await startAndAwaitHealth(
      serviceEnv(upstreams, null, { BILLING: 'off', ALLOW_PRIVATE_TARGETS: 'true' }),
    );
    try {
      for (let i = 0; i < BRIDGE_CALLS; i++) {
        const body = JSON.stringify({
          bridge_status_urls: pages.map((p) => `${p.url}/api/v2/status.json?call=${i}`),
        });
        bridgeMs.push(
          await timedPost(
            `${second.url}/v1/agents/bridge-risk/analyze`,
            { 'content-type': 'application/json' },
            body,
            note,
          ),
        );
      }
    } finally {
      await (await second.child).stop();
    }
  } finally {
    await Promise.all(pages.map((p) => p.close()));
  }

  // The guards: a third fresh process with a key already in its database, its first request a guard.
  const guardEnv = serviceEnv(upstreams, null, {});
  const guardKey = await keyBeforeStart(guardEnv.DATABASE_URL);
  const third = await startAndAwaitHealth(guardEnv);
  const guardMs = FIRST_GUARDS.map(([kind]) => ({ kind, ms: [] as number[] }));
  try {
    const headers = { 'content-type': 'application/json', 'x-api-key': guardKey };
    for (let i = 0; i < FIRST_GUARD_ROUNDS; i++)
      for (const [k, [, guard]] of FIRST_GUARDS.entries())
        guardMs[k]?.ms.push(await timedPost(`${third.url}/v1/guard`, headers, fill(guard, guardN(k, i)), note));
  } finally {
    await (await third.child).stop();
  }
  return { healthOkMs: first.ms, healthStates: first.states, decideMs, bridgeMs, guardMs, failures, firstFailure };
}

/** The rates the ramp tries after the 300 req/s scenario, in order. */
export const RAMP_RATES = [400, 500, 650, 800, 1000, 1300] as const;
/** Where the ramp's keys start: no scenario on the same service uses them. */
const RAMP_N = 10_000;

export interface RampStep {
  rate: number;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export interface Ramp {
  /**
   * The highest rate answered in full (at least RAMP_ANSWERED of it) with p99 under `p99Ms` and
   * no errors (0: none).
   */
  highestRate: number;
  p99Ms: number;
  steps: RampStep[];
}

/** A step holds only if the service answered at least this share of the rate asked. */
export const RAMP_ANSWERED = 0.95;

/**
 * Connections for a step at `rate`: enough that each carries one request at a time at 300 ms a
 * request, so the load generator, not the service, never caps the rate answered (30 connections
 * at 80 ms carry at most 375 req/s).
 */
export const rampConnections = (rate: number, base: number): number => Math.max(base, Math.ceil(rate * 0.3));

/**
 * Runs `base` at each of RAMP_RATES (short runs) until one misses; never past the key range. A step
 * misses on an error, on p99 at or over `p99Ms`, or on answering less than RAMP_ANSWERED of its rate.
 */
export async function rampCapacity(
  run: (s: Scenario, nStart: number) => Promise<Row>,
  base: Scenario,
  p99Ms: number,
  quick: boolean,
): Promise<Ramp> {
  const steps: RampStep[] = [];
  let highest = 0;
  let n = RAMP_N;
  const durationSec = quick ? 2 : 5;
  const { nStart: _own, ...load } = base;
  for (const rate of RAMP_RATES) {
    const s: Scenario = {
      ...load,
      overallRate: rate,
      connections: rampConnections(rate, load.connections),
      durationSec,
      warmupSec: 1,
    };
    const row = await run(s, n);
    n += Math.ceil(rate * (durationSec + 1) * 1.2) + 10;
    const r = row.result;
    if (r === null) break;
    steps.push({ rate, connections: s.connections, rps: r.rps, p50: r.p50, p99: r.p99, errors: r.errors });
    if (r.errors > 0 || r.p99 >= p99Ms || r.rps < rate * RAMP_ANSWERED) break;
    highest = rate;
    if (n > FIRST_N - 15_000) break;
  }
  return { highestRate: highest, p99Ms, steps };
}
