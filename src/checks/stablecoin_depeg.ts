/**
 * stablecoin_depeg: deviation of a stablecoin's price from a peg of 1 unit of the quote.
 * deviation = |price - 1|; warn at >= warn_deviation_pct, fail at >= block_deviation_pct.
 */
import type { StablecoinDepegCheck } from '../generated/types.js';
import type { CheckModule, CheckOutcome } from './types.js';
import { fromUpstreamFail, neverThrow } from './outcome.js';
import { fmtNum, fmtPct, roundRatio } from '../format.js';
import { getSimplePrices } from '../upstreams/price.js';
import { priceKey, type PriceQuote } from './price.js';

export const DEPEG_TTL_S = 30;

export function evaluateDepeg(
  check: StablecoinDepegCheck,
  quote: PriceQuote | undefined,
  source = 'price_provider',
): CheckOutcome {
  const expected = {
    peg: 1,
    warn_deviation_pct: check.warn_deviation_pct,
    block_deviation_pct: check.block_deviation_pct,
  };
  const base = { source, ttl_s: DEPEG_TTL_S, expected };
  if (quote === undefined || quote.price === null || !Number.isFinite(quote.price)) {
    const message = `The price provider has no ${check.quote} price for ${check.asset_id}, so its peg cannot be judged.`;
    return { ...base, status: 'fail', reason: 'unknown_asset', message, observed: { price: null, quote: check.quote } };
  }
  const price = quote.price;
  const deviation = roundRatio(Math.abs(price - 1));
  const observed = { price, deviation_pct: deviation, quote: check.quote, last_updated_at: quote.lastUpdatedAt };
  const at = `${check.asset_id} at ${fmtNum(price)} ${check.quote} is ${fmtPct(deviation)} off peg`;
  if (deviation >= check.block_deviation_pct) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'depegged',
      message: `${at}; block limit ${fmtPct(check.block_deviation_pct)}.`,
    };
  }
  if (deviation >= check.warn_deviation_pct) {
    const message = `${at}; warn limit ${fmtPct(check.warn_deviation_pct)}, block limit ${fmtPct(check.block_deviation_pct)}.`;
    return { ...base, observed, status: 'warn', reason: 'depeg_warning', message };
  }
  return {
    ...base,
    observed,
    status: 'pass',
    reason: null,
    message: `${at}; warn limit ${fmtPct(check.warn_deviation_pct)}.`,
  };
}

export const stablecoinDepeg: CheckModule<StablecoinDepegCheck> = {
  type: 'stablecoin_depeg',
  upstream: 'price_provider',
  run: neverThrow(async (check, ctx) => {
    const res = await getSimplePrices(ctx.config, [check.asset_id], check.quote, ctx.signal);
    if (!res.ok) return fromUpstreamFail(res, DEPEG_TTL_S);
    return evaluateDepeg(check, res.data[priceKey(check.asset_id)], res.source);
  }),
};
