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
import { screenGuard, learnFromProceed } from './screen.js';
import type { ScreeningView } from '../screening/view.js';
import type { Screening } from '../screening/service.js';
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
  /** The screening lists and known counterparties (docs/screening.md); absent: counterparty_screen is not run. */
  screening?: (ScreeningView & Pick<Screening, 'learn'>) | null;
}

/**
 * The account whose known counterparties a call reads and teaches (docs/screening.md §5): for now
 * the API key's id; a call without a key has none. The one place to change when keys belong to accounts.
 */
export function accountOf(billing: { kind: string; keyId?: string } | undefined): string | null {
  return billing?.kind === 'key' && billing.keyId ? `key:${billing.keyId}` : null;
}

export function guardHandler(deps: GuardDeps): ApiHandler {
  const { config, engine, logger, attester } = deps;
  return answer<GuardRequest>(deps, async ({ req, res, body, requestId, deadlineMs, started }) => {
    const plan = planGuard(body, config);
    // counterparty_screen runs here, on the main thread, after the checks whose counterparties it reads.
    const planned = plan.planned
      .filter((p) => p.entry !== 'counterparty_screen')
      .map(({ name, check }) => ({ name, check }));
    const results = planned.length > 0 ? await engine.run(planned, { deadlineMs, requestId }) : [];
    const screen = plan.planned.find((p) => p.entry === 'counterparty_screen');
    const account = accountOf(res.locals.billing);
    if (screen)
      results.push(await screenGuard(deps, screen, results, account, deadlineMs - (performance.now() - started)));
    const response = guardResponse(body, plan, results, {
      requestId,
      deadlineMs,
      latencyMs: performance.now() - started,
    });
    logger.debug(
      { reqId: requestId, action: body.action, plan: plan.entries, verdict: response.verdict, checks: response.checks },
      'guard judged',
    );
    if (response.verdict === 'proceed' && account !== null && deps.screening)
      await learnFromProceed(deps.screening, account, results, logger);
    return attach(attester, req, res, response, guardChainId(body.chain), transactionOf(body));
  });
}
