/**
 * liquidity_depth (guard-only: the guard plans it; a decide request cannot name it): is the
 * pool deep enough for the trade? The price impact is estimated as amount_usd / liquidity_usd: a first-order estimate, good
 * enough to tell a pool that absorbs the trade from one it would move. Without amount_usd only
 * the pool's liquidity is judged.
 */
import type { CheckModule, CheckOutcome, LiquidityDepthCheck } from './types.js';
import { checkError } from './outcome.js';
import { type DexPairView, pairLabel, pairNotFound, runOnDexPair } from './dex-pair.js';
import { fmtPct, fmtUsd, roundRatio } from '../format.js';

export const LIQUIDITY_DEPTH_TTL_S = 30;

export function evaluateLiquidityDepth(
  check: LiquidityDepthCheck,
  pair: DexPairView | null,
  source = 'dex_provider',
): CheckOutcome {
  const expected = {
    min_liquidity_usd: check.min_liquidity_usd,
    impact_pass_pct: check.impact_pass_pct,
    impact_warn_pct: check.impact_warn_pct,
  };
  const base = { source, ttl_s: LIQUIDITY_DEPTH_TTL_S, expected };
  if (pair === null) return pairNotFound(check, base);
  const label = pairLabel(check, pair);
  const liquidity = pair.liquidityUsd;
  if (liquidity === null || !Number.isFinite(liquidity)) {
    return checkError('field_missing', `The DEX provider gave no liquidity for ${label}.`, source, {
      observed: { pair: label, liquidity_usd: null },
      expected,
    });
  }
  const impact = check.amount_usd === null ? null : liquidity > 0 ? roundRatio(check.amount_usd / liquidity) : null;
  const observed = {
    pair: label,
    liquidity_usd: liquidity,
    amount_usd: check.amount_usd,
    price_impact_pct: impact,
    url: pair.url,
  };
  if (liquidity < check.min_liquidity_usd) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'liquidity_below_min',
      message: `${label} holds ${fmtUsd(liquidity)} of liquidity, below the minimum ${fmtUsd(check.min_liquidity_usd)}.`,
    };
  }
  if (check.amount_usd === null || impact === null) {
    return {
      ...base,
      observed,
      status: 'pass',
      reason: null,
      message: `${label} holds ${fmtUsd(liquidity)} of liquidity (minimum ${fmtUsd(check.min_liquidity_usd)}); no amount_usd, so price impact not estimated.`,
    };
  }
  const trade = `${fmtUsd(check.amount_usd)} into ${label} with ${fmtUsd(liquidity)} of liquidity is an estimated ${fmtPct(impact)} price impact`;
  if (impact > check.impact_warn_pct) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'price_impact_too_high',
      message: `${trade}; block above ${fmtPct(check.impact_warn_pct)}.`,
    };
  }
  if (impact > check.impact_pass_pct) {
    return {
      ...base,
      observed,
      status: 'warn',
      reason: 'price_impact_high',
      message: `${trade}; warn above ${fmtPct(check.impact_pass_pct)}, block above ${fmtPct(check.impact_warn_pct)}.`,
    };
  }
  return {
    ...base,
    observed,
    status: 'pass',
    reason: null,
    message: `${trade}; within ${fmtPct(check.impact_pass_pct)}.`,
  };
}

export const liquidityDepth: CheckModule<LiquidityDepthCheck> = {
  type: 'liquidity_depth',
  upstream: 'dex_provider',
  run: runOnDexPair(LIQUIDITY_DEPTH_TTL_S, evaluateLiquidityDepth),
};
