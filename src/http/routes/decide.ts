/** POST /v1/decide and the endpoints that share it: a goal plus explicit checks. */
import type { ApiHandler } from '../api.js';
import { answer } from '../answer.js';
import type { Config } from '../../config.js';
import type { DecideRequest } from '../../generated/types.js';
import type { Metrics } from '../../metrics.js';
import type { Engine } from '../../engine/runner.js';
import { buildDecideResponse } from '../../engine/decide-response.js';
import { CheckKeys } from '../../engine/canonical.js';
import { checkName } from '../../checks/index.js';
import { attach, DECIDE_CHAIN_ID, type Attester } from '../../attest/index.js';
import type { VerdictLog } from '../../verdicts/log.js';
import type { PolicyService } from '../../policy/service.js';
import { underPolicy } from '../../guard/handler.js';

export function decideHandler(deps: {
  config: Readonly<Config>;
  engine: Engine;
  metrics: Metrics;
  attester?: Attester | null;
  verdicts?: VerdictLog | null;
  policies?: PolicyService | null;
}): ApiHandler {
  const { engine, attester } = deps;
  // Every route this handler answers validates its body as a DecideRequest: one text, one list of checks.
  const checkKeys = new CheckKeys();
  return answer<DecideRequest>(deps, async ({ req, res, body, requestId, deadlineMs }) => {
    // A decide names no action: answered as before, with the key's policy named and its hash
    // signed (docs/policies.md §3); a policy that cannot be read signs none.
    const under = underPolicy(res);
    const policy = under && deps.policies ? deps.policies.current(under).catch(() => null) : null;
    const checks = body.checks ?? [];
    const keys = checkKeys.of(req.bodyText, checks);
    const results = await engine.run(
      checks.map((check, i) => ({ name: checkName(check, i, checks), check, key: keys[i] })),
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
    const p = policy ? await policy : null;
    if (under) response.decision.policy = p ? p.ref : null;
    return attach(attester, req, res, response, DECIDE_CHAIN_ID, null, p?.hash ?? null);
  });
}
