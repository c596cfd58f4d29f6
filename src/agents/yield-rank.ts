/**
 * Yield routing's pure part (docs/rules.md §5): exclusions, then ranking by
 * apy * (1 - risk_score / 100), prefer_chain breaking ties, then the order the caller gave.
 * The stablecoin peg statuses come in as data, already checked once per distinct asset.
 */
import type { YieldRouteOption, YieldRoutingRequest, YieldRoutingResponse } from '../generated/types.js';
import { fmtNum, fmtUsd } from '../format.js';
import { normaliseAssetId, type PegStatus } from './peg.js';

export type { PegStatus };
type Ranked = YieldRoutingResponse['ranked'][number];
type Excluded = YieldRoutingResponse['excluded'][number];
type Reason = Excluded['reasons'][number];

/** The peg finding for one stablecoin: `unverified` when the check could not answer. */
export interface PegFinding {
  status: PegStatus;
  /** stablecoin_depeg's reason: depegged, unknown_asset, upstream_timeout, ... */
  reason: string | null;
  message: string;
  unverified: boolean;
}

export const SCORE_FORMULA = 'apy * (1 - risk_score / 100)';
export const DEFAULT_STABLECOIN = 'usd-coin';

/** Scores are rounded to 1e-9 so that equal products compare equal despite float noise. */
export function score(apy: number, riskScore: number): number {
  return Math.round(apy * (100 - riskScore) * 1e7) / 1e9;
}

export function stablecoinOf(o: YieldRouteOption): string {
  const id = typeof o.stablecoin_asset_id === 'string' ? normaliseAssetId(o.stablecoin_asset_id) : '';
  return id !== '' ? id : DEFAULT_STABLECOIN;
}

/** Each exclusion rule as data: the code, when it applies, and its sentence. */
const RULES: ReadonlyArray<{
  code: Reason['code'];
  applies: (o: YieldRouteOption, r: YieldRoutingRequest, peg: PegFinding) => boolean;
  message: (o: YieldRouteOption, r: YieldRoutingRequest, peg: PegFinding) => string;
}> = [
  {
    code: 'liquidity_unknown',
    // Unknown liquidity cannot be shown to meet a positive minimum.
    applies: (o, r) => (o.liquidity_usd === null || o.liquidity_usd === undefined) && r.min_liquidity_usd > 0,
    message: (_o, r) => `No liquidity_usd given; the minimum is ${fmtUsd(r.min_liquidity_usd)}.`,
  },
  {
    code: 'liquidity_below_min',
    applies: (o, r) => typeof o.liquidity_usd === 'number' && o.liquidity_usd < r.min_liquidity_usd,
    message: (o, r) =>
      `Liquidity ${fmtUsd(o.liquidity_usd as number)} is below the minimum ${fmtUsd(r.min_liquidity_usd)}.`,
  },
  {
    code: 'risk_above_max',
    applies: (o, r) => o.risk_score > r.max_risk_score,
    message: (o, r) => `Risk score ${fmtNum(o.risk_score)} is above the maximum ${fmtNum(r.max_risk_score)}.`,
  },
  { code: 'stablecoin_depegged', applies: (_o, _r, p) => p.status === 'depegged', message: (_o, _r, p) => p.message },
  {
    code: 'stablecoin_unknown',
    applies: (_o, _r, p) => p.status === 'unknown' && !p.unverified,
    message: (_o, _r, p) => p.message,
  },
  // Could not verify is never safe: an option whose peg could not be checked is not recommended.
  { code: 'stablecoin_unverified', applies: (_o, _r, p) => p.unverified, message: (_o, _r, p) => p.message },
];

export interface Routed {
  recommended: Ranked | null;
  ranked: Ranked[];
  excluded: Excluded[];
}

export function routeYield(req: YieldRoutingRequest, pegs: Readonly<Record<string, PegFinding>>): Routed {
  const prefer = req.prefer_chain ?? null;
  const ranked: Array<Ranked & { index: number }> = [];
  const excluded: Excluded[] = [];
  req.options.forEach((o, index) => {
    const asset = stablecoinOf(o);
    const peg = pegs[asset] ?? {
      status: 'unknown',
      reason: 'not_checked',
      message: `The peg of ${asset} was not checked.`,
      unverified: true,
    };
    const view = {
      name: o.name,
      protocol: o.protocol ?? null,
      chain: o.chain,
      apy: o.apy,
      risk_score: o.risk_score,
      liquidity_usd: o.liquidity_usd ?? null,
      stablecoin_asset_id: asset,
      stablecoin_status: peg.status,
    };
    const reasons = RULES.filter((rule) => rule.applies(o, req, peg)).map((rule) => ({
      code: rule.code,
      message: rule.message(o, req, peg),
    }));
    if (reasons.length > 0) excluded.push({ ...view, reasons });
    else
      ranked.push({
        ...view,
        rank: 0,
        score: score(o.apy, o.risk_score),
        preferred_chain: prefer !== null && o.chain === prefer,
        index,
      });
  });
  ranked.sort(
    (a, b) => b.score - a.score || Number(b.preferred_chain) - Number(a.preferred_chain) || a.index - b.index,
  );
  const out = ranked.map(({ index: _index, ...r }, i) => ({ ...r, rank: i + 1 }));
  return { recommended: out[0] ?? null, ranked: out, excluded };
}

/** One sentence for the caller: the pick and why, or why there is none. */
export function summarise(routed: Routed, total: number): string {
  const r = routed.recommended;
  if (r === null)
    return `No option qualifies: all ${total} excluded (${[...new Set(routed.excluded.flatMap((e) => e.reasons.map((x) => x.code)))].join(', ')}).`;
  const tie =
    routed.ranked[1] !== undefined && routed.ranked[1].score === r.score && r.preferred_chain
      ? ', preferred chain breaking a tie'
      : '';
  return `Recommended ${r.name} on ${r.chain}: ${fmtNum(r.apy)}% APY at risk ${fmtNum(r.risk_score)} scores ${fmtNum(r.score)}${tie}; ${routed.ranked.length} of ${total} option(s) qualify, ${routed.excluded.length} excluded.`;
}
