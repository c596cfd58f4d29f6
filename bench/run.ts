/**
 * `npm run bench`: emulated upstreams in this process, the service and a bare reference server
 * each in a child process, and autocannon in yet another, all on loopback. Prints a table, writes
 * bench/results/latest.json and exits non-zero when a target is missed.
 *
 *   --mode=all (default) | targets | pool    which part to run; `instructions` counts the cached
 *                                            decide's machine instructions per answer and thread
 *                                            under valgrind (bench/README.md, "Instructions per answer")
 *   --quick                                  3 s per scenario instead of 10 (a smoke run)
 *   --latency=50                             upstream answer delay in ms
 *   --billing=off                            run the service with BILLING=off (no key, no payment)
 *   --only=decide-cold,reference             run only these scenarios (targets mode); `fleet` is the
 *                                            three-instance measurement (PostgreSQL and Redis),
 *                                            `first-answers` a fresh process's first answers,
 *                                            `reservation` the policy limits' check-and-reserve alone,
 *                                            `wallet-guard` what a guarded sendTransaction adds,
 *                                            `cache-evict` inserts into the full check cache;
 *                                            with --mode=instructions, the variants to count
 *                                            (unsigned, signed, signed-inline by default;
 *                                            floor, guard-swap, guard-policy on request)
 *   --rounds=3                               the yardsticks and the cached decides run this many times,
 *                                            interleaved, and each reports its median run (1 with --quick)
 *   --profile=DIR                            every server child writes a V8 CPU profile per thread into
 *                                            DIR when it stops (bench/README.md, "Profiling"); with
 *                                            --mode=instructions, the counted answers' callgrind dumps
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cpus } from 'node:os';
import { COLD_KEYS, startUpstreams, type Upstreams } from './upstreams.js';
import { startPaymentRig, type PaymentRig } from './payments.js';
import { SCENARIOS, type Scenario } from './scenarios.js';
import {
  checkFirstAnswers,
  checkFleet,
  checkSigning,
  checkTargets,
  checkWalletGuard,
  signingCpuUs,
  signingRatios,
  LIMITS,
  type Measured,
  type TargetCheck,
} from './targets.js';
import { measureFirstAnswers, rampCapacity, STATUS_PAGE_MS, type FirstAnswers, type Ramp } from './cold.js';
import { timeBareSignature, type BareSignature } from './signing.js';
import { checkEviction, measureEviction, type Eviction } from './evict.js';
import { measureWalletGuard, type WalletGuardResult } from './wallets.js';
import { measureFleet, type FleetResult } from './fleet.js';
import { profileServersInto, startServerChild, type Child } from './child.js';
import { medianRun, scenarioRunner, serviceEnv, signup, type Row } from './session.js';
import { comparePool, type PoolRow } from './pool-mode.js';
import { printCold, printInstructions, printPool, printSigning, printTable, printTargetChecks } from './report.js';
import { INSTRUCTION_VARIANTS, measureInstructions } from './instructions.js';
import { checkScrapes, scrape } from './scrape.js';
import { benchDatabase, measureReservations, policyKey, type ReservationCost } from './policy.js';

interface Options {
  mode: 'all' | 'targets' | 'pool' | 'instructions';
  quick: boolean;
  latencyMs: number;
  billing: boolean;
  only: string[] | null;
  rounds: number;
  profile: string | null;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = {
    mode: 'all',
    quick: false,
    latencyMs: 50,
    billing: true,
    only: null,
    rounds: 0,
    profile: null,
  };
  for (const a of argv) {
    const [k, v] = a.replace(/^--/, '').split('=');
    if (k === 'mode' && (v === 'all' || v === 'targets' || v === 'pool' || v === 'instructions')) opts.mode = v;
    else if (k === 'quick') opts.quick = true;
    else if (k === 'latency' && /^\d+$/.test(v ?? '')) opts.latencyMs = Number(v);
    else if (k === 'billing' && (v === 'on' || v === 'off')) opts.billing = v === 'on';
    else if (k === 'only' && v) opts.only = v.split(',');
    else if (k === 'rounds' && /^[1-9]\d?$/.test(v ?? '')) opts.rounds = Number(v);
    else if (k === 'profile' && v) opts.profile = v;
    else
      throw new Error(
        `unknown argument ${a} (--mode=all|targets|pool|instructions, --quick, --latency=MS, --billing=on|off, --only=a,b, --rounds=N, --profile=DIR)`,
      );
  }
  if (opts.rounds === 0) opts.rounds = opts.quick ? 1 : 3;
  const names =
    opts.mode === 'instructions'
      ? INSTRUCTION_VARIANTS.map((v) => v.name)
      : [...SCENARIOS.map((s) => s.name), 'fleet', 'reservation', 'first-answers', 'wallet-guard', 'cache-evict'];
  for (const n of opts.only ?? []) {
    if (!names.includes(n)) throw new Error(`--only: no scenario ${n} (${names.join(', ')})`);
  }
  return opts;
}

/** Every scenario's run is bounded; the whole bench aborts past this. */
const HARD_LIMIT_MS = 30 * 60_000;

/**
 * The scenarios whose throughput the targets compare (the yardsticks and the cached decides, with
 * and without signing and with the fleet cache; the cached guard with and without the verdict log). On a shared host the machine's speed drifts by
 * more than the differences measured, so these run interleaved: every server starts once, then
 * each round runs each scenario in turn, and each reports its median round. A ratio target is the
 * median of the rounds' own ratios (bench/targets.ts): each of runs seconds apart, never of one
 * run in a fast minute against another in a slow one.
 */
const PAIRED = [
  'floor',
  'reference',
  'decide-cached',
  'decide-cached-auto',
  'decide-cached-thread',
  'decide-cached-inline',
  'decide-cached-unsigned',
  'decide-cached-redis',
  'guard-screened',
  'guard-screened-1m',
  'guard-swap',
  'guard-swap-unlogged',
  'guard-policy',
  'guard-swap-pg',
  'guard-policy-pg',
];

/** The service's resident memory from its /metrics, in MB. */
async function rssMb(url: string): Promise<number | undefined> {
  const m = /^process_resident_memory_bytes (\S+)$/m.exec(await scrape(url).catch(() => ''));
  return m ? Math.round(Number(m[1]) / 1e5) / 10 : undefined;
}

/** Waits until /health says ok: a configured blocklist is loaded (docs/screening.md §3). */
async function healthy(url: string, ms = 180_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const h = (await fetch(`${url}/health`)
      .then((r) => r.json())
      .catch(() => null)) as { status?: string } | null;
    if (h?.status === 'ok') return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url}/health not ok within ${ms} ms`);
}

/** A scenario that runs on the one service process the plain scenarios share: no settings or store of its own. */
const sharesService = (s: Scenario): boolean => s.server === 'service' && s.env === undefined && s.store === undefined;

interface Server {
  child: Child;
  run: ReturnType<typeof scenarioRunner>;
  /** Stops the child and drops what the scenario made for it (a PostgreSQL database). */
  stop(): Promise<void>;
}

/**
 * The server a scenario runs against: its yardstick, or a service process with the scenario's own
 * settings and (billing on) a fresh API key.
 */
async function startFor(s: Scenario, opts: Options, upstreams: Upstreams, rig: PaymentRig | null): Promise<Server> {
  if (s.server !== 'service') {
    const child = await startServerChild(s.server === 'floor' ? './floor.js' : './reference.js', {});
    const run = scenarioRunner({ pid: child.proc.pid, url: child.url, apiKey: null, upstreams, rig, billing: false });
    return { child, run, stop: () => child.stop() };
  }
  const db = s.store === 'postgres' ? await benchDatabase() : null;
  const child = await startServerChild(
    './service.js',
    serviceEnv(upstreams, rig, {
      ...(opts.billing ? {} : { BILLING: 'off' }),
      ...(db ? { DATABASE_URL: db.url } : {}),
      ...s.env,
    }),
  ).catch(async (err: unknown) => {
    await db?.drop();
    throw err;
  });
  const stop = async () => {
    await child.stop();
    await db?.drop();
  };
  try {
    await healthy(child.url);
    let apiKey = opts.billing ? await signup(child.url) : null;
    // Under a policy: the load's key is an agent key bound to it (a policy needs billing on).
    if (s.policy && apiKey !== null) apiKey = await policyKey(child.url, apiKey);
    return {
      child,
      run: scenarioRunner({ pid: child.proc.pid, url: child.url, apiKey, upstreams, rig, billing: opts.billing }),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function runPaired(
  paired: Scenario[],
  opts: Options,
  upstreams: Upstreams,
  rig: PaymentRig | null,
): Promise<Row[]> {
  if (paired.length === 0) return [];
  const servers = new Map<Scenario, Server>();
  try {
    for (const s of paired) servers.set(s, await startFor(s, opts, upstreams, rig));
    const runs = new Map<Scenario, Row[]>(paired.map((s) => [s, []]));
    for (let round = 0; round < opts.rounds; round++) {
      for (const s of paired) runs.get(s)!.push(await servers.get(s)!.run(s, 0));
    }
    const rows = paired.map((s) => medianRun(runs.get(s)!));
    for (const [i, s] of paired.entries()) rows[i].rssMb = await rssMb(servers.get(s)!.child.url);
    return rows;
  } finally {
    for (const server of servers.values()) await server.stop();
  }
}

async function runTargets(
  opts: Options,
  upstreams: Upstreams,
  rig: PaymentRig | null,
): Promise<{
  rows: Row[];
  checks: TargetCheck[];
  signing: Record<string, number>;
  bare: BareSignature | null;
  signingUs: number | null;
  ramp: Ramp | null;
}> {
  const scale = (s: Scenario): Scenario => (opts.quick ? { ...s, durationSec: 3, warmupSec: 1 } : s);
  const selected = SCENARIOS.filter((s) => opts.only === null || opts.only.includes(s.name)).map(scale);
  // The ratios' terms run as interleaved rounds (runPaired); everything else once, below.
  const paired = opts.rounds > 1 ? selected.filter((s) => PAIRED.includes(s.name)) : [];
  const scenarios = selected.filter((s) => !paired.includes(s));
  const rows: Row[] = await runPaired(paired, opts, upstreams, rig);
  const scrapeChecks: TargetCheck[] = [];
  let ramp: Ramp | null = null;

  // The yardsticks: bare express 5 (reference) and bare node:http (floor), each a process of its own.
  for (const [kind, script] of [
    ['reference', './reference.js'],
    ['floor', './floor.js'],
  ] as const) {
    if (!scenarios.some((x) => x.server === kind)) continue;
    const yardstick = await startServerChild(script, {});
    try {
      const run = scenarioRunner({
        pid: yardstick.proc.pid,
        url: yardstick.url,
        apiKey: null,
        upstreams,
        rig,
        billing: false,
      });
      for (const s of scenarios.filter((x) => x.server === kind)) rows.push(await run(s, 0));
    } finally {
      await yardstick.stop();
    }
  }

  const service: Child = await startServerChild(
    './service.js',
    serviceEnv(upstreams, rig, opts.billing ? {} : { BILLING: 'off' }),
  );
  try {
    const apiKey = opts.billing ? await signup(service.url) : null;
    const run = scenarioRunner({
      pid: service.proc.pid,
      url: service.url,
      apiKey,
      upstreams,
      rig,
      billing: opts.billing,
    });
    const before = await scrape(service.url);
    let underLoad: string | null = null;
    let pending: Promise<void> | null = null;
    // The mid-load scrape: halfway through the first full-speed scenario that answers checks, else
    // the first rate-capped one.
    const answering = scenarios.filter((x) => sharesService(x) && x.expectStatus === 200);
    const scrapeDuring = answering.find((x) => x.overallRate === undefined) ?? answering[0];
    for (const s of scenarios.filter(sharesService)) {
      let timer: NodeJS.Timeout | undefined;
      if (s === scrapeDuring) {
        timer = setTimeout(
          () => {
            pending = scrape(service.url).then(
              (t) => void (underLoad = t),
              () => undefined,
            );
          },
          (s.warmupSec + s.durationSec / 2) * 1000,
        );
      }
      rows.push(await run(s, s.nStart ?? 0));
      clearTimeout(timer);
      // The highest rate of fresh checks whose p99 holds, right after the 300 req/s run.
      if (s.name === 'decide-cold-capacity') ramp = await rampCapacity(run, s, LIMITS.p99Ms, opts.quick);
    }
    await pending;
    // Only answered checks move the series: a run of just the 422 scenario has nothing to show.
    if (scrapeDuring !== undefined) {
      scrapeChecks.push(
        ...checkScrapes(
          before,
          underLoad,
          await scrape(service.url),
          scenarios.some((x) => x.name === 'decide-cold' || x.name === 'guard-swap'),
        ),
      );
    }
  } finally {
    await service.stop();
  }
  // Scenarios with settings or a store of their own: each on a service process of its own.
  for (const s of scenarios.filter((x) => x.server === 'service' && !sharesService(x))) {
    const own = await startFor(s, opts, upstreams, rig);
    try {
      const row = await own.run(s, 0);
      row.rssMb = await rssMb(own.child.url);
      rows.push(row);
    } finally {
      await own.stop();
    }
  }

  const measured = new Map<string, Measured | null>(
    rows.map((r) => [
      r.name,
      r.result === null
        ? null
        : {
            name: r.name,
            ...r.result,
            cpuMsPerRequest: r.cpuMsPerRequest,
            loopMsPerRequest: r.loopMsPerRequest,
            ...(r.rounds ? { rounds: r.rounds } : {}),
            ...(r.cpuRounds ? { cpuRounds: r.cpuRounds } : {}),
            ...(r.rssMb === undefined ? {} : { rssMb: r.rssMb }),
          },
    ]),
  );
  // A bare signature and its hashes, timed here between the runs, beside what signing cost them.
  const bare = measured.has('decide-cached') && measured.has('decide-cached-unsigned') ? timeBareSignature() : null;
  const checks = [...checkTargets(measured, opts.latencyMs), ...checkSigning(measured, bare), ...scrapeChecks];
  for (const r of rows) {
    if (r.ledger === undefined || r.result === null) continue;
    // Every answer the load paid for (the probe's included) ends settled on chain, none failed or pending.
    const { settled = 0, failed = 0, verified = 0, settling = 0 } = r.ledger;
    const paid = r.result.requests + r.result.warmupRequests + 1;
    checks.push({
      target: `${r.name} payments all settled on chain`,
      ok: settled >= paid && failed === 0 && verified + settling === 0,
      detail: `${settled} settled, ${failed} failed, ${verified + settling} pending for ${paid} paid answers`,
    });
  }
  return { rows, checks, signing: signingRatios(measured), bare, signingUs: signingCpuUs(measured), ramp };
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.profile !== null && opts.mode !== 'instructions') {
    mkdirSync(opts.profile, { recursive: true });
    profileServersInto(opts.profile);
  }
  const started = Date.now();
  const upstreams = await startUpstreams(opts.latencyMs, COLD_KEYS);
  if (opts.mode === 'instructions') {
    try {
      const counted = await measureInstructions(upstreams, opts.quick, opts.only, opts.profile);
      if ('skipped' in counted) {
        process.stdout.write(`instructions: skipped: ${counted.skipped}\n`);
        return 0;
      }
      printInstructions(counted);
      const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
      mkdirSync(dir, { recursive: true });
      const out = {
        date: new Date().toISOString(),
        machine: { cpus: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version },
        ...counted,
        elapsedSec: Math.round((Date.now() - started) / 1000),
      };
      writeFileSync(`${dir}instructions.json`, JSON.stringify(out, null, 2) + '\n');
      process.stdout.write(`\nwrote bench/results/instructions.json (${out.elapsedSec} s)\n`);
      return 0;
    } finally {
      await upstreams.close();
    }
  }
  let rig: PaymentRig | null = null;
  try {
    // The payer holds enough for every paid scenario that runs, with room to spare.
    const payments = SCENARIOS.filter((s) => s.auth === 'x402' && (opts.only === null || opts.only.includes(s.name)))
      .map((s) => Math.ceil((s.overallRate ?? 200) * (s.durationSec + s.warmupSec) * 1.5))
      .reduce((a, b) => a + b, 0);
    if (opts.mode !== 'pool' && opts.billing && payments > 0) rig = await startPaymentRig(payments);
    const targets = opts.mode === 'pool' ? null : await runTargets(opts, upstreams, rig);
    let fleet: FleetResult | { skipped: string } | null = null;
    if (targets && (opts.only === null || opts.only.includes('fleet'))) {
      fleet = await measureFleet(upstreams);
      if ('skipped' in fleet) targets.checks.push({ target: 'fleet ran', ok: false, detail: fleet.skipped });
      else targets.checks.push(...checkFleet(fleet));
    }
    let first: FirstAnswers | null = null;
    if (targets && (opts.only === null || opts.only.includes('first-answers'))) {
      first = await measureFirstAnswers(upstreams);
      targets.checks.push(...checkFirstAnswers(first, opts.latencyMs, STATUS_PAGE_MS));
    }
    // The reservation's own cost on each store (docs/policies.md §4): figures, not targets.
    let reservations: ReservationCost[] | { skipped: string } | null = null;
    if (targets && (opts.only === null || opts.only.includes('reservation'))) {
      reservations = await measureReservations();
      if (!('skipped' in reservations)) {
        process.stdout.write('\nReservation (check-and-reserve in two limits, on the store)\n');
        for (const r of reservations)
          process.stdout.write(
            `  ${r.store}, ${r.concurrency} at a time, ${r.reservations} reservations: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms\n`,
          );
      }
    }
    let eviction: Eviction | null = null;
    if (targets && (opts.only === null || opts.only.includes('cache-evict'))) {
      eviction = measureEviction();
      targets.checks.push(...checkEviction(eviction));
    }
    let walletGuard: WalletGuardResult | null = null;
    if (targets && (opts.only === null || opts.only.includes('wallet-guard'))) {
      walletGuard = await measureWalletGuard(opts.quick ? 15 : 300);
      targets.checks.push(...checkWalletGuard(walletGuard));
    }
    const pool: PoolRow[] | null =
      opts.mode === 'targets' ? null : await comparePool(upstreams, opts.quick, opts.billing);

    if (targets) {
      printTable(targets.rows, opts.latencyMs);
      printSigning(targets.signing, targets.bare, targets.signingUs);
      printCold(targets.ramp, first);
      if (eviction !== null)
        process.stdout.write(
          `\nCheck cache inserts (${eviction.entries} entries, this process): full ${eviction.fullUs} us, with room ${eviction.roomUs} us\n`,
        );
      printTargetChecks(targets.checks);
    }
    if (pool) printPool(pool);
    const out = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version },
      options: opts,
      upstreamLatencyMs: opts.latencyMs,
      scenarios: targets?.rows ?? null,
      targets: targets?.checks ?? null,
      signing: targets
        ? { ratios: targets.signing, bareSignature: targets.bare, signedMinusUnsignedCpuUs: targets.signingUs }
        : null,
      coldCapacityRamp: targets?.ramp ?? null,
      firstAnswers: first,
      fleet,
      reservations,
      walletGuard,
      cacheEviction: eviction,
      pool,
      elapsedSec: Math.round((Date.now() - started) / 1000),
    };
    const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}latest.json`, JSON.stringify(out, null, 2) + '\n');
    process.stdout.write(`\nwrote bench/results/latest.json (${out.elapsedSec} s)\n`);
    return targets?.checks.some((v) => !v.ok) ? 1 : 0;
  } finally {
    await rig?.close();
    await upstreams.close();
  }
}

const guard = setTimeout(() => {
  process.stderr.write(`bench: over ${HARD_LIMIT_MS / 60_000} minutes, aborting\n`);
  process.exit(2);
}, HARD_LIMIT_MS);
guard.unref();

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
    process.exit(2);
  },
);
