/** POST /v1/decide and the endpoints that share it: a goal plus explicit checks. */
import type { ApiHandler } from '../api.js';
import { sendJson } from '../errors.js';
import type { Config } from '../../config.js';
import type { DecideRequest } from '../../generated/types.js';
import type { Metrics } from '../../metrics.js';
import type { Engine } from '../../engine/runner.js';
import { buildDecideResponse, resolveDeadline } from '../../engine/decide-response.js';
import { checkName } from '../../checks/index.js';
import { attach, DECIDE_CHAIN_ID, type Attester } from '../../attest/index.js';

export function decideHandler(
  deps: { config: Readonly<Config>; engine: Engine; metrics: Metrics; attester?: Attester | null },
  endpoint: string,
): ApiHandler {
  const { config, engine, metrics, attester } = deps;
  return async (req, res) => {
    const body = req.body as DecideRequest;
    const checks = body.checks ?? [];
    const deadlineMs = resolveDeadline(config, body.context);
    const requestId = res.locals.requestId as string;
    const results = await engine.run(
      checks.map((check, i) => ({ name: checkName(check, i, checks), check })),
      { deadlineMs, requestId },
    );
    const response = buildDecideResponse(
      results,
      { allowPartial: body.allow_decide_on_partial, warnVerdict: 'wait' },
      {
        requestId,
        deadlineMs,
        judged: { goal: body.goal, ...(body.constraints ? { constraints: body.constraints } : {}) },
      },
    );
    metrics.verdict(endpoint, response.verdict);
    sendJson(res, 200, await attach(attester, req, res, response, DECIDE_CHAIN_ID));
  };
}
