/**
 * Bridge risk (docs/rules.md §5): every status URL checked concurrently through the engine as a
 * bridge_exploit_monitor check, one result per URL, and an overall verdict. strict_mode (the
 * default) waits on any error; strict_mode false behaves like the guard's non-strict mode:
 * errors are tolerated while one page passes, and warnings proceed with risk medium.
 */
import type { ApiHandler } from '../http/api.js';
import type { CheckResult } from '../checks/types.js';
import type { BridgeRiskRequest, BridgeRiskResponse } from '../generated/types.js';
import { judge, type JudgePolicy } from '../engine/judge.js';
import { summarize } from '../engine/decide-response.js';
import type { AgentDeps } from './stablecoin.js';
import { answer, answerMeta, opening } from '../http/answer.js';

type Bridge = BridgeRiskResponse['bridges'][number];

export function bridgePolicy(strict: boolean): JudgePolicy {
  return strict ? { allowPartial: false, warnVerdict: 'wait' } : { allowPartial: true, warnVerdict: 'proceed' };
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** The per-URL view of one bridge_exploit_monitor result. */
export function bridgeView(url: string, r: CheckResult): Bridge {
  const obs = (r.observed ?? {}) as {
    http_status?: unknown;
    indicator?: unknown;
    danger_found?: unknown;
    safe_found?: unknown;
  };
  return {
    status_url: url,
    status: r.status,
    reason: r.reason,
    message: r.message,
    http_status: typeof obs.http_status === 'number' ? obs.http_status : null,
    indicator: typeof obs.indicator === 'string' ? obs.indicator : null,
    keywords_found: strings(obs.danger_found),
    safe_keywords_found: strings(obs.safe_found),
    latency_ms: r.latency_ms,
    cached: r.cached,
  };
}

export function bridgeRiskResponse(
  body: BridgeRiskRequest,
  urls: string[],
  results: CheckResult[],
  meta: ReturnType<typeof answerMeta>,
): BridgeRiskResponse {
  const v = judge(results, bridgePolicy(body.strict_mode));
  return {
    ...opening(v),
    strict_mode: body.strict_mode,
    bridges: urls.map((u, i) => bridgeView(u, results[i])),
    summary: summarize(v, results.length),
    failure_modes: v.failure_modes,
    evidence: results,
    ...meta,
  };
}

export function bridgeRiskHandler(deps: AgentDeps): ApiHandler {
  const { engine, logger } = deps;
  return answer<BridgeRiskRequest>(deps, async (call) => {
    const { body, requestId, deadlineMs } = call;
    const urls = [...new Set(body.bridge_status_urls)];
    const planned = urls.map((status_url, i) => ({
      name: urls.length > 1 ? `bridge_exploit_monitor[${i}]` : 'bridge_exploit_monitor',
      check: { type: 'bridge_exploit_monitor', status_url, expect_status: 200 },
    }));
    const results = await engine.run(planned, { deadlineMs, requestId });
    const response = bridgeRiskResponse(body, urls, results, answerMeta(call));
    logger.debug({ reqId: requestId, urls: urls.length, verdict: response.verdict }, 'bridges analysed');
    return response;
  });
}
