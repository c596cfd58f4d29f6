/**
 * POST /v1/guard and the endpoints that share it (execution-guard, x402, ACP): the validated
 * GuardRequest is planned, run through the engine within the request's deadline, and judged.
 */
import type { ApiHandler, ApiResponse } from '../http/api.js';
import { keccak256 } from '../crypto/keccak.js';
import type { PolicyService, Under, VerdictLogAs } from '../policy/service.js';
import type { VerdictLog } from '../verdicts/log.js';
import { answer } from '../http/answer.js';
import type { Config } from '../config.js';
import type { GuardRequest } from '../generated/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Engine, PlannedCheck } from '../engine/runner.js';
import { CheckKeys } from '../engine/canonical.js';
import { planGuard } from './plan.js';
import { screenGuard, learnFromProceed, readRecipientsAhead } from './screen.js';
import type { ScreeningView } from '../screening/view.js';
import type { Screening } from '../screening/service.js';
import { guardResponse, type GuardResponse } from './guard-response.js';
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
  /** Keys bound to a policy answer under it (docs/policies.md §3); absent: no policies. */
  policies?: PolicyService | null;
  /** The screening lists and known counterparties (docs/screening.md); absent: counterparty_screen is not run. */
  screening?: (ScreeningView & Pick<Screening, 'learn'>) | null;
  /** Where answers to keyed calls are logged (docs/policies.md §10); absent: not logged. */
  verdicts?: Pick<VerdictLog, 'record'> | null;
}

/**
 * The account whose known counterparties a call reads and teaches (docs/screening.md §5): the key's
 * account (an agent key's is its owner's); a call without a key has none.
 */
export function accountOf(billing: { kind: string; keyId?: string; accountId?: string } | undefined): string | null {
  if (billing?.kind !== 'key') return null;
  const id = billing.accountId ?? billing.keyId;
  return id ? `account:${id}` : null;
}

/** The key's policy, from what the billing gate left: null for a call with no policy. */
export function underPolicy(res: ApiResponse): Under | null {
  const b = res.locals.billing;
  return b?.kind === 'key' && b.policy && b.accountId ? { accountId: b.accountId, policy: b.policy } : null;
}

/** The id a signed answer will carry, and so its reservation's (docs/attestations.md §1). */
export function answerAttestationId(res: ApiResponse): string {
  // Kept for the signature, which signs the same hash.
  res.locals.answerIdHash ??= keccak256(Buffer.from(res.locals.answerId, 'utf8'));
  return `0x${res.locals.answerIdHash.toString('hex')}`;
}

export interface GuardRun {
  body: GuardRequest;
  requestId: string;
  deadlineMs: number;
  started: number;
  /** The endpoint that answers, when the answer is logged (docs/policies.md §10). */
  route?: string;
  /**
   * The text of the body, when the request's whole body is `body`, and the memo of its plan's
   * check keys: one per guard handler, whose config (which the plan reads) is fixed.
   */
  keyed?: { text: string | undefined; memo: CheckKeys };
}

/**
 * Under a policy, a logged answer that reserves has its verdict-log row written with the
 * reservation (docs/policies.md §10): the key and endpoint it is logged under, or null.
 */
function logAs(deps: GuardDeps, res: ApiResponse, run: GuardRun, dryRun: boolean): VerdictLogAs | null {
  const b = res.locals.billing;
  if (dryRun || !deps.verdicts || run.route === undefined || b?.kind !== 'key') return null;
  if (b.keyId === undefined || b.accountId === undefined) return null;
  return { keyId: b.keyId, keyName: b.keyName ?? '', endpoint: run.route };
}

/**
 * Plans, runs and judges a guard request; under a policy, adds its item (and reserves in its
 * limits unless `dryRun`). Shared by the guard endpoints and the dry run.
 */
export async function judgeGuard(
  deps: GuardDeps,
  res: ApiResponse,
  run: GuardRun,
  under: Under | null,
  dryRun: boolean,
): Promise<GuardResponse> {
  const { config, engine, logger } = deps;
  const { body, requestId, deadlineMs, started } = run;
  const policies = deps.policies ?? null;
  // The policy is read while the checks run (at once when this process's copy is fresh).
  const storeDown = res.locals.billing?.storeDown === true;
  const loading = under && policies && !storeDown ? policies.load(under) : null;
  const plan = planGuard(body, config);
  // counterparty_screen runs here, on the main thread, after the checks whose counterparties it
  // reads; the code reads of the recipients the request names start now, beside the checks.
  const screen = plan.planned.find((p) => p.entry === 'counterparty_screen');
  const readsAhead = screen && deps.screening ? readRecipientsAhead(config, screen, body) : undefined;
  const planned: PlannedCheck[] = plan.planned
    .filter((p) => p.entry !== 'counterparty_screen')
    .map(({ name, check }) => ({ name, check }));
  if (run.keyed !== undefined) {
    const keys = run.keyed.memo.of(
      run.keyed.text,
      planned.map((p) => p.check),
    );
    for (let i = 0; i < planned.length; i++) planned[i].key = keys[i];
  }
  const results = planned.length > 0 ? await engine.run(planned, { deadlineMs, requestId }) : [];
  const account = accountOf(res.locals.billing);
  if (screen) {
    // The policy's address sets are known counterparties too; a store that cannot answer leaves
    // the screen an error, never a pass (docs/screening.md §5).
    const sets = under && policies ? await policies.addressSets(under).then(Object.values, () => null) : [];
    results.push(
      await screenGuard(
        deps,
        screen,
        results,
        account,
        deadlineMs - (performance.now() - started),
        sets === null ? null : sets.flat(),
        readsAhead,
      ),
    );
  }
  let response = guardResponse(body, plan, results, {
    requestId,
    deadlineMs,
    latencyMs: performance.now() - started,
  });
  if (under) {
    const policy = loading === null ? 'unavailable' : loading instanceof Promise ? await loading : loading;
    const reservationId = answerAttestationId(res);
    const log = policies ? logAs(deps, res, run, dryRun) : null;
    // The policy's item and verdict are added to this answer in place (applyPolicy).
    if (policies)
      response = await policies.decide({ under, policy, body, results, base: response, reservationId, dryRun, log });
    // A reserved answer's row is then in the store already; the log leaves it alone.
    if (log !== null) res.locals.verdictLogged = reservationId;
    response.latency_ms = Math.max(0, Math.round(performance.now() - started));
  }
  logger.debug(
    { reqId: requestId, action: body.action, plan: plan.entries, verdict: response.verdict, checks: response.checks },
    'guard judged',
  );
  if (!dryRun && response.verdict === 'proceed' && account !== null && deps.screening)
    await learnFromProceed(deps.screening, account, results, logger);
  return response;
}

export function guardHandler(deps: GuardDeps): ApiHandler {
  const { attester } = deps;
  // Every route this handler answers validates its body as a GuardRequest: one text, one plan.
  const memo = new CheckKeys();
  return answer<GuardRequest>(deps, async ({ req, res, body, requestId, deadlineMs, started, route }) => {
    const run = { body, requestId, deadlineMs, started, route, keyed: { text: req.bodyText, memo } };
    const response = await judgeGuard(deps, res, run, underPolicy(res), false);
    // Under a policy the verdict signs its version's hash, which a pinned account checks (docs/attestations.md §4).
    const policy = response.decision.policy as { hash?: string } | null | undefined;
    return attach(attester, req, res, response, guardChainId(body.chain), transactionOf(body), policy?.hash ?? null);
  });
}
