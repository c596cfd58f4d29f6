/**
 * From the guard's plan and the engine's results to the guard response (docs/rules.md §4).
 * Pure: the handler passes in the results, the latency and the request id.
 *
 * The strict-mode rules are a policy table: how an entry that cannot run is reported, and
 * which JudgePolicy the engine's judge applies.
 */
import type { CheckResult } from '../checks/types.js';
import type { CheckStatus } from '../wire.js';
import type { DecideResponse, GuardRequest } from '../generated/types.js';
import { buildDecideResponse } from '../engine/decide-response.js';
import type { JudgePolicy } from '../engine/judge.js';
import { fmtUsd } from '../format.js';
import { GUARD_THRESHOLDS, type GuardPlan, type PlanEntryName, type UnresolvedEntry } from './plan.js';

/** Statuses an unresolved entry is reported with, by strict mode and kind. */
const UNRESOLVED: Readonly<
  Record<'strict' | 'lenient', Record<UnresolvedEntry['kind'], { status: CheckStatus; reason: string }>>
> = {
  strict: {
    missing: { status: 'warn', reason: 'missing_input' },
    skipped: { status: 'skipped', reason: 'not_applicable' },
    invalid: { status: 'error', reason: 'invalid_input' },
  },
  lenient: {
    missing: { status: 'skipped', reason: 'missing_input' },
    skipped: { status: 'skipped', reason: 'not_applicable' },
    invalid: { status: 'error', reason: 'invalid_input' },
  },
};

/** A request fact that does not change by itself: an answer built on it can be reused this long. */
const UNRESOLVED_TTL_S = 300;

/** strict: errors wait, warns wait (block from the high-value tier up); lenient: errors and warns proceed. */
export function guardPolicy(
  strict: boolean,
  amountUsd: number | null | undefined,
): JudgePolicy & { highValue: boolean } {
  if (!strict) return { allowPartial: true, warnVerdict: 'proceed', highValue: false };
  const highValue = typeof amountUsd === 'number' && amountUsd >= GUARD_THRESHOLDS.highValueUsd;
  return { allowPartial: false, warnVerdict: highValue ? 'block' : 'wait', highValue };
}

export function unresolvedResult(u: UnresolvedEntry, strict: boolean): CheckResult {
  const { status, reason } = UNRESOLVED[strict ? 'strict' : 'lenient'][u.kind];
  return {
    name: u.name,
    type: u.type,
    status,
    reason,
    message: u.message,
    observed: { inputs: u.inputs },
    expected: null,
    source: null,
    latency_ms: 0,
    cached: false,
    age_s: 0,
    ttl_s: UNRESOLVED_TTL_S,
  };
}

/** Worst first, in the order the judge weighs them. */
const SEVERITY: Readonly<Record<CheckStatus, number>> = { fail: 4, warn: 3, error: 2, pass: 1, skipped: 0 };

/** Plan entry → status; an entry with several checks (several bridges) shows its worst. */
export function checksMap(
  results: CheckResult[],
  entryOf: (name: string) => PlanEntryName,
): Record<string, CheckStatus> {
  const out: Record<string, CheckStatus> = {};
  for (const r of results) {
    const e = entryOf(r.name);
    if (out[e] === undefined || SEVERITY[r.status] > SEVERITY[out[e]]) out[e] = r.status;
  }
  return out;
}

const OPENING: Record<string, string> = { proceed: 'Proceed', wait: 'Wait', block: 'Block' };

/** Sentences from the results' messages, worst first, then why the verdict follows from them. */
export function reasoning(
  req: GuardRequest,
  results: CheckResult[],
  verdict: string,
  policy: ReturnType<typeof guardPolicy>,
): string {
  const ordered = [...results].sort((a, b) => SEVERITY[b.status] - SEVERITY[a.status]);
  const lines = ordered.map((r) => `${r.name} ${r.status}: ${r.message}`);
  const amount = typeof req.amount_usd === 'number' ? ` of ${fmtUsd(req.amount_usd)}` : '';
  const mode = req.strict_mode
    ? 'strict mode'
    : 'non-strict mode (missing inputs skipped, errors tolerated while a check passes, warnings proceed)';
  const tier = policy.highValue ? `; at ${fmtUsd(GUARD_THRESHOLDS.highValueUsd)} or more every warning blocks` : '';
  return `${OPENING[verdict]} on ${req.action}${amount} on ${req.chain ?? 'base'}, ${mode}${tier}. ${lines.join(' ')}`.trim();
}

export type GuardResponse = DecideResponse & {
  checks: Record<string, CheckStatus>;
  reasoning: string;
  latency_ms: number;
};

export interface GuardMeta {
  requestId: string;
  deadlineMs: number;
  latencyMs: number;
}

/** The engine's results for `plan.planned`, in order, plus the plan's unresolved entries. */
export function guardResponse(
  req: GuardRequest,
  plan: GuardPlan,
  engineResults: CheckResult[],
  meta: GuardMeta,
): GuardResponse {
  const strict = req.strict_mode !== false;
  const policy = guardPolicy(strict, req.amount_usd);
  const entryByName = new Map<string, PlanEntryName>();
  for (const p of plan.planned) entryByName.set(p.name, p.entry);
  for (const u of plan.unresolved) entryByName.set(u.name, u.entry);
  // Evidence in plan-table order, whichever way each entry resolved.
  const all = [...engineResults, ...plan.unresolved.map((u) => unresolvedResult(u, strict))];
  const order = (r: CheckResult) => plan.entries.indexOf(entryByName.get(r.name) ?? (r.name as PlanEntryName));
  const results = all
    .map((r, i) => ({ r, i }))
    .sort((a, b) => order(a.r) - order(b.r) || a.i - b.i)
    .map((x) => x.r);

  const judged = {
    action: req.action,
    chain: req.chain ?? 'base',
    amount_usd: req.amount_usd ?? null,
    strict_mode: strict,
    high_value_tier: policy.highValue,
    plan: plan.entries,
  };
  const base = buildDecideResponse(results, policy, { requestId: meta.requestId, deadlineMs: meta.deadlineMs, judged });
  // An optional input left out (no pair, no RPC) is not a failure of the action.
  const notApplicable = new Set(
    results
      .filter((r) => r.status === 'skipped' && r.reason === 'not_applicable')
      .map((r) => `${r.name}:not_applicable`),
  );
  return {
    ...base,
    failure_modes: base.failure_modes.filter((f) => !notApplicable.has(f)),
    checks: checksMap(results, (name) => entryByName.get(name) ?? (name as PlanEntryName)),
    reasoning: reasoning(req, results, base.verdict, policy),
    latency_ms: Math.max(0, Math.round(meta.latencyMs)),
  };
}
