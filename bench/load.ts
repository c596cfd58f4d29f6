/**
 * The load generator, run as its own process so that neither the service nor the bench driver
 * shares its event loop. It takes one job over IPC, runs autocannon against a loopback URL and
 * answers with the figures the driver judges: throughput, p50, p99 and errors.
 */
import autocannon from 'autocannon';

export interface LoadJob {
  url: string;
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** Body template; `{{n}}` becomes a number unique to the request within this job, `{{n:8}}` the same zero-padded to 8 digits. */
  body?: string;
  /** Per-request header values, used once each in order; the run stops when they are used up. */
  headerPool?: { name: string; values: string[] };
  /** First value of `{{n}}`, so several jobs against one server never share cache keys. */
  nStart?: number;
  expectStatus: number;
  /** Text every answer body must contain (a verdict, an error shape); others count as errors. */
  expectBodyIncludes?: string;
  connections: number;
  durationSec: number;
  /** Caps the total request rate; without it autocannon drives as fast as the server answers. */
  overallRate?: number;
  warmupSec: number;
}

export interface LoadResult {
  requests: number;
  /** Requests of the warm-up before the measured run. */
  warmupRequests: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  errors: number;
  /** Answers with the right status but not the expected body (a `wait` where `proceed` was due). */
  mismatches: number;
  unexpectedStatus: Record<string, number>;
}

function run(job: LoadJob, durationSec: number, counter: { n: number }): Promise<autocannon.Result> {
  const template = job.body;
  const perRequest = template?.includes('{{n') === true;
  const pool = job.headerPool;
  const request: autocannon.Request = { method: job.method, path: job.path, headers: job.headers, body: template };
  if (perRequest || pool !== undefined) {
    request.setupRequest = (req) => {
      const n = counter.n++;
      const out = { ...req };
      if (perRequest)
        out.body = template.replace(/\{\{n(?::(\d+))?\}\}/g, (_m, w?: string) =>
          String(n).padStart(Number(w ?? 0), '0'),
        );
      if (pool !== undefined) {
        // The pool is sized for the run and `amount` stops the load before it wraps.
        out.headers = { ...job.headers, [pool.name]: pool.values[(n - (job.nStart ?? 0)) % pool.values.length] };
      }
      return out;
    };
  }
  return autocannon({
    url: job.url,
    connections: job.connections,
    duration: durationSec,
    // autocannon ignores `duration` when `amount` is set, so the amount is the rate times the duration.
    ...(pool !== undefined
      ? {
          amount: Math.max(
            1,
            Math.min(
              pool.values.length - (counter.n - (job.nStart ?? 0)),
              Math.ceil((job.overallRate ?? 1000) * durationSec),
            ),
          ),
        }
      : {}),
    // autocannon's coordinated-omission correction takes ceil(1 / rate) as the expected interval in
    // ms, i.e. 1 ms for any rate above 1 req/s, and so back-fills every latency with values down to
    // 1 ms (a 70 ms answer reads as a p50 of 35). Raw latencies, plus the achieved rate, are honest.
    ...(job.overallRate !== undefined ? { overallRate: job.overallRate, ignoreCoordinatedOmission: true } : {}),
    requests: [request],
    timeout: 10,
    ...(job.expectBodyIncludes !== undefined
      ? { verifyBody: (b: unknown) => typeof b === 'string' && b.includes(job.expectBodyIncludes!) }
      : {}),
  });
}

export async function runLoad(job: LoadJob): Promise<LoadResult> {
  if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):\d+$/.test(job.url))
    throw new Error(`load goes to loopback only, got ${job.url}`);
  const counter = { n: job.nStart ?? 0 };
  const warm = job.warmupSec > 0 ? await run(job, job.warmupSec, counter) : null;
  const r = await run(job, job.durationSec, counter);
  const unexpectedStatus: Record<string, number> = {};
  let unexpected = 0;
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) {
    if (Number(code) === job.expectStatus) continue;
    unexpectedStatus[code] = s.count ?? 0;
    unexpected += s.count ?? 0;
  }
  return {
    requests: r.requests.total,
    warmupRequests: warm?.requests.total ?? 0,
    rps: Math.round(r.requests.total / r.duration),
    p50: r.latency.p50,
    p90: r.latency.p90,
    p99: r.latency.p99,
    max: r.latency.max,
    errors: r.errors + unexpected + r.mismatches,
    mismatches: r.mismatches,
    unexpectedStatus,
  };
}

if (process.argv[1] && import.meta.url === new URL(process.argv[1], 'file://').href) {
  process.once('message', (job: LoadJob) => {
    runLoad(job).then(
      (result) => process.send?.({ result }, () => process.exit(0)),
      (err: Error) => process.send?.({ error: err.message }, () => process.exit(1)),
    );
  });
}
