/**
 * The contract every check module keeps. A check never throws for a failure of its target:
 * failures are data (status + reason). Modules run inside worker threads, so inputs and
 * outputs are plain structured-clonable data.
 */
import type { Check } from '../generated/types.js';
import type { Config } from '../config.js';

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'error' | 'skipped';
export type CheckType = Check['type'];

/** What a module returns; the runner adds name, timing and cache fields. */
export interface CheckOutcome {
  status: CheckStatus;
  /** Machine code for anything but pass (semantics.md §2). */
  reason: string | null;
  /** One sentence with the numbers in it. */
  message: string;
  observed?: unknown;
  expected?: unknown;
  /** Which upstream answered: price_provider, dex_provider, sourcify, etherscan, the RPC host... */
  source: string | null;
  /** Seconds this outcome may be reused (semantics.md §2 per type; may depend on the outcome). */
  ttl_s: number;
  /** Seconds until a retry makes sense, for errors (429 retry-after, deadline). */
  retry_after_s?: number;
}

/** The evidence item (schemas/check-result.schema.json). */
export interface CheckResult extends CheckOutcome {
  name: string;
  type: string;
  latency_ms: number;
  cached: boolean;
  age_s: number;
}

/** What a check module may use: configuration and an abort signal carrying its time budget. */
export interface CheckContext {
  config: Readonly<Config>;
  signal: AbortSignal;
  /** Milliseconds left for this check (the signal fires when they run out). */
  timeoutMs: number;
}

export interface CheckModule<C extends Check = Check> {
  type: C['type'];
  run(check: C, ctx: CheckContext): Promise<CheckOutcome>;
}
