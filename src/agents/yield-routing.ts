/**
 * Yield routing (docs/rules.md §5): the peg of each DISTINCT stablecoin among the options is
 * checked once through the engine (cached, single-flight), then the pure ranking in
 * yield-rank.ts excludes and orders the options.
 */
import type { ApiHandler } from '../http/api.js';
import type { CheckResult } from '../checks/types.js';
import type { YieldRoutingRequest, YieldRoutingResponse } from '../generated/types.js';
import { GUARD_THRESHOLDS } from '../guard/plan.js';
import type { AgentDeps } from './stablecoin.js';
import { pegStatus } from './peg.js';
import { answer, answerMeta } from '../http/answer.js';
import { SCORE_FORMULA, routeYield, stablecoinOf, summarise, type PegFinding } from './yield-rank.js';

/** The depeg checks, one per distinct stablecoin, with the guard's peg thresholds. */
export function pegChecks(
  body: YieldRoutingRequest,
): Array<{ name: string; check: { type: string; [k: string]: unknown } }> {
  const assets = [...new Set(body.options.map(stablecoinOf))];
  return assets.map((asset_id) => ({
    name: `stablecoin_depeg[${asset_id}]`,
    check: {
      type: 'stablecoin_depeg',
      asset_id,
      quote: 'usd',
      warn_deviation_pct: GUARD_THRESHOLDS.depegWarnPct,
      block_deviation_pct: GUARD_THRESHOLDS.depegBlockPct,
    },
  }));
}

export function pegFindings(results: CheckResult[], assets: string[]): Record<string, PegFinding> {
  const out: Record<string, PegFinding> = {};
  results.forEach((r, i) => {
    out[assets[i]] = { status: pegStatus(r), reason: r.reason, message: r.message, unverified: r.status === 'error' };
  });
  return out;
}

export function yieldResponse(
  body: YieldRoutingRequest,
  results: CheckResult[],
  assets: string[],
  meta: ReturnType<typeof answerMeta>,
): YieldRoutingResponse {
  const pegs = pegFindings(results, assets);
  const routed = routeYield(body, pegs);
  return {
    ...routed,
    criteria: {
      min_liquidity_usd: body.min_liquidity_usd,
      max_risk_score: body.max_risk_score,
      prefer_chain: body.prefer_chain ?? null,
      score: SCORE_FORMULA,
    },
    stablecoins: results.map((r, i) => {
      const obs = (r.observed ?? {}) as { price?: unknown; deviation_pct?: unknown };
      return {
        asset_id: assets[i],
        status: pegs[assets[i]].status,
        price: typeof obs.price === 'number' ? obs.price : null,
        deviation_pct: typeof obs.deviation_pct === 'number' ? obs.deviation_pct : null,
        reason: r.reason,
        message: r.message,
      };
    }),
    summary: summarise(routed, body.options.length),
    evidence: results,
    ...meta,
  };
}

export function yieldRoutingHandler(deps: AgentDeps): ApiHandler {
  const { engine, logger } = deps;
  return answer<YieldRoutingRequest>(deps, async (call) => {
    const { body, requestId, deadlineMs } = call;
    const planned = pegChecks(body);
    const results = await engine.run(planned, { deadlineMs, requestId });
    const response = yieldResponse(
      body,
      results,
      planned.map((p) => p.check.asset_id as string),
      answerMeta(call),
    );
    logger.debug(
      {
        reqId: requestId,
        options: body.options.length,
        ranked: response.ranked.length,
        recommended: response.recommended?.name ?? null,
      },
      'yield routed',
    );
    return response;
  });
}
