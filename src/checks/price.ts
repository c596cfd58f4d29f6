/**
 * price: the price provider's price of an asset in a quote currency, within the caller's hard
 * bounds and fresh. Bounds crossed fail; a quote older than ten minutes warns.
 */
import type { PriceCheck } from '../generated/types.js';
import type { CheckModule, CheckOutcome } from './types.js';
import { fromUpstreamFail, neverThrow } from './outcome.js';
import { fmtNum } from '../format.js';
import { getSimplePrices, type SimplePrice } from '../upstreams/price.js';

export const PRICE_TTL_S = 30;
/** A quote older than this is stale (docs/rules.md §2). */
export const PRICE_STALE_AFTER_S = 600;

/** One asset's quote as the price client returns it; lastUpdatedAt is Unix seconds. */
export type PriceQuote = SimplePrice;

/** The client answers under the lower-cased, trimmed id it sent. */
export const priceKey = (assetId: string): string => assetId.trim().toLowerCase();

export function evaluatePrice(
  check: PriceCheck,
  quote: PriceQuote | undefined,
  nowMs: number,
  source = 'price_provider',
): CheckOutcome {
  const min = check.min_price ?? null;
  const max = check.max_price ?? null;
  const expected = { min_price: min, max_price: max, max_age_s: PRICE_STALE_AFTER_S };
  const base = { source, ttl_s: PRICE_TTL_S, expected };
  const pair = `${check.asset_id}/${check.quote}`;
  if (quote === undefined || quote.price === null || !Number.isFinite(quote.price)) {
    const message = `The price provider has no ${check.quote} price for ${check.asset_id}.`;
    return { ...base, status: 'fail', reason: 'unknown_asset', message, observed: { price: null, quote: check.quote } };
  }
  const price = quote.price;
  const ageS = quote.lastUpdatedAt === null ? null : Math.max(0, Math.round(nowMs / 1000 - quote.lastUpdatedAt));
  const observed = { price, quote: check.quote, last_updated_at: quote.lastUpdatedAt, age_s: ageS };
  if (min !== null && price < min) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'price_below_min',
      message: `${pair} at ${fmtNum(price)} is below the minimum ${fmtNum(min)}.`,
    };
  }
  if (max !== null && price > max) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'price_above_max',
      message: `${pair} at ${fmtNum(price)} is above the maximum ${fmtNum(max)}.`,
    };
  }
  // No timestamp means freshness cannot be shown, which is treated like a stale quote.
  if (ageS === null || ageS > PRICE_STALE_AFTER_S) {
    const age = ageS === null ? 'has no last-updated time' : `was last updated ${ageS} s ago`;
    const message = `${pair} at ${fmtNum(price)} ${age}; quotes older than ${PRICE_STALE_AFTER_S} s are stale.`;
    return { ...base, observed, status: 'warn', reason: 'price_stale', message };
  }
  const bounds = [min === null ? null : `>= ${fmtNum(min)}`, max === null ? null : `<= ${fmtNum(max)}`]
    .filter(Boolean)
    .join(' and ');
  const within = bounds ? ` is within bounds (${bounds})` : '';
  return {
    ...base,
    observed,
    status: 'pass',
    reason: null,
    message: `${pair} at ${fmtNum(price)}${within}, updated ${ageS} s ago.`,
  };
}

export const price: CheckModule<PriceCheck> = {
  type: 'price',
  upstream: 'price_provider',
  run: neverThrow(async (check, ctx) => {
    const res = await getSimplePrices(ctx.config, [check.asset_id], check.quote, ctx.signal);
    if (!res.ok) return fromUpstreamFail(res, PRICE_TTL_S);
    return evaluatePrice(check, res.data[priceKey(check.asset_id)], Date.now(), res.source);
  }),
};
