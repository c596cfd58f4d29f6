/**
 * dex_price: one DEX pair's USD price, pool liquidity and 24 h volume within the caller's hard
 * bounds. A bound on a field the provider left out cannot be judged: error `field_missing`.
 */
import type { DexPriceCheck } from '../generated/types.js';
import type { CheckModule, CheckOutcome } from './types.js';
import { checkError } from './outcome.js';
import { type DexPairView, pairLabel, pairNotFound, runOnDexPair } from './dex-pair.js';
import { fmtNum, fmtUsd } from '../format.js';

export const DEX_PRICE_TTL_S = 30;

interface Bound {
  field: 'priceUsd' | 'liquidityUsd' | 'volumeH24';
  name: string;
  limit: number | null | undefined;
  below: boolean;
  reason: string;
  fmt: (n: number) => string;
}

function bounds(check: DexPriceCheck): Bound[] {
  return [
    {
      field: 'priceUsd',
      name: 'price_usd',
      limit: check.min_price_usd,
      below: true,
      reason: 'price_below_min',
      fmt: (n) => `$${fmtNum(n)}`,
    },
    {
      field: 'priceUsd',
      name: 'price_usd',
      limit: check.max_price_usd,
      below: false,
      reason: 'price_above_max',
      fmt: (n) => `$${fmtNum(n)}`,
    },
    {
      field: 'liquidityUsd',
      name: 'liquidity_usd',
      limit: check.min_liquidity_usd,
      below: true,
      reason: 'liquidity_below_min',
      fmt: fmtUsd,
    },
    {
      field: 'volumeH24',
      name: 'volume_h24_usd',
      limit: check.min_volume_h24_usd,
      below: true,
      reason: 'volume_below_min',
      fmt: fmtUsd,
    },
  ];
}

export function evaluateDexPrice(
  check: DexPriceCheck,
  pair: DexPairView | null,
  source = 'dex_provider',
): CheckOutcome {
  const expected = {
    min_price_usd: check.min_price_usd ?? null,
    max_price_usd: check.max_price_usd ?? null,
    min_liquidity_usd: check.min_liquidity_usd ?? null,
    min_volume_h24_usd: check.min_volume_h24_usd ?? null,
  };
  const base = { source, ttl_s: DEX_PRICE_TTL_S, expected };
  if (pair === null) return pairNotFound(check, base);
  const label = pairLabel(check, pair);
  const observed = {
    price_usd: pair.priceUsd,
    liquidity_usd: pair.liquidityUsd,
    volume_h24_usd: pair.volumeH24,
    pair: label,
    url: pair.url,
  };
  const active = bounds(check).filter((b) => b.limit !== null && b.limit !== undefined);
  const missing = [
    ...new Set(active.filter((b) => pair[b.field] === null || !Number.isFinite(pair[b.field])).map((b) => b.name)),
  ];
  if (missing.length > 0) {
    const message = `The DEX provider gave no ${missing.join(', ')} for ${label}, which the check bounds.`;
    return checkError('field_missing', message, source, { observed: { ...observed, missing }, expected });
  }
  const broken = active.filter((b) => {
    const v = pair[b.field] as number;
    return b.below ? v < (b.limit as number) : v > (b.limit as number);
  });
  if (broken.length > 0) {
    const parts = broken.map(
      (b) =>
        `${b.name} ${b.fmt(pair[b.field] as number)} is ${b.below ? 'below the minimum' : 'above the maximum'} ${b.fmt(b.limit as number)}`,
    );
    const violations = broken.map((b) => b.reason);
    return {
      ...base,
      status: 'fail',
      reason: broken[0].reason,
      message: `${label}: ${parts.join('; ')}.`,
      observed: { ...observed, violations },
    };
  }
  const price = pair.priceUsd === null ? 'no price' : `$${fmtNum(pair.priceUsd)}`;
  const liq = pair.liquidityUsd === null ? 'unknown liquidity' : `${fmtUsd(pair.liquidityUsd)} liquidity`;
  return {
    ...base,
    observed,
    status: 'pass',
    reason: null,
    message: `${label} at ${price} with ${liq} is within ${active.length} bound(s).`,
  };
}

export const dexPrice: CheckModule<DexPriceCheck> = {
  type: 'dex_price',
  upstream: 'dex_provider',
  run: runOnDexPair(DEX_PRICE_TTL_S, evaluateDexPrice),
};
