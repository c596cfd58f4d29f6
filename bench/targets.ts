/**
 * The bench's pass/fail rules, as data over the measured figures (pure, no I/O):
 * p99 under 300 ms and no errors for every scenario at its stated load; the cached decide at least
 * 0.8 × the reference's throughput in the same run (its answers signed); the cold decide's p50
 * within 15 ms of the slowest upstream's latency; the paid decide's p99 within 20 ms of the keyed
 * decide's p99; the guard with a simulation's p50 within 15 ms of its two upstream rounds (the
 * node, then the price provider beside the node's token reads); the guard with a signed order's p50
 * within 15 ms of one upstream round (the price provider beside the node's token reads); the
 * cached guard, its answers logged, at least 0.9 × the same guard with the verdict log off; what a
 * guarded sendTransaction adds over an unguarded one within 1.25 × the bare guard call (p50).
 */
export interface Measured {
  name: string;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Interleaved scenarios: each round's req/s, in round order. */
  rounds?: number[];
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
  const plain = `${a.rps} vs ${b.rps} req/s`;
  const ra = a.rounds;
  const rb = b.rounds;
  if (ra && rb && ra.length === rb.length && ra.length > 1) {
    const each = ra.map((x, i) => (rb[i] > 0 ? x / rb[i] : 0));
    const sorted = [...each].sort((x, y) => x - y);
    const ratio = sorted[Math.floor((sorted.length - 1) / 2)];
    const list = each.map((r) => r.toFixed(2)).join(', ');
    return { ratio, detail: `${ratio.toFixed(2)}, the median of the rounds' ratios ${list} (medians ${plain})` };
  }
  const ratio = b.rps > 0 ? a.rps / b.rps : 0;
  return { ratio, detail: `${plain} = ${ratio.toFixed(2)}` };
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
  coldP50OverUpstreamMs: 15,
  paidP99OverKeyedMs: 20,
  simulationP50OverUpstreamsMs: 15,
  /** One instance's cached decide with REDIS_URL set, as a ratio to the same without it. */
  cachedWithRedisVsWithout: 0.9,
  /** The cached keyed guard, every answer logged, as a ratio to the same with the log off (docs/policies.md §10). */
  guardLoggedVsUnlogged: 0.9,
  /** Upstream requests per distinct check across a fleet of three (docs/fleet.md). */
  fleetUpstreamPerCheck: 1.0,
  /** A delegation scan's calls run side by side: one upstream round. */
  delegationP50OverUpstreamMs: 15,
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
  const cold = get('decide-cold');
  if (cold) {
    const limit = upstreamLatencyMs + LIMITS.coldP50OverUpstreamMs;
    out.push({
      target: `decide-cold p50 <= upstream ${upstreamLatencyMs} + ${LIMITS.coldP50OverUpstreamMs} ms`,
      ok: cold.p50 <= limit,
      detail: `p50 ${cold.p50} ms (limit ${limit})`,
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
  const keyed = get('decide-keyed');
  const paid = get('decide-paid');
  if (keyed && paid) {
    const limit = keyed.p99 + LIMITS.paidP99OverKeyedMs;
    out.push({
      target: `decide-paid p99 <= decide-keyed p99 + ${LIMITS.paidP99OverKeyedMs} ms`,
      ok: paid.p99 <= limit,
      detail: `p99 ${paid.p99} vs ${keyed.p99} ms (limit ${limit})`,
    });
  }
  return out;
}

/** Names of the yardsticks the signed cached decide is compared with, when they ran. */
export const YARDSTICKS = ['reference', 'floor', 'decide-cached-unsigned'] as const;

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
