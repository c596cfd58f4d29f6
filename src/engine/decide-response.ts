/** Shapes a DecideResponse from results and the judge's judgement; shared by decide, guard and agents. */
import { isoNow } from '../clock.js';
import type { CheckResult } from '../checks/types.js';
import type { DecideResponse } from '../generated/types.js';
import { judge, type Judgement, type JudgePolicy } from './judge.js';

export interface ResponseMeta {
  requestId: string;
  deadlineMs: number;
  /** What was judged: the decide goal or the guard action, echoed into `decision`. */
  judged: Record<string, unknown>;
}

const LEAD: Record<string, string> = { proceed: 'Proceed', wait: 'Wait', block: 'Block' };

/** The counts of `decision.counts`, by status. */
export type StatusCounts = Judgement['counts'];

/**
 * The summary's opening: the verdict, then what the checks came to, "Proceed: of 4 checks, 4
 * passed, …". What decided it, if anything did, follows after one space.
 */
export function summaryOpening(verdict: string, c: StatusCounts, total: number): string {
  const tally = `${c.pass} passed, ${c.warn} warned, ${c.fail} failed, ${c.error} could not be evaluated${c.skipped ? `, ${c.skipped} skipped` : ''}`;
  return `${LEAD[verdict]}: of ${total} checks, ${tally}.`;
}

export function summarize(v: Judgement, total: number): string {
  if (total === 0 || v.failure_modes.includes('no_checks'))
    return 'Wait: no check could be evaluated, so nothing supports acting now.';
  const first = v.deciding.find((r) => r.status !== 'pass');
  const why = first ? ` ${first.message}` : '';
  return `${summaryOpening(v.verdict, v.counts, total)}${why}`;
}

export function buildDecideResponse(
  results: CheckResult[],
  policy: JudgePolicy,
  meta: ResponseMeta,
): DecideResponse & { decision: Record<string, unknown> } {
  const v = judge(results, policy);
  const decision: Record<string, unknown> = {
    verdict: v.verdict,
    summary: summarize(v, results.length),
    counts: v.counts,
    request_id: meta.requestId,
    evaluated_at: isoNow(),
    deadline_ms: meta.deadlineMs,
    ...meta.judged,
  };
  if (v.retry_after_s !== undefined) decision.retry_after_s = v.retry_after_s;
  return {
    verdict: v.verdict,
    confidence: v.confidence,
    risk: v.risk,
    expires_in: v.expires_in,
    decision,
    evidence: results,
    failure_modes: v.failure_modes,
  };
}

/** The request's deadline: the configured default, raised by `context.deadline_ms` up to the maximum. */
export function resolveDeadline(
  config: { requestDeadlineMs: number; maxDeadlineMs: number },
  context: { deadline_ms?: number } | undefined,
): number {
  const asked = context?.deadline_ms;
  if (typeof asked !== 'number') return config.requestDeadlineMs;
  return Math.min(config.maxDeadlineMs, Math.max(config.requestDeadlineMs, asked));
}
