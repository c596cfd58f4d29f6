/**
 * `npm run soak`: five minutes at 70 % of the rated load, watching for drift. The rated load is
 * the cached decide's throughput at full speed, measured first in the same run. Then ten
 * 30-second windows at 70 % of it (plus a trickle of cold decides, so the cache keeps growing):
 * each window's p99, the service's resident memory and its main-thread heap in use. Targets: every
 * window's p99 under 300 ms and within 2 × the median window's p99 (stable), and resident memory
 * growing less than 10 %: the mean of the last three windows against the mean of windows 3 to 5
 * (the first minute is warm-up, while V8 sizes its heaps; single samples swing ±10 % with the
 * collector, so means of three are compared). Writes bench/results/soak.json; exits 1 on a miss.
 * Loopback only; every load is bounded in time.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { COLD_KEYS, startUpstreams } from './upstreams.js';
import { startServerChild, runLoadInChild } from './child.js';
import { serviceEnv, signup } from './session.js';
import { CACHED_DECIDE, COLD_DECIDE } from './scenarios.js';
import type { LoadJob } from './load.js';

const WINDOWS = Number(process.env.SOAK_WINDOWS ?? 10);
const WINDOW_SEC = Number(process.env.SOAK_WINDOW_SEC ?? 30);
const SHARE = 0.7;
const COLD_RATE = 20;

function rssMiB(pid: number | undefined): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : null;
  } catch {
    return null;
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mean = (xs: number[]): number => Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 10) / 10;

/** Main-thread heap in use, MiB, from the service's own /metrics. */
async function heapUsedMiB(url: string): Promise<number | null> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const m = /^nodejs_heap_size_used_bytes (\S+)$/m.exec(text);
  return m ? Math.round(Number(m[1]) / 104857.6) / 10 : null;
}

async function main(): Promise<number> {
  const upstreams = await startUpstreams(50, COLD_KEYS);
  const service = await startServerChild('./service.js', serviceEnv(upstreams, null, { LOG_LEVEL: 'warn' }));
  try {
    const apiKey = await signup(service.url);
    if (apiKey === null) throw new Error('no API key from the service');
    const base: Omit<LoadJob, 'durationSec' | 'connections'> = {
      url: service.url,
      path: '/v1/decide',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: CACHED_DECIDE,
      expectStatus: 200,
      expectBodyIncludes: '"verdict":"proceed"',
      warmupSec: 0,
    };
    const rated = await runLoadInChild({ ...base, connections: 50, durationSec: 10, warmupSec: 2 });
    const rate = Math.max(1, Math.round(rated.rps * SHARE));
    console.log(
      `rated load: ${rated.rps} req/s (cached decide, 50 connections); soak at ${rate} req/s + ${COLD_RATE} cold req/s for ${WINDOWS} × ${WINDOW_SEC} s`,
    );
    const windows: Array<{
      window: number;
      rps: number;
      p50: number;
      p99: number;
      errors: number;
      coldP99: number;
      coldErrors: number;
      rssMiB: number | null;
      heapUsedMiB: number | null;
    }> = [];
    for (let w = 0; w < WINDOWS; w++) {
      const [hot, cold] = await Promise.all([
        runLoadInChild({ ...base, connections: 50, durationSec: WINDOW_SEC, overallRate: rate }),
        runLoadInChild({
          ...base,
          body: COLD_DECIDE,
          connections: 4,
          durationSec: WINDOW_SEC,
          overallRate: COLD_RATE,
          nStart: w * WINDOW_SEC * COLD_RATE * 2,
        }),
      ]);
      const row = {
        window: w + 1,
        rps: hot.rps,
        p50: hot.p50,
        p99: hot.p99,
        errors: hot.errors,
        coldP99: cold.p99,
        coldErrors: cold.errors,
        rssMiB: rssMiB(service.proc.pid),
        heapUsedMiB: await heapUsedMiB(service.url),
      };
      windows.push(row);
      console.log(
        `window ${row.window}: ${row.rps} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, errors ${row.errors}; cold p99 ${row.coldP99} ms, errors ${row.coldErrors}; RSS ${row.rssMiB} MiB, heap used ${row.heapUsedMiB} MiB`,
      );
    }
    const p99s = windows.map((w) => w.p99);
    const med = median(p99s);
    const rss = windows.map((w) => w.rssMiB);
    const known = rss.every((r): r is number => r !== null) && rss.length >= 6;
    const warmRss = known ? mean((rss as number[]).slice(2, 5)) : null;
    const endRss = known ? mean((rss as number[]).slice(-3)) : null;
    const growth = warmRss && endRss ? (endRss - warmRss) / warmRss : null;
    const verdicts = [
      { target: 'every window p99 < 300 ms', ok: p99s.every((p) => p < 300), value: `max ${Math.max(...p99s)} ms` },
      {
        target: 'p99 stable: every window within 2 × the median window',
        ok: p99s.every((p) => p <= Math.max(2 * med, med + 5)),
        value: `median ${med} ms, max ${Math.max(...p99s)} ms`,
      },
      {
        target: 'resident memory growth after warm-up < 10 % (mean of windows 3-5 → mean of the last 3)',
        ok: growth !== null && growth < 0.1,
        value: growth === null ? 'unmeasured' : `${warmRss} → ${endRss} MiB (${(growth * 100).toFixed(1)} %)`,
      },
      {
        target: 'no errors at the soak load',
        ok: windows.every((w) => w.errors === 0),
        value: `${windows.reduce((a, w) => a + w.errors, 0)} (cold trickle, not judged: ${windows.reduce((a, w) => a + w.coldErrors, 0)} answers past their deadline)`,
      },
    ];
    for (const v of verdicts) console.log(`${v.ok ? 'PASS' : 'MISS'}  ${v.target}: ${v.value}`);
    const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      `${dir}soak.json`,
      JSON.stringify(
        {
          at: new Date().toISOString(),
          ratedRps: rated.rps,
          soakRps: rate,
          coldRps: COLD_RATE,
          windowSec: WINDOW_SEC,
          windows,
          verdicts,
        },
        null,
        2,
      ) + '\n',
    );
    return verdicts.every((v) => v.ok) ? 0 : 1;
  } finally {
    await service.stop();
    await upstreams.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`soak failed: ${err.message}`);
    process.exit(2);
  },
);
