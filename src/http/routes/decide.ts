/** POST /v1/decide and the endpoints that share it: a goal plus explicit checks. */
import type { ApiHandler } from '../api.js';
import { answer } from '../answer.js';
import type { Config } from '../../config.js';
import type { DecideRequest } from '../../generated/types.js';
import type { Metrics } from '../../metrics.js';
import type { Engine } from '../../engine/runner.js';
import { buildDecideResponse } from '../../engine/decide-response.js';
import { checkName } from '../../checks/index.js';
import { attach, DECIDE_CHAIN_ID, type Attester } from '../../attest/index.js';
import type { VerdictLog } from '../../verdicts/log.js';

export function decideHandler(deps: {
  config: Readonly<Config>;
  engine: Engine;
  metrics: Metrics;
  attester?: Attester | null;
  verdicts?: VerdictLog | null;
}): ApiHandler {
  const { engine, attester } = deps;
  return answer<DecideRequest>(deps, async ({ req, res, body, requestId, deadlineMs }) => {
    const checks = body.checks ?? [];
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
    return attach(attester, req, res, response, DECIDE_CHAIN_ID);
  });
}
