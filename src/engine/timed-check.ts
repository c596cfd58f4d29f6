/**
 * One check, run by its registered module under its own hard timeout. Shared by the worker
 * threads and the inline executor, so a check behaves the same wherever it runs. Never throws.
 */
import type { Config } from '../config.js';
import type { CheckOutcome } from '../checks/types.js';
import { moduleOf } from '../checks/index.js';

export interface ExecItem {
  id: number;
  type: string;
  check: Record<string, unknown>;
}

export interface ExecResult {
  id: number;
  outcome: CheckOutcome;
  latencyMs: number;
}

export async function runTimedCheck(
  item: ExecItem,
  config: Readonly<Config>,
  hardTimeoutMs: number,
): Promise<ExecResult> {
  const started = performance.now();
  const mod = moduleOf(item.type);
  let outcome: CheckOutcome;
  if (!mod) {
    outcome = {
      status: 'error',
      reason: 'unknown_check_type',
      message: `No check module for type ${item.type}.`,
      source: null,
      ttl_s: 0,
    };
  } else {
    // A timer cleared when the check settles: AbortSignal.timeout's cannot be cleared, so every
    // check left one behind that fired later, in another request's time, building a DOMException.
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(timedOut(hardTimeoutMs)), hardTimeoutMs);
    try {
      outcome = await mod.run(item.check, { config, signal: ctl.signal, timeoutMs: hardTimeoutMs });
    } catch (err) {
      // A module bug, not a target failure: still an answer, never a crash.
      outcome = {
        status: 'error',
        reason: 'internal_error',
        message: `The ${item.type} check failed internally: ${(err as Error)?.message ?? String(err)}`,
        source: null,
        ttl_s: 0,
      };
    } finally {
      clearTimeout(timer);
    }
  }
  return { id: item.id, outcome, latencyMs: Math.round((performance.now() - started) * 100) / 100 };
}

/** The reason a check's signal is aborted with when its hard timeout passes. */
function timedOut(ms: number): DOMException {
  return new DOMException(`The check did not finish within ${ms} ms.`, 'TimeoutError');
}
