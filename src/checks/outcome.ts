/**
 * Shared outcome builders: how an upstream failure or an unexpected exception becomes a result.
 * Keeping this in one place makes every check answer the same way for the same failure.
 */
import type { CheckContext, CheckOutcome } from './types.js';
import type { UpstreamFail } from '../net/result.js';

/** Seconds before a retry makes sense when the upstream did not say (no retry-after). */
const RETRY_AFTER_S: Readonly<Record<string, number>> = Object.freeze({
  upstream_rate_limited: 60,
  circuit_open: 30,
});
const DEFAULT_RETRY_AFTER_S = 2;

/** Upstream failures that are answers about the caller's target itself, not "could not evaluate". */
const FAIL_REASONS: ReadonlySet<string> = new Set(['target_forbidden', 'too_many_redirects']);

/**
 * Maps an UpstreamFail to a result. `target_forbidden` and `too_many_redirects` are answers about
 * the caller's URL (fail, cached like any answer); everything else is `error`. Transient errors
 * get ttl_s 0 so they are never reused as an answer, except rate limits and an open circuit,
 * which stay cached for their retry-after so a burst does not hammer a provider that said stop.
 */
export function fromUpstreamFail(
  fail: UpstreamFail,
  failTtlS: number,
  observed: Record<string, unknown> = {},
): CheckOutcome {
  const message = /[.!?]$/.test(fail.message) ? fail.message : `${fail.message}.`;
  const obs = fail.status === undefined ? observed : { ...observed, http_status: fail.status };
  const withObserved = Object.keys(obs).length > 0 ? { observed: obs } : {};
  if (FAIL_REASONS.has(fail.reason)) {
    return { status: 'fail', reason: fail.reason, message, source: fail.source, ttl_s: failTtlS, ...withObserved };
  }
  const retryAfter = fail.retryAfterS ?? RETRY_AFTER_S[fail.reason] ?? DEFAULT_RETRY_AFTER_S;
  return {
    status: 'error',
    reason: fail.reason,
    message,
    source: fail.source,
    ttl_s: fail.reason in RETRY_AFTER_S ? retryAfter : 0,
    retry_after_s: retryAfter,
    ...withObserved,
  };
}

/**
 * A rate limit the check read in an upstream's answer (a JSON-RPC -32005 or -32016 inside a 200):
 * the same outcome as one the HTTP layer saw (fromUpstreamFail), kept for its retry-after
 * (docs/rules.md §2.1), so the node that said stop is not asked again at once.
 */
export function rateLimitedError(message: string, source: string, extra: Partial<CheckOutcome> = {}): CheckOutcome {
  const fail: UpstreamFail = { ok: false, reason: 'upstream_rate_limited', message, source, latencyMs: 0 };
  return { ...fromUpstreamFail(fail, 0), ...extra };
}

/** An error the check found itself in an upstream answer (a missing field, a wrong shape). */
export function checkError(
  reason: string,
  message: string,
  source: string | null,
  extra: Partial<CheckOutcome> = {},
): CheckOutcome {
  return { status: 'error', reason, message, source, ttl_s: 0, retry_after_s: DEFAULT_RETRY_AFTER_S, ...extra };
}

type RunFn<C> = (check: C, ctx: CheckContext) => Promise<CheckOutcome>;

/**
 * Wraps a module's run so that nothing escapes it: a bug becomes `error internal_error`,
 * because the engine relies on "a check never throws".
 */
export function neverThrow<C>(run: RunFn<C>): RunFn<C> {
  return async (check, ctx) => {
    try {
      return await run(check, ctx);
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      return checkError('internal_error', `The check failed unexpectedly: ${detail}`, null);
    }
  };
}
