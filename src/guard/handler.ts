/**
 * POST /v1/guard and the endpoints that share it (execution-guard, x402, ACP): the validated
 * GuardRequest is planned, run through the engine within the request's deadline, and judged.
 */
import type { ApiHandler } from '../http/api.js';
import { sendJson } from '../http/errors.js';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import type { GuardRequest } from '../generated/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Engine } from '../engine/runner.js';
import { resolveDeadline } from '../engine/decide-response.js';
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
  const { config, engine, logger, metrics, attester } = deps;
  return async (req, res) => {
    const started = performance.now();
    const body = req.body as GuardRequest;
    const requestId = (res.locals.requestId as string | undefined) ?? randomUUID();
    const deadlineMs = resolveDeadline(config, body.context);
    const plan = planGuard(body, config);
    const planned = plan.planned.map(({ name, check }) => ({ name, check }));
    const results = planned.length > 0 ? await engine.run(planned, { deadlineMs, requestId }) : [];
    const response = guardResponse(body, plan, results, {
      requestId,
      deadlineMs,
      latencyMs: performance.now() - started,
    });
    metrics?.verdict((res.locals.route as string | undefined) ?? '/v1/guard', response.verdict);
    logger.debug(
      { reqId: requestId, action: body.action, plan: plan.entries, verdict: response.verdict, checks: response.checks },
      'guard judged',
    );
    const signed = await attach(attester, req, res, response, guardChainId(body.chain), transactionOf(body));
    sendJson(res, 200, signed);
  };
}
