/**
 * The contract every check module keeps. A check never throws for a failure of its target:
 * failures are data (status + reason). Modules run inside worker threads, so inputs and
 * outputs are plain structured-clonable data.
 */
import type { Check } from '../generated/types.js';
import type { Config } from '../config.js';
import type { CheckStatus } from '../wire.js';
import type { Authorization } from '../scan/delegation.js';
import type { StateOverrides } from '../scan/simulate.js';
import type { TypedDataInput } from '../scan/typed-data-shape.js';
import type { Role } from '../screening/rules.js';
import type { ScreeningView } from '../screening/view.js';

/** The check types a decide request may name: exactly the Check schema's variants. */
export type PublicCheckType = Check['type'];
/** rpc_health (checks/rpc_health.ts): the node serves the chain and its head is fresh. */
export interface RpcHealthCheck {
  type: 'rpc_health';
  rpc_url: string;
  chain: string;
  /** The chain's EVM id (CHAIN_IDS); null for a chain without one: the id is then reported, not compared. */
  chain_id: number | null;
}

/** liquidity_depth (checks/liquidity_depth.ts): the pool is deep enough for the trade. */
export interface LiquidityDepthCheck {
  type: 'liquidity_depth';
  chain: string;
  pair_address: string;
  amount_usd: number | null;
  /** Fractions: impact up to impact_pass_pct passes, up to impact_warn_pct warns, beyond fails. */
  impact_pass_pct: number;
  impact_warn_pct: number;
  min_liquidity_usd: number;
}

/** transaction_simulation (checks/transaction_simulation.ts): what the transaction moves and approves. */
export interface TransactionSimulationCheck {
  type: 'transaction_simulation';
  chain: string;
  /** The request's rpc_url, else the operator's RPC for the chain; null: no node. */
  rpc_url: string | null;
  transaction: { from: string; to: string | null; value: string; data: string; gas: number | null };
  action: string;
  amount_usd: number | null;
  known_safe_addresses: string[];
  /**
   * Installed before the call (e.g. EIP-7702 delegations of the transaction's authorization list).
   * Check objects are JSON (cache keys, worker messages): give balances and nonces as hex strings.
   */
  state_overrides?: StateOverrides;
}

/** signature_scan (checks/signature_scan.ts): what an EIP-712 message lets someone do once signed. */
export interface SignatureScanCheck {
  type: 'signature_scan';
  chain: string;
  /** The request chain's EVM id; null when the chain has none known (the domain is then not compared). */
  chain_id: number | null;
  /** The node to read token decimals from; null: none known (USD values are then unknown). */
  rpc_url: string | null;
  typed_data: TypedDataInput;
  amount_usd: number | null;
  known_safe_addresses: string[];
  /** The request's `signer`: who signs (docs/action-scan.md §7); the message's own party wins. */
  signer?: string | null;
}

/** delegation_scan (checks/delegation_scan.ts): each EIP-7702 delegate looked at on the chain's node. */
export interface DelegationScanCheck {
  type: 'delegation_scan';
  chain: string;
  /** The request's rpc_url, else the operator's RPC for the chain; null: no node. */
  rpc_url: string | null;
  authorizations: Authorization[];
  known_safe_addresses: string[];
}

/**
 * counterparty_screen (checks/counterparty_screen.ts): every address the action names, with its
 * roles, against the screening lists and the known counterparties (docs/screening.md §4).
 */
export interface CounterpartyScreenCheck {
  type: 'counterparty_screen';
  chain: string;
  /** The node the sweeper rule reads recipients' code on; null: the rule is skipped. */
  rpc_url: string | null;
  addresses: Array<{ address: string; roles: Role[] }>;
  /** The request's known addresses (known_safe_addresses, or /v1/screen's known_addresses) and the policy's sets. */
  known_addresses: string[];
  /** The account whose learned counterparties are known too; null for a call without a key. */
  account: string | null;
}

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
  /**
   * counterparty_screen: the recipients' code reads the guard started beside its checks, by
   * lower-case address (readRecipientsAhead); the screen takes these instead of reading again.
   */
  readsAhead?: ReadonlyMap<string, Promise<RecipientCode>>;
}

/** A recipient's code as counterparty_screen reads it: its EIP-7702 delegate, and whether that sweeps. */
export interface RecipientCode {
  delegate: string | null;
  sweeps: boolean | null;
  /** Why it could not be read, as the check's outcome. */
  error: CheckOutcome | null;
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
