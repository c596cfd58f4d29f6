/**
 * Pool versus inline: the same service started once per pool setting (POOL_THREADS=0 runs checks
 * on the main thread), each measured on cold decides at a fixed rate (latency), cold decides as
 * fast as they come (throughput under upstream waits) and cached decides (which must not touch
 * the pool at all, so they should not move). Pool settings are chosen from these numbers.
 */
import type { Upstreams } from './upstreams.js';
import { COLD_DECIDE, COLD_RATE, SCENARIOS, type Scenario } from './scenarios.js';
import { startServerChild } from './child.js';
import { scenarioRunner, serviceEnv, signup, type Row } from './session.js';

export interface PoolSetting {
  name: string;
  threads: number;
  concurrency: number;
}

export const POOL_SETTINGS: readonly PoolSetting[] = [
  { name: 'inline', threads: 0, concurrency: 1 },
  { name: 'pool 1x64', threads: 1, concurrency: 64 },
  { name: 'pool 2x64', threads: 2, concurrency: 64 },
  { name: 'pool 2x8', threads: 2, concurrency: 8 },
];

export interface PoolRow {
  setting: PoolSetting;
  rows: Row[];
}

function scenarios(quick: boolean): Array<{ s: Scenario; nStart: number }> {
  const timing = quick ? { durationSec: 2, warmupSec: 1 } : { durationSec: 5, warmupSec: 1 };
  const cached = SCENARIOS.find((s) => s.name === 'decide-cached')!;
  return [
    {
      s: {
        ...cached,
        name: 'cold-rate',
        about: `cold decide at ${COLD_RATE} req/s`,
        body: COLD_DECIDE,
        connections: 4,
        overallRate: COLD_RATE,
        ...timing,
      },
      nStart: 0,
    },
    // Far from the first job's keys, so nothing it cached is reused here.
    {
      s: {
        ...cached,
        name: 'cold-max',
        about: 'cold decide, max rate',
        body: COLD_DECIDE,
        connections: 50,
        overallRate: undefined,
        ...timing,
      },
      nStart: 20_000,
    },
    { s: { ...cached, name: 'cached-max', about: 'cached decide, max rate', connections: 50, ...timing }, nStart: 0 },
  ];
}

export async function comparePool(upstreams: Upstreams, quick: boolean, billing: boolean): Promise<PoolRow[]> {
  const out: PoolRow[] = [];
  for (const setting of POOL_SETTINGS) {
    const env = serviceEnv(upstreams, null, {
      POOL_THREADS: String(setting.threads),
      POOL_CONCURRENCY: String(setting.concurrency),
      ...(billing ? {} : { BILLING: 'off' }),
    });
    const service = await startServerChild('./service.js', env);
    try {
      const run = scenarioRunner({
        pid: service.proc.pid,
        url: service.url,
        apiKey: billing ? await signup(service.url) : null,
        upstreams,
        rig: null,
        billing,
      });
      const rows: Row[] = [];
      for (const { s, nStart } of scenarios(quick)) rows.push(await run(s, nStart));
      out.push({ setting, rows });
    } finally {
      await service.stop();
    }
  }
  return out;
}
