/**
 * POST /v1/guard and the endpoints that share it (execution-guard, x402, ACP): the validated
 * GuardRequest is planned, run through the engine within the request's deadline, and judged.
 */
import type { ApiHandler } from '../http/api.js';
import { answer } from '../http/answer.js';
import type { Config } from '../config.js';
import type { GuardRequest } from '../generated/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Engine } from '../engine/runner.js';
import { planGuard } from './plan.js';
import { guardResponse } from './guard-response.js';
import { attach, guardChainId, type Attester } from '../attest/index.js';
import type { ActionFields } from '../attest/verdict.js';

/** The transaction the agent is about to send, when the request names one. */
function transactionOf(body: GuardRequest): ActionFields | null {
  return (body as GuardRequest & { transaction?: ActionFields | null }).transaction ?? null;
}

export interface GuardDeps {
  config: Readonly<Config>;
  engine: Engine;
  logger: Logger;
  metrics?: Metrics;
  attester?: Attester | null;
}

export function guardHandler(deps: GuardDeps): ApiHandler {
  const { config, engine, logger, attester } = deps;
  return answer<GuardRequest>(deps, async ({ req, res, body, requestId, deadlineMs, started }) => {
    const plan = planGuard(body, config);
    const planned = plan.planned.map(({ name, check }) => ({ name, check }));
    const results = planned.length > 0 ? await engine.run(planned, { deadlineMs, requestId }) : [];
    const response = guardResponse(body, plan, results, {
      requestId,
      deadlineMs,
      latencyMs: performance.now() - started,
    });
    logger.debug(
      { reqId: requestId, action: body.action, plan: plan.entries, verdict: response.verdict, checks: response.checks },
      'guard judged',
    );
    return attach(attester, req, res, response, guardChainId(body.chain), transactionOf(body));
  });
}
