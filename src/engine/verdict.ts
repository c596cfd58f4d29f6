/**
 * From check results to a verdict (semantics.md §3), as one pure function.
 *
 * Confidence, in [0, 1]:
 *   coverage  = definite results (pass/warn/fail) / results not skipped
 *   freshness = 1 - 0.1 × age/ttl for each definite result (a cached answer near expiry counts 0.9)
 *   block on an explicit threshold breach: 0.9 + 0.1 × coverage
 *   block on heuristics alone (rug-pull signals):  0.6 + 0.2 × coverage
 *   wait on warns: 0.8 × coverage × mean freshness
 *   proceed / wait on errors: coverage × mean freshness
 *   nothing evaluated: 0
 * So all-pass-fresh gives ~1.0, every error lowers it through coverage, and an explicit breach
 * never drops below 0.9.
 */
import type { CheckResult, CheckStatus } from '../checks/types.js';

export type Verdict = 'proceed' | 'wait' | 'block';
export type Risk = 'low' | 'medium' | 'high';

export interface VerdictPolicy {
  /** Errors alone do not hold back a proceed when at least one check passed. */
  allowPartial: boolean;
  /** What warns (and no fails) lead to: `wait` by default, `proceed` in the guard's non-strict mode, `block` for strict high-value guards. */
  warnVerdict: Verdict;
}

export interface VerdictOutcome {
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

export const DEFAULT_POLICY: VerdictPolicy = Object.freeze({ allowPartial: false, warnVerdict: 'wait' });

/** Reasons that come from heuristics rather than an explicit bound the caller set or a hard fact. */
const HEURISTIC_REASONS = new Set(['rug_risk_high', 'sells_blocked']);

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
    // A combined heuristic verdict lists its components too (semantics.md §7).
    const signals = (r.observed as { signals?: unknown } | undefined)?.signals;
    if (r.reason === 'rug_risk_high' && Array.isArray(signals)) {
      for (const s of signals) if (typeof s === 'string') out.push(`${r.name}:${s}`);
    }
  }
  return out;
}

export function verdict(results: CheckResult[], policy: VerdictPolicy = DEFAULT_POLICY): VerdictOutcome {
  const counts: Record<CheckStatus, number> = { pass: 0, warn: 0, fail: 0, error: 0, skipped: 0 };
  for (const r of results) counts[r.status]++;
  const by = (s: CheckStatus) => results.filter((r) => r.status === s);
  const definite = results.filter((r) => r.status === 'pass' || r.status === 'warn' || r.status === 'fail');
  const considered = results.length - counts.skipped;
  const coverage = considered === 0 ? 0 : definite.length / considered;
  const freshness =
    definite.length === 0
      ? 0
      : definite.reduce((a, r) => a + (r.ttl_s > 0 ? 1 - 0.1 * Math.min(1, r.age_s / r.ttl_s) : 1), 0) /
        definite.length;
  const failure_modes = failureModes(results);

  let v: Verdict;
  let risk: Risk;
  let confidence: number;
  let deciding: CheckResult[];
  if (counts.fail > 0) {
    deciding = by('fail');
    v = 'block';
    risk = 'high';
    const explicit = deciding.some((r) => !HEURISTIC_REASONS.has(r.reason ?? ''));
    confidence = explicit ? 0.9 + 0.1 * coverage : 0.6 + 0.2 * coverage;
  } else if (counts.warn > 0) {
    deciding = by('warn');
    v = policy.warnVerdict;
    risk = policy.warnVerdict === 'block' ? 'high' : 'medium';
    confidence = policy.warnVerdict === 'block' ? 0.9 * coverage : 0.8 * coverage * freshness;
  } else if (counts.error > 0) {
    const canProceed = policy.allowPartial && counts.pass > 0;
    deciding = canProceed ? by('pass') : by('error');
    v = canProceed ? 'proceed' : 'wait';
    risk = 'medium';
    confidence = coverage * freshness;
  } else if (counts.pass > 0) {
    deciding = by('pass');
    v = 'proceed';
    risk = 'low';
    confidence = coverage * freshness;
  } else {
    deciding = [];
    v = 'wait';
    risk = 'medium';
    confidence = 0;
    failure_modes.push('no_checks');
  }

  const ttls = deciding.filter((r) => r.status !== 'error').map(timeLeft);
  const expires_in = ttls.length > 0 ? Math.max(0, Math.floor(Math.min(...ttls))) : 0;
  const out: VerdictOutcome = {
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
