/**
 * The DEX pair lookup that dex_price, rug_pull_risk and liquidity_depth share: one provider call
 * for `chain/pair_address`, its failure mapped the same way for all three, and the same answer
 * for a pair the provider does not know. Each check keeps only its own judgement of the pair.
 */
import type { DexPair } from '../upstreams/dex.js';
import { getDexPair } from '../upstreams/dex.js';
import { fromUpstreamFail, neverThrow } from './outcome.js';
import type { CheckContext, CheckOutcome } from './types.js';

/** The pair fields the DEX checks read (tests build just these). */
export type DexPairView = Pick<
  DexPair,
  | 'priceUsd'
  | 'liquidityUsd'
  | 'volumeH24'
  | 'buysH24'
  | 'sellsH24'
  | 'fdv'
  | 'pairCreatedAt'
  | 'baseSymbol'
  | 'quoteSymbol'
  | 'url'
>;

/** What every DEX check names: the pair on its chain. */
export interface DexPairRef {
  chain: string;
  pair_address: string;
}

/** How a check judges the pair it asked for; `pair` is null when the provider knows no such pair. */
export type JudgePair<C> = (check: C, pair: DexPairView | null, source: string) => CheckOutcome;

/**
 * A DEX check's `run`: looks the pair up, answers an upstream failure with `failTtlS`, and hands
 * the pair (or null) to `judge`. Never throws.
 */
export function runOnDexPair<C extends DexPairRef>(
  failTtlS: number,
  judge: JudgePair<C>,
): (check: C, ctx: CheckContext) => Promise<CheckOutcome> {
  return neverThrow(async (check, ctx) => {
    const res = await getDexPair(ctx.config, check.chain, check.pair_address, ctx.signal);
    if (!res.ok) return fromUpstreamFail(res, failTtlS);
    return judge(check, res.data, res.source);
  });
}

/** `chain/pair_address`, for messages about a pair without symbols. */
export function pairWhere(check: DexPairRef): string {
  return `${check.chain}/${check.pair_address}`;
}

/** `BASE/QUOTE` when the provider named both tokens, else `chain/pair_address`. */
export function pairLabel(check: DexPairRef, pair: DexPairView): string {
  return pair.baseSymbol && pair.quoteSymbol ? `${pair.baseSymbol}/${pair.quoteSymbol}` : pairWhere(check);
}

/** The answer for a pair the provider does not know: a fail, cached like any answer. */
export function pairNotFound(
  check: DexPairRef,
  base: { source: string; ttl_s: number; expected: unknown },
): CheckOutcome {
  return {
    ...base,
    status: 'fail',
    reason: 'pair_not_found',
    message: `The DEX provider knows no pair ${pairWhere(check)}.`,
    observed: { pair: null },
  };
}
