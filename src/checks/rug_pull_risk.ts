/**
 * rug_pull_risk: heuristic signals read from one DEX pair. Only thin liquidity and blocked
 * sells fail on their own; the other signals warn, and two or more warns together fail
 * `rug_risk_high`. The parameters set the thresholds (docs/rules.md §2 and §7).
 */
import type { RugPullRiskCheck } from '../generated/types.js';
import type { Basis, CheckModule, CheckOutcome } from './types.js';
import { checkError } from './outcome.js';
import { type DexPairView, pairLabel, pairNotFound, runOnDexPair } from './dex-pair.js';
import { fmtNum, fmtUsd } from '../format.js';

export const RUG_TTL_S = 60;
/** The FDV/liquidity signal misfires on old blue chips traded in many pools, so it is kept to young pairs. */
export const FDV_SIGNAL_MAX_AGE_MINUTES = 30 * 24 * 60;
/** At least this many buys with no sell in 24 h looks like a honeypot. */
export const SELLS_BLOCKED_MIN_BUYS = 20;
/** Risk score points per signal, summed and capped at 100: one warn is 30, two reach 60. */
export const RISK_POINTS: Readonly<Record<string, number>> = Object.freeze({
  liquidity_below_min: 70,
  sells_blocked: 80,
  pair_too_young: 30,
  fdv_liquidity_ratio_high: 30,
  buys_below_min: 30,
  sells_below_min: 30,
});
const FAILS_ALONE = ['liquidity_below_min', 'sells_blocked'];
/**
 * What a fail rests on: thin liquidity is the caller's own bound; blocked sells, like any
 * combination of signals, only suggest a honeypot or a rug.
 */
const BASIS: Readonly<Record<string, Basis>> = Object.freeze({
  liquidity_below_min: 'bound',
  sells_blocked: 'heuristic',
});

interface Signal {
  reason: string;
  text: string;
}

export function evaluateRug(
  check: RugPullRiskCheck,
  pair: DexPairView | null,
  nowMs: number,
  source = 'dex_provider',
): CheckOutcome {
  const expected = {
    min_liquidity_usd: check.min_liquidity_usd,
    min_pair_age_minutes: check.min_pair_age_minutes,
    max_fdv_to_liquidity_ratio: check.max_fdv_to_liquidity_ratio,
    min_buys_h24: check.min_buys_h24 ?? null,
    min_sells_h24: check.min_sells_h24 ?? null,
  };
  const base = { source, ttl_s: RUG_TTL_S, expected };
  if (pair === null) return pairNotFound(check, base);
  const label = pairLabel(check, pair);
  const liq = pair.liquidityUsd;
  if (liq === null || !Number.isFinite(liq)) {
    const message = `The DEX provider gave no liquidity for ${label}; rug-pull risk cannot be judged without it.`;
    return checkError('field_missing', message, source, { observed: { missing: ['liquidity_usd'] }, expected });
  }
  const ageMin = pair.pairCreatedAt === null ? null : Math.max(0, Math.floor((nowMs - pair.pairCreatedAt) / 60000));
  const ratio = pair.fdv === null || liq <= 0 ? null : pair.fdv / liq;
  const { buysH24: buys, sellsH24: sells } = pair;
  const signals: Signal[] = [];
  const skipped: string[] = [];

  if (liq < check.min_liquidity_usd)
    signals.push({
      reason: 'liquidity_below_min',
      text: `liquidity ${fmtUsd(liq)} is below ${fmtUsd(check.min_liquidity_usd)}`,
    });
  if (buys !== null && sells !== null) {
    if (buys >= SELLS_BLOCKED_MIN_BUYS && sells === 0)
      signals.push({ reason: 'sells_blocked', text: `${buys} buys and no sells in 24 h` });
  } else skipped.push('sells_blocked');
  if (ageMin === null) skipped.push('pair_too_young');
  else if (ageMin < check.min_pair_age_minutes)
    signals.push({
      reason: 'pair_too_young',
      text: `the pair is ${ageMin} min old (minimum ${check.min_pair_age_minutes})`,
    });
  if (ageMin === null || ageMin >= FDV_SIGNAL_MAX_AGE_MINUTES || ratio === null)
    skipped.push('fdv_liquidity_ratio_high');
  else if (ratio > check.max_fdv_to_liquidity_ratio) {
    signals.push({
      reason: 'fdv_liquidity_ratio_high',
      text: `FDV is ${fmtNum(ratio, 4)}x the liquidity (maximum ${fmtNum(check.max_fdv_to_liquidity_ratio)}x)`,
    });
  }
  if (check.min_buys_h24 != null) {
    if (buys === null) skipped.push('buys_below_min');
    else if (buys < check.min_buys_h24)
      signals.push({ reason: 'buys_below_min', text: `${buys} buys in 24 h (minimum ${check.min_buys_h24})` });
  }
  if (check.min_sells_h24 != null) {
    if (sells === null) skipped.push('sells_below_min');
    else if (sells < check.min_sells_h24)
      signals.push({ reason: 'sells_below_min', text: `${sells} sells in 24 h (minimum ${check.min_sells_h24})` });
  }

  const score = Math.min(
    100,
    signals.reduce((s, x) => s + (RISK_POINTS[x.reason] ?? 0), 0),
  );
  const observed = {
    risk_score: score,
    signals: signals.map((s) => s.reason),
    skipped_signals: skipped,
    liquidity_usd: liq,
    pair_age_minutes: ageMin,
    fdv_to_liquidity_ratio: ratio === null ? null : Math.round(ratio * 100) / 100,
    buys_h24: buys,
    sells_h24: sells,
    pair: label,
  };
  // Inputs a signal needed and the provider left out: the answer stands, with less confidence.
  const unknown = [
    pair.pairCreatedAt === null,
    buys === null,
    sells === null,
    pair.fdv === null && (ageMin === null || ageMin < FDV_SIGNAL_MAX_AGE_MINUTES),
  ].filter(Boolean).length;
  const out = { ...base, observed, ...(unknown > 0 ? { unknown_inputs: unknown } : {}) };
  const detail = signals.map((s) => s.text).join('; ');
  const hard = signals.find((s) => FAILS_ALONE.includes(s.reason));
  if (hard)
    return {
      ...out,
      status: 'fail',
      reason: hard.reason,
      basis: BASIS[hard.reason] ?? 'heuristic',
      message: `${label} risk ${score}/100: ${detail}.`,
    };
  if (signals.length >= 2)
    return {
      ...out,
      status: 'fail',
      reason: 'rug_risk_high',
      basis: 'heuristic',
      components: signals.map((s) => s.reason),
      message: `${label} risk ${score}/100 from ${signals.length} signals: ${detail}.`,
    };
  if (signals.length === 1)
    return { ...out, status: 'warn', reason: signals[0].reason, message: `${label} risk ${score}/100: ${detail}.` };
  const age = ageMin === null ? 'age unknown' : `${ageMin} min old`;
  return {
    ...out,
    status: 'pass',
    reason: null,
    message: `${label} risk ${score}/100: liquidity ${fmtUsd(liq)}, ${age}, no rug signal.`,
  };
}

export const rugPullRisk: CheckModule<RugPullRiskCheck> = {
  type: 'rug_pull_risk',
  upstream: 'dex_provider',
  run: runOnDexPair(RUG_TTL_S, (c, pair, source) => evaluateRug(c, pair, Date.now(), source)),
};
