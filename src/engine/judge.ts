/**
 * The judge: from check results to a judgement (the verdict, risk, confidence, expiry and
 * failure modes), as one pure function. It reads data the results carry (status, timing,
 * basis, unknown inputs, components), never a check type or a reason code.
 *
 * Confidence, in [0, 1]:
 *   coverage  = definite results (pass/warn/fail) / results not skipped
 *   support   = per definite result, freshness × completeness:
 *               freshness    = 1 - 0.1 × age/ttl (a cached answer near expiry counts 0.9)
 *               completeness = 0.8 ^ unknown_inputs (each input the check had to judge without)
 *   block on an explicit bound (some fail with basis `bound`): 0.9 + 0.1 × coverage
 *   block on heuristics alone (every fail has basis `heuristic`): 0.6 + 0.2 × coverage × their mean support
 *   wait on warns: 0.8 × coverage × mean support
 *   proceed / wait on errors: coverage × mean support
 *   nothing evaluated: 0
 * So all-pass-fresh-complete gives ~1.0, every error lowers it through coverage, every unknown
 * input through completeness, and an explicit breach never drops below 0.9.
 */
import type { CheckResult } from '../checks/types.js';
import type { CheckStatus, Verdict } from '../wire.js';

export type Risk = 'low' | 'medium' | 'high';

export interface JudgePolicy {
  /** Errors alone do not hold back a proceed when at least one check passed. */
  allowPartial: boolean;
  /** What warns (and no fails) lead to: `wait` by default, `proceed` in the guard's non-strict mode, `block` for strict high-value guards. */
  warnVerdict: Verdict;
}

/** What the judge decides from a set of results. */
export interface Judgement {
  verdict: Verdict;
  risk: Risk;
  confidence: number;
  expires_in: number;
  failure_modes: string[];
  retry_after_s?: number;
  counts: Record<CheckStatus, number>;
  /** The results that decided the verdict. */
  deciding: CheckResult[];
}

export const DEFAULT_POLICY: JudgePolicy = Object.freeze({ allowPartial: false, warnVerdict: 'wait' });

/** What each input a check had to judge without leaves of a result's weight. */
export const UNKNOWN_INPUT_FACTOR = 0.8;

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

function timeLeft(r: CheckResult): number {
  return r.cached ? Math.max(1, r.ttl_s - r.age_s) : r.ttl_s;
}

export function failureModes(results: CheckResult[]): string[] {
  const out: string[] = [];
  for (const r of results) {
    if (r.status === 'pass') continue;
    out.push(`${r.name}:${r.reason ?? r.status}`);
    // A result combined from several signals lists them too.
    for (const c of r.components ?? []) out.push(`${r.name}:${c}`);
  }
  return out;
}

/** How much a definite result counts: less as it ages in the cache and for each unknown input. */
function support(r: CheckResult): number {
  const freshness = r.ttl_s > 0 ? 1 - 0.1 * Math.min(1, r.age_s / r.ttl_s) : 1;
  return freshness * UNKNOWN_INPUT_FACTOR ** Math.max(0, r.unknown_inputs ?? 0);
}

function meanSupport(rs: CheckResult[]): number {
  return rs.length === 0 ? 0 : rs.reduce((a, r) => a + support(r), 0) / rs.length;
}

export function judge(results: CheckResult[], policy: JudgePolicy = DEFAULT_POLICY): Judgement {
  const counts: Record<CheckStatus, number> = { pass: 0, warn: 0, fail: 0, error: 0, skipped: 0 };
  for (const r of results) counts[r.status]++;
  const by = (s: CheckStatus) => results.filter((r) => r.status === s);
  const definite = results.filter((r) => r.status === 'pass' || r.status === 'warn' || r.status === 'fail');
  const considered = results.length - counts.skipped;
  const coverage = considered === 0 ? 0 : definite.length / considered;
  const supported = meanSupport(definite);
  const failure_modes = failureModes(results);

  let v: Verdict;
  let risk: Risk;
  let confidence: number;
  let deciding: CheckResult[];
  if (counts.fail > 0) {
    deciding = by('fail');
    v = 'block';
    risk = 'high';
    const explicit = deciding.some((r) => (r.basis ?? 'bound') === 'bound');
    confidence = explicit ? 0.9 + 0.1 * coverage : 0.6 + 0.2 * coverage * meanSupport(deciding);
  } else if (counts.warn > 0) {
    deciding = by('warn');
    v = policy.warnVerdict;
    risk = policy.warnVerdict === 'block' ? 'high' : 'medium';
    confidence = policy.warnVerdict === 'block' ? 0.9 * coverage : 0.8 * coverage * supported;
  } else if (counts.error > 0) {
    const canProceed = policy.allowPartial && counts.pass > 0;
    deciding = canProceed ? by('pass') : by('error');
    v = canProceed ? 'proceed' : 'wait';
    risk = 'medium';
    confidence = coverage * supported;
  } else if (counts.pass > 0) {
    deciding = by('pass');
    v = 'proceed';
    risk = 'low';
    confidence = coverage * supported;
  } else {
    deciding = [];
    v = 'wait';
    risk = 'medium';
    confidence = 0;
    failure_modes.push('no_checks');
  }

  const ttls = deciding.filter((r) => r.status !== 'error').map(timeLeft);
  const expires_in = ttls.length > 0 ? Math.max(0, Math.floor(Math.min(...ttls))) : 0;
  const out: Judgement = {
    verdict: v,
    risk,
    confidence: round(Math.min(1, Math.max(0, confidence))),
    expires_in,
    failure_modes,
    counts,
    deciding,
  };
  if (v === 'wait') {
    const hints = deciding.map((r) =>
      r.status === 'error' ? ((r as { retry_after_s?: number }).retry_after_s ?? 1) : timeLeft(r),
    );
    out.retry_after_s = hints.length > 0 ? Math.max(1, Math.ceil(Math.min(...hints))) : 1;
  }
  return out;
}
