/**
 * One scenario against one running server: a probe request that must get the expected status
 * (so a miswired scenario is reported as such, not measured), then the load in its own process,
 * with the upstream calls it caused counted on the side.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROBE_N, type Upstreams } from './upstreams.js';
import type { PaymentRig } from './payments.js';
import type { Scenario } from './scenarios.js';
import type { LoadJob, LoadResult } from './load.js';
import { cpuSeconds, runLoadInChild } from './child.js';
import { scrape } from './scrape.js';

export interface Row {
  name: string;
  about: string;
  load: string;
  result: LoadResult | null;
  note?: string;
  upstreamCalls: Record<string, number>;
  /** Server CPU per answered request over warm-up and run, in ms (Linux). */
  cpuMsPerRequest: number | null;
  /** The same for the service's event-loop thread alone (Linux). */
  loopMsPerRequest: number | null;
  /** Paid scenarios: the payment ledger once settlement had up to 60 s to finish. */
  ledger?: Record<string, number>;
  /** Interleaved scenarios: each round's req/s in round order (0 for a run that failed). */
  rounds?: number[];
  /** Interleaved scenarios: each round's server CPU ms per answer (null where unknown). */
  cpuRounds?: Array<number | null>;
  /** The service's resident memory after the scenario, in MB (its /metrics). */
  rssMb?: number;
}

/** The ledger's state counts from the service's /metrics. */
async function ledger(url: string): Promise<Record<string, number>> {
  const text = await scrape(url);
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^preflight_payment_ledger_entries\{state="(\w+)"\} (\S+)$/gm))
    out[m[1]] = Number(m[2]);
  return out;
}

/** Waits until no payment is still `verified` or `settling` (at most `ms`), then the counts. */
async function settledLedger(url: string, ms: number): Promise<Record<string, number>> {
  const end = Date.now() + ms;
  for (;;) {
    const counts = await ledger(url);
    if ((counts.verified ?? 0) + (counts.settling ?? 0) === 0 || Date.now() >= end) return counts;
    await new Promise((r) => setTimeout(r, 500));
  }
}

const root = mkdtempSync(join(tmpdir(), 'preflight-bench-'));
process.once('exit', () => rmSync(root, { recursive: true, force: true }));
let dbs = 0;

/** The service's environment: loopback only, emulated upstreams, a fresh SQLite file, billing on. */
export function serviceEnv(
  upstreams: Upstreams,
  rig: PaymentRig | null,
  overrides: Record<string, string>,
): Record<string, string> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DATABASE_URL: `sqlite:${join(root, `service-${dbs++}.db`)}`,
    BILLING: 'true',
    // One key carries the whole run; the free tier's monthly quota must not end it early.
    FREE_TIER_MONTHLY_LIMIT: '1000000000',
    SIGNUPS_PER_HOUR: '1000',
    X402_MAX_TIMEOUT_SECONDS: '60',
    ...upstreams.env,
    ...(rig?.env ?? {}),
    ...Object.fromEntries(
      Object.entries(overrides).map(([k, v]) => [k, v.replace('{{BLOCKLIST}}', upstreams.blocklistUrl)]),
    ),
  };
}

/** A free API key from the service's own signup endpoint, or null when it has none. */
export async function signup(url: string): Promise<string | null> {
  const res = await fetch(`${url}/v1/api-keys/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bench@example.com', full_name: 'Bench', use_case: 'load test' }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json().catch(() => null)) as { api_key?: string } | null;
  return res.ok && typeof body?.api_key === 'string' ? body.api_key : null;
}

export function describeLoad(s: Scenario): string {
  return `${s.connections} conn, ${s.overallRate === undefined ? 'max rate' : `${s.overallRate} req/s`}, ${s.durationSec} s`;
}

/** Fills the body template the way the load process does, for the probe and the first answers. */
export const fill = (body: string, n: number): string =>
  body.replace(/\{\{n(?::(\d+))?\}\}/g, (_m, w?: string) => String(n).padStart(Number(w ?? 0), '0'));

interface Ctx {
  pid?: number;
  url: string;
  apiKey: string | null;
  upstreams: Upstreams;
  rig: PaymentRig | null;
  billing: boolean;
}

export function scenarioRunner(ctx: Ctx): (s: Scenario, nStart: number) => Promise<Row> {
  return async (s, nStart) => {
    const row: Row = {
      name: s.name,
      about: s.about.replace('LATENCY', String(ctx.upstreams.latencyMs)),
      load: describeLoad(s),
      result: null,
      upstreamCalls: {},
      cpuMsPerRequest: null,
      loopMsPerRequest: null,
    };
    const headers: Record<string, string> = { 'content-type': 'application/json', ...s.headers };
    let headerPool: LoadJob['headerPool'];
    if (!ctx.billing && s.auth === 'x402') return { ...row, note: 'billing off: nothing to pay' };
    if (ctx.billing && s.auth === 'key') {
      if (ctx.apiKey === null) return { ...row, note: 'no API key: the service has no working signup' };
      headers['x-api-key'] = ctx.apiKey;
    }
    let probeHeaders = headers;
    if (s.auth === 'x402') {
      if (ctx.rig === null) return { ...row, note: 'no payment rig' };
      const rate = s.overallRate ?? 200;
      const values = await ctx.rig.headers(Math.ceil(rate * (s.durationSec + s.warmupSec) * 1.1) + 1, 80);
      probeHeaders = { ...headers, 'x-payment': values.pop()! };
      headerPool = { name: 'x-payment', values };
    }
    // The probe uses a key outside the loads' ranges so it never warms the cache for them. A fresh
    // server may miss its deadline while its workers start; the late answer is cached, so retry.
    let last = '';
    for (let attempt = 0; attempt < 5; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 500));
      // A probe with no answer is the scenario's failure, named in its row, not the whole run's.
      const probe = await fetch(`${ctx.url}${s.path}`, {
        method: 'POST',
        headers: probeHeaders,
        body: fill(s.body, PROBE_N),
        signal: AbortSignal.timeout(10_000),
      })
        .then(async (res) => ({ status: res.status, text: await res.text() }))
        .catch((err: Error) => ({ status: 0, text: `${err.name}: ${err.message}` }));
      const { text } = probe;
      last =
        probe.status === s.expectStatus && text.includes(s.expectBody) && text.includes(s.probeAlso ?? '')
          ? ''
          : probe.status === 0
            ? `probe got no answer (${text})`
            : `probe answered ${probe.status} (expected ${s.expectStatus} with ${s.expectBody}${s.probeAlso ? ` and ${s.probeAlso}` : ''}): ${text.slice(0, 300)}`;
      if (last === '' || s.auth === 'x402') break; // a payment header buys one answer only
    }
    if (last !== '') return { ...row, note: last };

    ctx.upstreams.reset();
    const cpuBefore = cpuSeconds(ctx.pid);
    const loopBefore = cpuSeconds(ctx.pid, true);
    row.result = await runLoadInChild({
      url: ctx.url,
      path: s.path,
      method: 'POST',
      headers,
      body: s.body,
      headerPool,
      nStart,
      expectStatus: s.expectStatus,
      expectBodyIncludes: s.expectBody,
      connections: s.connections,
      durationSec: s.durationSec,
      warmupSec: s.warmupSec,
      overallRate: s.overallRate,
    });
    row.upstreamCalls = ctx.upstreams.counts();
    const cpuAfter = cpuSeconds(ctx.pid);
    const loopAfter = cpuSeconds(ctx.pid, true);
    const answered = row.result.requests + row.result.warmupRequests;
    const perAnswer = (before: number | null, after: number | null): number | null =>
      before !== null && after !== null && answered > 0
        ? Math.round((((after - before) * 1000) / answered) * 1000) / 1000
        : null;
    row.cpuMsPerRequest = perAnswer(cpuBefore, cpuAfter);
    row.loopMsPerRequest = perAnswer(loopBefore, loopAfter);
    if (s.auth === 'x402') row.ledger = await settledLedger(ctx.url, 60_000);
    return row;
  };
}

/** The run with the median throughput (a run that failed counts as the slowest), noting them all. */
export function medianRun(runs: Row[]): Row {
  const rps = (r: Row): number => r.result?.rps ?? -1;
  const sorted = [...runs].sort((a, b) => rps(a) - rps(b));
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  const all = runs.map((r) => (r.result ? String(r.result.rps) : 'failed')).join(', ');
  return {
    ...median,
    note: [median.note, `median of ${runs.length} rounds: ${all} req/s`].filter(Boolean).join('; '),
    rounds: runs.map((r) => r.result?.rps ?? 0),
    cpuRounds: runs.map((r) => r.cpuMsPerRequest),
  };
}
