/**
 * Stablecoin intelligence (docs/rules.md §5): the peg of many stablecoins from ONE price-provider
 * call, each judged by the stablecoin_depeg rule, the worst asset named, and an overall verdict
 * by the engine's judge (a depeg or an unknown asset blocks, a warning or an
 * unanswered provider waits).
 */
import type { ApiHandler } from '../http/api.js';
import type { Config } from '../config.js';
import type { CheckResult } from '../checks/types.js';
import type { StablecoinIntelligenceRequest, StablecoinIntelligenceResponse } from '../generated/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Engine } from '../engine/runner.js';
import { judge, DEFAULT_POLICY } from '../engine/judge.js';
import { DEPEG_TTL_S, evaluateDepeg } from '../checks/stablecoin_depeg.js';
import { fromUpstreamFail } from '../checks/outcome.js';
import { fmtPct } from '../format.js';
import { deadline } from '../net/deadline.js';
import { PriceSnapshots, type Snapshot } from './price-snapshot.js';
import { PEG_SEVERITY, normaliseAssetId, pegStatus } from './peg.js';
import { answer, answerMeta, opening } from '../http/answer.js';

export const DEFAULT_STABLECOINS = Object.freeze(['usd-coin', 'tether', 'dai', 'ethena-usde', 'paypal-usd']);

type Asset = StablecoinIntelligenceResponse['assets'][number];
type Summary = StablecoinIntelligenceResponse['summary'];

export function requestedAssets(body: StablecoinIntelligenceRequest): string[] {
  const ids = body.asset_ids && body.asset_ids.length > 0 ? body.asset_ids : DEFAULT_STABLECOINS;
  return [...new Set(ids.map(normaliseAssetId).filter(Boolean))];
}

/** One result per asset from the one snapshot: the stablecoin_depeg rule, or the provider's failure. */
export function assessAssets(
  body: StablecoinIntelligenceRequest,
  assets: string[],
  snap: Snapshot,
  nowMs: number,
): { results: CheckResult[]; views: Asset[] } {
  const results: CheckResult[] = [];
  const views: Asset[] = [];
  for (const asset_id of assets) {
    const check = {
      type: 'stablecoin_depeg' as const,
      asset_id,
      quote: body.quote,
      warn_deviation_pct: body.warn_deviation_pct,
      block_deviation_pct: body.block_deviation_pct,
    };
    const outcome = snap.res.ok
      ? evaluateDepeg(check, snap.res.data[asset_id], snap.res.source)
      : fromUpstreamFail(snap.res, DEPEG_TTL_S);
    results.push({
      ...outcome,
      name: `stablecoin_depeg[${asset_id}]`,
      type: 'stablecoin_depeg',
      latency_ms: snap.cached ? 0 : snap.res.latencyMs,
      cached: snap.cached,
      age_s: snap.ageS,
    });
    const obs = (outcome.observed ?? {}) as {
      price?: number | null;
      deviation_pct?: number;
      last_updated_at?: number | null;
    };
    const updated = typeof obs.last_updated_at === 'number' ? obs.last_updated_at : null;
    views.push({
      asset_id,
      status: pegStatus(outcome),
      price: typeof obs.price === 'number' ? obs.price : null,
      deviation_pct: typeof obs.deviation_pct === 'number' ? obs.deviation_pct : null,
      last_updated_at: updated === null ? null : new Date(updated * 1000).toISOString(),
      age_s: updated === null ? null : Math.max(0, Math.round(nowMs / 1000 - updated)),
      reason: outcome.reason,
      message: outcome.message,
    });
  }
  return { results, views };
}

/** The worst asset: by peg status, then by distance from the peg. */
export function summariseAssets(views: Asset[]): Summary {
  const counts = { pegged: 0, warning: 0, depegged: 0, unknown: 0 };
  for (const v of views) counts[v.status]++;
  const worst = [...views].sort(
    (a, b) => PEG_SEVERITY[b.status] - PEG_SEVERITY[a.status] || (b.deviation_pct ?? 0) - (a.deviation_pct ?? 0),
  )[0];
  const tally = `${counts.pegged} pegged, ${counts.warning} warning, ${counts.depegged} depegged, ${counts.unknown} unknown`;
  if (!worst)
    return {
      worst_asset: null,
      worst_status: null,
      worst_deviation_pct: null,
      counts,
      message: 'No asset was analysed.',
    };
  const off = worst.deviation_pct === null ? '' : ` (${fmtPct(worst.deviation_pct)} off peg)`;
  return {
    worst_asset: worst.asset_id,
    worst_status: worst.status,
    worst_deviation_pct: worst.deviation_pct,
    counts,
    message: `Of ${views.length} stablecoins: ${tally}. Worst: ${worst.asset_id}, ${worst.status}${off}. ${worst.message}`,
  };
}

export interface AgentDeps {
  config: Readonly<Config>;
  engine: Engine;
  logger: Logger;
  metrics?: Metrics;
}

export function stablecoinHandler(deps: AgentDeps): ApiHandler {
  const { config, logger } = deps;
  const snapshots = new PriceSnapshots(DEPEG_TTL_S * 1000);
  return answer<StablecoinIntelligenceRequest>(deps, async (call) => {
    const { body, requestId, deadlineMs } = call;
    const assets = requestedAssets(body);
    const quote = normaliseAssetId(body.quote);
    // A timer cleared with the answer (AbortSignal.timeout's would fire later, in another request's time).
    const limit = deadline(undefined, deadlineMs);
    const snap = await snapshots.get(config, assets, quote, limit.signal).finally(limit.done);
    const { results, views } = assessAssets({ ...body, quote }, assets, snap, Date.now());
    const v = judge(results, DEFAULT_POLICY);
    const response: StablecoinIntelligenceResponse = {
      ...opening(v),
      quote,
      thresholds: { warn_deviation_pct: body.warn_deviation_pct, block_deviation_pct: body.block_deviation_pct },
      assets: views,
      summary: summariseAssets(views),
      failure_modes: v.failure_modes,
      source: snap.res.source,
      cached: snap.cached,
      ...answerMeta(call),
    };
    logger.debug(
      { reqId: requestId, assets: assets.length, verdict: response.verdict, cached: snap.cached },
      'stablecoins analysed',
    );
    return response;
  });
}
