/**
 * The bench's pass/fail rules, as data over the measured figures (pure, no I/O):
 * p99 under 300 ms and no errors for every scenario at its stated load; the cached decide at least
 * 0.8 × the reference's throughput in the same run (its answers signed); the cold decide's p50
 * within 15 ms of the slowest upstream's latency; the paid decide's p99 within 20 ms of the keyed
 * decide's p99 on each store, and 200 paid calls a second carried; the guard with a simulation's p50 within 15 ms of its two upstream rounds (the
 * node, then the price provider beside the node's token reads); the guard with a signed order's p50
 * within 15 ms of one upstream round (the price provider beside the node's token reads); the
 * cached guard, its answers logged, at least 0.9 × the same guard with the verdict log off; what a
 * guarded sendTransaction adds over an unguarded one within 1.25 × the bare guard call (p50).
 */
import { PAID_CAPACITY_RATE } from './scenarios.js';

export interface Measured {
  name: string;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Interleaved scenarios: each round's req/s, in round order. */
  rounds?: number[];
  /** Server CPU ms per answer (all threads), and each interleaved round's. */
  cpuMsPerRequest?: number | null;
  cpuRounds?: Array<number | null>;
  /** The event-loop thread's CPU ms per answer alone. */
  loopMsPerRequest?: number | null;
  /** The service's resident memory after the scenario, in MB. */
  rssMb?: number;
}

/**
 * Throughput of `a` as a ratio to `b`. When both ran the same interleaved rounds, the median of
 * the rounds' own ratios: the two runs of one round are seconds apart, so the host's drift over
 * the minutes of a run (which moves every figure by more than the differences measured) cancels;
 * else the ratio of their req/s.
 */
export function throughputRatio(a: Measured, b: Measured): { ratio: number; detail: string } {
  // The event loop's CPU per answer, beside: what bounds a cached path, and steadier than req/s.
  const loop =
    a.loopMsPerRequest != null && b.loopMsPerRequest != null
      ? `; event loop ${a.loopMsPerRequest} vs ${b.loopMsPerRequest} ms per answer`
      : '';
  const plain = `${a.rps} vs ${b.rps} req/s`;
  const ra = a.rounds;
  const rb = b.rounds;
  if (ra && rb && ra.length === rb.length && ra.length > 1) {
    const each = ra.map((x, i) => (rb[i] > 0 ? x / rb[i] : 0));
    const sorted = [...each].sort((x, y) => x - y);
    const ratio = sorted[Math.floor((sorted.length - 1) / 2)];
    const list = each.map((r) => r.toFixed(2)).join(', ');
    return { ratio, detail: `${ratio.toFixed(2)}, the median of the rounds' ratios ${list} (medians ${plain})${loop}` };
  }
  const ratio = b.rps > 0 ? a.rps / b.rps : 0;
  return { ratio, detail: `${plain} = ${ratio.toFixed(2)}${loop}` };
}

export interface TargetCheck {
  target: string;
  ok: boolean;
  detail: string;
}

export const LIMITS = Object.freeze({
  p99Ms: 300,
  cachedVsReference: 0.8,
  /** The cached decide, signing off, against bare node:http + Ajv answering the same body (bench/floor.ts). */
  cachedVsFloor: 0.5,
  /** An insert into the full check cache against one into a cache with room (bench/evict.ts). */
  cacheFullVsRoom: 2,
  coldP50OverUpstreamMs: 15,
  paidP99OverKeyedMs: 20,
  simulationP50OverUpstreamsMs: 15,
  /** The signed cached decide's throughput as a ratio to the unsigned one, same run. */
  signedVsUnsigned: 0.8,
  /** Server CPU µs a signed answer may cost over an unsigned one, beyond a bare signature and its hashes. */
  signingOverheadUs: 30,
  /** One instance's cached decide with REDIS_URL set, as a ratio to the same without it. */
  cachedWithRedisVsWithout: 0.9,
  /** The cached keyed guard, every answer logged, as a ratio to the same with the log off (docs/policies.md §10). */
  guardLoggedVsUnlogged: 0.9,
  /** Upstream requests per distinct check across a fleet of three (docs/fleet.md). */
  fleetUpstreamPerCheck: 1.0,
  /** A delegation scan's calls run side by side: one upstream round. */
  delegationP50OverUpstreamMs: 15,
  /** The Origin refusal on /mcp against the 422 of a bad body: it reads no body, so at least as cheap. */
  foreignOriginVsInvalidBody: 0.9,
  /** Paid calls a second answered, as a share of the 200 offered (decide-paid-capacity). */
  paidCapacityShare: 0.95,
  /** 300 fresh four-check decides a second (decide-cold-capacity): p99 and p50 bounds. */
  coldCapacityP99Ms: 150,
  coldCapacityP50OverUpstreamMs: 15,
  /** A fresh process's first cold decide, and its first 20 at p99, over the upstream latency. */
  firstColdOverUpstreamMs: 15,
  firstColdP99OverUpstreamMs: 25,
  /** A fresh process's first guard of each kind that reads the node, over the median of its next ones. */
  firstGuardOverLaterMs: 15,
  /** Every bridge-risk call over three status pages (120 ms), the first included, over the pages' delay. */
  bridgeMaxOverPagesMs: 80,
  /** A signed order's price call and decimals batch run side by side: one upstream round. */
  orderP50OverUpstreamMs: 15,
  /** A cached guard with a 1,000,000-address blocklist, as a ratio to the same guard without one (docs/screening.md §8). */
  blocklistVsNone: 0.95,
  /** Resident memory the million-address blocklist adds, in MB. */
  blocklistRssMb: 150,
  /** How much a refresh of that list may raise the guard's p99, in ms. */
  blocklistRefreshP99Ms: 5,
  /** A cached guard under a 20-rule, two-limit policy, as a ratio to the same guard with no policy (docs/policies.md). */
  policyVsNone: 0.8,
  /** What a guarded sendTransaction adds over an unguarded one, as a ratio to the bare guard call it makes (p50). */
  walletGuardAddedVsGuardCall: 1.25,
});

/** The nearest-rank percentile `p` (0-100) of `xs`; NaN (a failed call) ranks above everything. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = xs.map((x) => (Number.isNaN(x) ? Number.POSITIVE_INFINITY : x)).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1];
}

/** The first-answers measurement's figures (bench/cold.ts). */
export interface FirstAnswersFigures {
  healthOkMs: number;
  decideMs: readonly number[];
  bridgeMs: readonly number[];
  guardMs: ReadonlyArray<{ kind: string; ms: readonly number[] }>;
  failures: number;
  firstFailure: string | null;
}

export function checkFirstAnswers(
  fa: FirstAnswersFigures,
  upstreamLatencyMs: number,
  statusPageMs: number,
): TargetCheck[] {
  const first = fa.decideMs[0] ?? Number.NaN;
  const firstLimit = upstreamLatencyMs + LIMITS.firstColdOverUpstreamMs;
  const p99 = percentile(fa.decideMs, 99);
  const p99Limit = upstreamLatencyMs + LIMITS.firstColdP99OverUpstreamMs;
  const bridgeMax = percentile(fa.bridgeMs, 100);
  const bridgeLimit = statusPageMs + LIMITS.bridgeMaxOverPagesMs;
  const list = (xs: readonly number[]): string => xs.map((x) => Math.round(x)).join(', ');
  return [
    {
      target: `first-answers: the first cold decide <= upstream ${upstreamLatencyMs} + ${LIMITS.firstColdOverUpstreamMs} ms`,
      ok: first <= firstLimit,
      detail: `${first} ms (limit ${firstLimit}; /health said ok ${fa.healthOkMs} ms after the fork)`,
    },
    {
      target: `first-answers: the first ${fa.decideMs.length} cold decides p99 <= upstream ${upstreamLatencyMs} + ${LIMITS.firstColdP99OverUpstreamMs} ms`,
      ok: fa.decideMs.length > 0 && p99 <= p99Limit,
      detail: `p99 ${p99} ms (limit ${p99Limit}): ${list(fa.decideMs)}`,
    },
    {
      target: `first-answers: ${fa.bridgeMs.length} bridge-risk calls over three ${statusPageMs} ms pages, each <= ${bridgeLimit} ms`,
      ok: fa.bridgeMs.length > 0 && bridgeMax <= bridgeLimit,
      detail: `first ${fa.bridgeMs[0]} ms, p50 ${percentile(fa.bridgeMs, 50)}, p99 ${percentile(fa.bridgeMs, 99)}, max ${bridgeMax} ms (limit ${bridgeLimit})`,
    },
    ...fa.guardMs.map(({ kind, ms }) => {
      const later = percentile(ms.slice(1), 50);
      const limit = later + LIMITS.firstGuardOverLaterMs;
      return {
        target: `first-answers: the first ${kind} guard of a fresh process <= the median of its next ${ms.length - 1} + ${LIMITS.firstGuardOverLaterMs} ms`,
        ok: ms.length > 1 && (ms[0] ?? Number.NaN) <= limit,
        detail: `${ms[0]} ms (limit ${limit}): ${list(ms)}`,
      };
    }),
    {
      target: 'first-answers: every answer a 200 with proceed',
      ok: fa.failures === 0,
      detail: fa.failures === 0 ? 'all' : `${fa.failures} others, the first: ${fa.firstFailure}`,
    },
  ];
}

export function checkTargets(results: ReadonlyMap<string, Measured | null>, upstreamLatencyMs: number): TargetCheck[] {
  const out: TargetCheck[] = [];
  const get = (name: string): Measured | null => results.get(name) ?? null;
  for (const [name, m] of results) {
    if (m === null) {
      out.push({ target: `${name} ran`, ok: false, detail: 'scenario could not run' });
      continue;
    }
    out.push({ target: `${name} p99 < ${LIMITS.p99Ms} ms`, ok: m.p99 < LIMITS.p99Ms, detail: `p99 ${m.p99} ms` });
    out.push({
      target: `${name} without errors`,
      ok: m.errors === 0 && m.requests > 0,
      detail: `${m.errors} errors in ${m.requests} requests`,
    });
  }
  const ref = get('reference');
  const cached = get('decide-cached');
  if (ref && cached) {
    const { ratio, detail } = throughputRatio(cached, ref);
    out.push({
      target: `decide-cached >= ${LIMITS.cachedVsReference} x reference req/s`,
      ok: ratio >= LIMITS.cachedVsReference,
      detail,
    });
  }
  // The service's own path against the floor: signing off, as the floor signs nothing. What a
  // signature adds is reported beside it (signingRatios), against the floor and the unsigned path.
  const floor = get('floor');
  const unsigned = get('decide-cached-unsigned');
  if (floor && unsigned) {
    const { ratio, detail } = throughputRatio(unsigned, floor);
    out.push({
      target: `decide-cached-unsigned >= ${LIMITS.cachedVsFloor} x floor req/s`,
      ok: ratio >= LIMITS.cachedVsFloor,
      detail,
    });
  }
  const foreign = get('mcp-foreign-origin');
  const invalid = get('invalid-body');
  if (foreign && invalid) {
    const { ratio, detail } = throughputRatio(foreign, invalid);
    out.push({
      target: `mcp-foreign-origin >= ${LIMITS.foreignOriginVsInvalidBody} x invalid-body req/s`,
      ok: ratio >= LIMITS.foreignOriginVsInvalidBody,
      detail,
    });
  }
  const cold = get('decide-cold');
  if (cold) {
    const limit = upstreamLatencyMs + LIMITS.coldP50OverUpstreamMs;
    out.push({
      target: `decide-cold p50 <= upstream ${upstreamLatencyMs} + ${LIMITS.coldP50OverUpstreamMs} ms`,
      ok: cold.p50 <= limit,
      detail: `p50 ${cold.p50} ms (limit ${limit})`,
    });
  }
  const capacity = get('decide-cold-capacity');
  if (capacity) {
    const p50Limit = upstreamLatencyMs + LIMITS.coldCapacityP50OverUpstreamMs;
    out.push({
      target: `decide-cold-capacity p99 < ${LIMITS.coldCapacityP99Ms} ms and p50 < upstream ${upstreamLatencyMs} + ${LIMITS.coldCapacityP50OverUpstreamMs} ms`,
      ok: capacity.p99 < LIMITS.coldCapacityP99Ms && capacity.p50 < p50Limit,
      detail: `p50 ${capacity.p50} ms, p99 ${capacity.p99} ms at ${capacity.rps} req/s`,
    });
  }
  const sim = get('guard-simulation');
  if (sim) {
    const upstreams = 2 * upstreamLatencyMs;
    const limit = upstreams + LIMITS.simulationP50OverUpstreamsMs;
    out.push({
      target: `guard-simulation p50 <= node + price ${upstreams} + ${LIMITS.simulationP50OverUpstreamsMs} ms`,
      ok: sim.p50 <= limit,
      detail: `p50 ${sim.p50} ms, p99 ${sim.p99} ms: ${Math.round((sim.p50 - upstreams) * 10) / 10} ms over the two upstream rounds (limit ${limit})`,
    });
  }
  const withRedis = get('decide-cached-redis');
  if (cached && withRedis) {
    const { ratio, detail } = throughputRatio(withRedis, cached);
    out.push({
      target: `decide-cached-redis >= ${LIMITS.cachedWithRedisVsWithout} x decide-cached`,
      ok: ratio >= LIMITS.cachedWithRedisVsWithout,
      detail,
    });
  }
  const guard = get('guard-swap');
  const unlogged = get('guard-swap-unlogged');
  if (guard && unlogged) {
    const { ratio, detail } = throughputRatio(guard, unlogged);
    out.push({
      target: `guard-swap >= ${LIMITS.guardLoggedVsUnlogged} x guard-swap-unlogged (the verdict log's cost)`,
      ok: ratio >= LIMITS.guardLoggedVsUnlogged,
      detail,
    });
  }
  const deleg = get('guard-delegation');
  if (deleg) {
    const limit = upstreamLatencyMs + LIMITS.delegationP50OverUpstreamMs;
    out.push({
      target: `guard-delegation p50 <= one upstream round ${upstreamLatencyMs} + ${LIMITS.delegationP50OverUpstreamMs} ms`,
      ok: deleg.p50 <= limit,
      detail: `p50 ${deleg.p50} ms, p99 ${deleg.p99} ms: ${Math.round((deleg.p50 - upstreamLatencyMs) * 10) / 10} ms over the upstream round (limit ${limit})`,
    });
  }
  const order = get('guard-order');
  if (order) {
    const limit = upstreamLatencyMs + LIMITS.orderP50OverUpstreamMs;
    out.push({
      target: `guard-order p50 <= one upstream round ${upstreamLatencyMs} + ${LIMITS.orderP50OverUpstreamMs} ms`,
      ok: order.p50 <= limit,
      detail: `p50 ${order.p50} ms, p99 ${order.p99} ms: ${Math.round((order.p50 - upstreamLatencyMs) * 10) / 10} ms over the upstream round (limit ${limit})`,
    });
  }
  const screened = get('guard-screened');
  const screened1m = get('guard-screened-1m');
  if (screened && screened1m) {
    const { ratio, detail } = throughputRatio(screened1m, screened);
    out.push({
      target: `guard-screened-1m >= ${LIMITS.blocklistVsNone} x guard-screened req/s`,
      ok: ratio >= LIMITS.blocklistVsNone,
      detail,
    });
    if (screened.rssMb !== undefined && screened1m.rssMb !== undefined) {
      const added = Math.round((screened1m.rssMb - screened.rssMb) * 10) / 10;
      out.push({
        target: `the 1,000,000-address blocklist adds <= ${LIMITS.blocklistRssMb} MB resident`,
        ok: added <= LIMITS.blocklistRssMb,
        detail: `${screened1m.rssMb} MB with it, ${screened.rssMb} MB without: ${added} MB`,
      });
    }
  }
  const steady = get('guard-screened-1m-steady');
  const refreshing = get('guard-screened-1m-refresh');
  if (steady && refreshing) {
    const limit = steady.p99 + LIMITS.blocklistRefreshP99Ms;
    out.push({
      target: `guard-screened-1m-refresh p99 <= steady p99 + ${LIMITS.blocklistRefreshP99Ms} ms`,
      ok: refreshing.p99 <= limit,
      detail: `p99 ${refreshing.p99} ms refreshing, ${steady.p99} ms steady (limit ${limit})`,
    });
  }
  for (const [withPolicy, without] of [
    ['guard-policy', 'guard-swap'],
    ['guard-policy-pg', 'guard-swap-pg'],
  ] as const) {
    const a = get(withPolicy);
    const b = get(without);
    if (!a || !b) continue;
    const { ratio, detail } = throughputRatio(a, b);
    out.push({
      target: `${withPolicy} >= ${LIMITS.policyVsNone} x ${without} req/s`,
      ok: ratio >= LIMITS.policyVsNone,
      detail,
    });
  }
  const paidCapacity = get('decide-paid-capacity');
  if (paidCapacity) {
    const floor = Math.round(PAID_CAPACITY_RATE * LIMITS.paidCapacityShare);
    out.push({
      target: `decide-paid-capacity >= ${LIMITS.paidCapacityShare} x ${PAID_CAPACITY_RATE} paid req/s offered`,
      ok: paidCapacity.rps >= floor,
      detail: `${paidCapacity.rps} req/s (limit ${floor}), p50 ${paidCapacity.p50} ms, p99 ${paidCapacity.p99} ms`,
    });
  }
  // The paid answer against the keyed one on the same store: SQLite, then PostgreSQL.
  for (const [paidName, keyedName] of [
    ['decide-paid', 'decide-keyed'],
    ['decide-paid-pg', 'decide-keyed-pg'],
  ] as const) {
    const keyed = get(keyedName);
    const paid = get(paidName);
    if (!keyed || !paid) continue;
    const limit = keyed.p99 + LIMITS.paidP99OverKeyedMs;
    out.push({
      target: `${paidName} p99 <= ${keyedName} p99 + ${LIMITS.paidP99OverKeyedMs} ms`,
      ok: paid.p99 <= limit,
      detail: `p99 ${paid.p99} vs ${keyed.p99} ms (limit ${limit})`,
    });
  }
  return out;
}

/** Names of the yardsticks the signed cached decide is compared with, when they ran. */
export const YARDSTICKS = ['reference', 'floor', 'decide-cached-unsigned'] as const;
/** The signed cached decide with the signature made one way only (docs/attestations.md). */
export const SIGNING_WAYS = ['decide-cached-auto', 'decide-cached-thread', 'decide-cached-inline'] as const;

/**
 * What signing costs (docs/attestations.md): the signed cached decide's throughput as a ratio to
 * each yardstick that ran in the same run. Figures, not targets.
 */
export function signingRatios(results: ReadonlyMap<string, Measured | null>): Record<string, number> {
  const signed = results.get('decide-cached');
  const out: Record<string, number> = {};
  if (!signed) return out;
  for (const name of YARDSTICKS) {
    const y = results.get(name);
    if (y && y.rps > 0) out[name] = Math.round(throughputRatio(signed, y).ratio * 100) / 100;
  }
  // Each way alone against the unsigned path, under the way's own name.
  const unsigned = results.get('decide-cached-unsigned');
  for (const name of SIGNING_WAYS) {
    const w = results.get(name);
    if (w && unsigned && unsigned.rps > 0)
      out[`${name} vs decide-cached-unsigned`] = Math.round(throughputRatio(w, unsigned).ratio * 100) / 100;
  }
  return out;
}

/**
 * What signing costs in server CPU per answer: the median over the interleaved rounds of the signed
 * cached decide's `cpu ms/req` minus the unsigned one's in the same round (else of the two runs),
 * in µs.
 */
export function signingCpuUs(results: ReadonlyMap<string, Measured | null>): number | null {
  const signed = results.get('decide-cached');
  const unsigned = results.get('decide-cached-unsigned');
  if (!signed || !unsigned) return null;
  const a = signed.cpuRounds;
  const b = unsigned.cpuRounds;
  let diffs: number[] = [];
  if (a && b && a.length === b.length)
    diffs = a.flatMap((x, i) => (x !== null && b[i] !== null ? [(x - (b[i] as number)) * 1000] : []));
  if (diffs.length === 0 && signed.cpuMsPerRequest != null && unsigned.cpuMsPerRequest != null)
    diffs = [(signed.cpuMsPerRequest - unsigned.cpuMsPerRequest) * 1000];
  if (diffs.length === 0) return null;
  const sorted = [...diffs].sort((x, y) => x - y);
  return Math.round(sorted[Math.floor((sorted.length - 1) / 2)] * 10) / 10;
}

/**
 * The signing targets (bench/README.md, "Signing"): the signed cached decide at least
 * LIMITS.signedVsUnsigned of the unsigned one's throughput, and its extra server CPU per answer at
 * most a bare signature and its hashes (timed in the same run) plus LIMITS.signingOverheadUs.
 */
export function checkSigning(
  results: ReadonlyMap<string, Measured | null>,
  bare: { signUs: number; hashesUs: number } | null,
): TargetCheck[] {
  const signed = results.get('decide-cached');
  const unsigned = results.get('decide-cached-unsigned');
  if (!signed || !unsigned) return [];
  const { ratio, detail } = throughputRatio(signed, unsigned);
  const out: TargetCheck[] = [
    {
      target: `decide-cached >= ${LIMITS.signedVsUnsigned} x decide-cached-unsigned req/s`,
      ok: ratio >= LIMITS.signedVsUnsigned,
      detail,
    },
  ];
  const extra = signingCpuUs(results);
  if (bare !== null && extra !== null) {
    const limit = Math.round((bare.signUs + bare.hashesUs + LIMITS.signingOverheadUs) * 10) / 10;
    out.push({
      target: `signing's server CPU per answer <= a bare signature and hashes + ${LIMITS.signingOverheadUs} us`,
      ok: extra <= limit,
      detail: `${extra} us (signed minus unsigned cpu, median of the rounds) vs signature ${bare.signUs} + hashes ${bare.hashesUs} us timed in this run (limit ${limit})`,
    });
  }
  return out;
}

/** The fleet measurement's checks (bench/fleet.ts). */
export function checkFleet(fleet: {
  perCheck: number;
  non200: number;
  upstreamRequests: number;
  distinctChecks: number;
  answers: number;
}): TargetCheck[] {
  return [
    {
      target: `fleet: upstream requests per distinct check <= ${LIMITS.fleetUpstreamPerCheck}`,
      ok: fleet.perCheck <= LIMITS.fleetUpstreamPerCheck,
      detail: `${fleet.upstreamRequests} upstream requests for ${fleet.distinctChecks} checks asked ${fleet.answers} times (${fleet.perCheck})`,
    },
    { target: 'fleet: every answer a 200', ok: fleet.non200 === 0, detail: `${fleet.non200} others` },
  ];
}

/** The wallet guard measurement's checks (bench/wallets.ts, docs/wallets.md). */
export function checkWalletGuard(w: {
  addedP50: number;
  addedP99: number;
  guardCall: { p50: number; p99: number };
  errors: number;
}): TargetCheck[] {
  const limit = Math.round(w.guardCall.p50 * LIMITS.walletGuardAddedVsGuardCall * 10) / 10;
  return [
    {
      target: `wallet-guard: added p50 <= ${LIMITS.walletGuardAddedVsGuardCall} x the bare guard call's p50`,
      ok: w.addedP50 <= limit,
      detail: `adds ${w.addedP50} ms at p50, ${w.addedP99} ms at p99; the guard call alone p50 ${w.guardCall.p50} ms, p99 ${w.guardCall.p99} ms (limit ${limit})`,
    },
    { target: 'wallet-guard without errors', ok: w.errors === 0, detail: `${w.errors} errors` },
  ];
}
