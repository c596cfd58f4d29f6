/**
 * The contract every check module keeps. A check never throws for a failure of its target:
 * failures are data (status + reason). Modules run inside worker threads, so inputs and
 * outputs are plain structured-clonable data.
 */
import type { Check } from '../generated/types.js';
import type { Config } from '../config.js';
import type { ScreeningView } from '../screening/view.js';
import type { CounterpartyScreenCheck } from './counterparty_screen.js';
import type { DelegationScanCheck } from './delegation_scan.js';
import type { LiquidityDepthCheck } from './liquidity_depth.js';
import type { RpcHealthCheck } from './rpc_health.js';
import type { SignatureScanCheck } from './signature_scan.js';
import type { TransactionSimulationCheck } from './transaction_simulation.js';

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'error' | 'skipped';

/** The check types a decide request may name: exactly the Check schema's variants. */
export type PublicCheckType = Check['type'];
/**
 * Checks only the service plans (the guard builds them from its request); the Check schema
 * does not admit them, so a decide request cannot name them.
 */
export type GuardOnlyCheck =
  | RpcHealthCheck
  | LiquidityDepthCheck
  | TransactionSimulationCheck
  | SignatureScanCheck
  | DelegationScanCheck
  | CounterpartyScreenCheck;
/** Every check object a module runs. */
export type AnyCheck = Check | GuardOnlyCheck;
export type CheckType = AnyCheck['type'];

/**
 * What the result of a failed check rests on. `bound`: a limit the caller set, or a hard fact
 * (the default). `heuristic`: signals that suggest a risk without proving it, so a block on
 * them alone is less certain.
 */
export type Basis = 'bound' | 'heuristic';

/** What a module returns; the runner adds name, timing and cache fields. */
export interface CheckOutcome {
  status: CheckStatus;
  /** Machine code for anything but pass (docs/rules.md §2). */
  reason: string | null;
  /** One sentence with the numbers in it. */
  message: string;
  observed?: unknown;
  expected?: unknown;
  /** Which upstream answered: price_provider, dex_provider, sourcify, etherscan, the RPC host... */
  source: string | null;
  /** Seconds this outcome may be reused (docs/rules.md §2 per type; may depend on the outcome). */
  ttl_s: number;
  /** Seconds until a retry makes sense, for errors (429 retry-after, deadline). */
  retry_after_s?: number;
  /*
   * What the decision reads besides the status. Not part of the evidence (the runner's evidence
   * item has a getter for each, off the serialized item): they say how much weight the result
   * carries, not what was seen.
   */
  /** What a fail rests on; absent means `bound`. */
  basis?: Basis;
  /** Inputs the check needed and the upstream left out; it judged without them. Each lowers confidence. */
  unknown_inputs?: number;
  /** For a result combined from several signals, their reasons: listed in failure_modes after it. */
  components?: string[];
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
  /** The screening lists, on the main thread only (counterparty_screen; docs/screening.md §4). */
  screening?: ScreeningView;
}

/**
 * A bounded label for the upstream metric, never a URL or host: price_provider, dex_provider,
 * sourcify, etherscan, rpc, http_target, bridge_status; NO_UPSTREAM for a check that calls
 * nothing (it is then not counted).
 */
export type UpstreamLabel = string;
export const NO_UPSTREAM = 'none';

/**
 * One check type: its `type`, what it calls, and `run`, which never throws (failures are data).
 * Everything the engine needs to know about a type is declared here, so the engine names none.
 */
export interface CheckModule<C extends { type: string } = AnyCheck> {
  type: C['type'];
  /**
   * The upstream label(s) its calls are counted under. A list is for a check that asks several
   * providers: an outcome whose `source` is one of them is counted under that one, any other
   * outcome under the first.
   */
  upstream: UpstreamLabel | readonly [UpstreamLabel, ...UpstreamLabel[]];
  run(check: C, ctx: CheckContext): Promise<CheckOutcome>;
}
