/**
 * The judgement of a simulated transaction and of a typed-data signature (docs/action-scan.md
 * §3 and §4), as tables: each row a condition and the status and reason it gives. The first row
 * that matches gives the result's reason; every row that matches is listed in `observed.signals`.
 * Pure: no I/O, no clock (the signature rules take `nowS`).
 */
import { fmtUsd } from '../format.js';
import type { CheckStatus } from '../wire.js';
import type { ApprovalChange, AssetChange } from './changes.js';

/** The declared amount's tolerance: outflows above amount_usd × 1.05 + 1 USD exceed it. */
export const DECLARED_TOLERANCE = Object.freeze({ ratio: 1.05, plusUsd: 1 });
/** A permit or allowance that lasts longer than this is long-lived. */
export const LONG_LIVED_S = 30 * 86_400;

export const exceedsDeclared = (usd: number, declared: number): boolean =>
  usd > declared * DECLARED_TOLERANCE.ratio + DECLARED_TOLERANCE.plusUsd;

export interface Signal {
  status: Exclude<CheckStatus, 'pass' | 'skipped' | 'error'>;
  reason: string;
}

export interface Row<F> {
  status: Signal['status'];
  reason: string;
  when: (f: F) => boolean;
}

/** Every row that matches, in table order (the first one decides). */
export function signals<F>(table: readonly Row<F>[], facts: F): Signal[] {
  return table.filter((r) => r.when(facts)).map(({ status, reason }) => ({ status, reason }));
}

const short = (a: string): string => (/^0x[0-9a-f]{40}$/i.test(a) ? `${a.slice(0, 6)}…${a.slice(-4)}` : a);

/** "100 USDC ($100.00)", "1 of 0x1234…abcd #7", "0.5 ETH (unpriced)". */
export function describeAsset(
  c: Pick<AssetChange, 'asset' | 'standard' | 'amount' | 'decimals' | 'symbol' | 'token_id' | 'usd'>,
  native = 'ETH',
): string {
  const name = c.standard === 'native' ? native : (c.symbol ?? short(c.asset));
  const amount = c.decimals !== undefined && c.decimals !== null ? fmtUnits(c.amount, c.decimals) : c.amount;
  const id = c.token_id !== undefined ? ` #${c.token_id}` : '';
  const usd =
    c.usd === null ? (c.standard === 'erc721' || c.standard === 'erc1155' ? '' : ' (unpriced)') : ` (${fmtUsd(c.usd)})`;
  return `${amount} ${name}${id}${usd}`;
}

const GROUPED = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** Atomic units as a decimal number of whole units, without float rounding ("1500000", 6 → "1.5"). */
export function fmtUnits(amount: string, decimals: number): string {
  const n = BigInt(amount);
  if (decimals === 0) return n.toString();
  const base = 10n ** BigInt(decimals);
  const whole = n / base;
  const frac = (n % base).toString().padStart(decimals, '0').replace(/0+$/, '').slice(0, 6);
  return `${GROUPED.format(whole)}${frac ? `.${frac}` : ''}`;
}

// ---------------------------------------------------------------------------------------------
// Transaction simulation (§3)

export interface SimulationFacts {
  action: string;
  amountUsd: number | null;
  /** Lower case. */
  knownSafe: ReadonlySet<string>;
  reverted: boolean;
  effectsKnown: boolean;
  assetChanges: readonly AssetChange[];
  approvalChanges: readonly ApprovalChange[];
  /** USD of every priced outflow; inflows are never netted against it. */
  netUsdOut: number;
}

const outflows = (f: SimulationFacts) => f.assetChanges.filter((c) => c.direction === 'out');
const inflows = (f: SimulationFacts) => f.assetChanges.filter((c) => c.direction === 'in');
const unlimitedTo = (f: SimulationFacts, safe: boolean) =>
  f.approvalChanges.filter((a) => a.unlimited && a.kind !== 'erc721_all' && f.knownSafe.has(a.spender) === safe);
const allTo = (f: SimulationFacts, safe: boolean) =>
  f.approvalChanges.filter((a) => a.kind === 'erc721_all' && a.unlimited && f.knownSafe.has(a.spender) === safe);

export const SIMULATION_RULES: readonly Row<SimulationFacts>[] = [
  { status: 'fail', reason: 'simulation_reverted', when: (f) => f.reverted },
  { status: 'warn', reason: 'effects_unknown', when: (f) => !f.reverted && !f.effectsKnown },
  { status: 'fail', reason: 'unlimited_approval', when: (f) => unlimitedTo(f, false).length > 0 },
  { status: 'fail', reason: 'approval_for_all', when: (f) => allTo(f, false).length > 0 },
  {
    status: 'fail',
    reason: 'outflow_exceeds_declared',
    when: (f) => f.amountUsd !== null && exceedsDeclared(f.netUsdOut, f.amountUsd),
  },
  {
    status: 'fail',
    reason: 'swap_receives_nothing',
    when: (f) => f.action === 'swap' && f.effectsKnown && outflows(f).length > 0 && inflows(f).length === 0,
  },
  {
    status: 'warn',
    reason: 'outflow_unpriced',
    when: (f) => f.amountUsd !== null && outflows(f).some((c) => c.usd === null),
  },
  { status: 'warn', reason: 'unlimited_approval', when: (f) => unlimitedTo(f, true).length > 0 },
  // The design names no row for an ApprovalForAll to a listed operator; it is the same grant as
  // an unlimited approval to a listed spender, so it answers the same way.
  { status: 'warn', reason: 'approval_for_all', when: (f) => allTo(f, true).length > 0 },
];

export interface RuleMatch {
  status: 'pass' | Signal['status'];
  reason: string | null;
  signals: Signal[];
}

export function decide<F>(table: readonly Row<F>[], facts: F): RuleMatch {
  const s = signals(table, facts);
  return s.length === 0
    ? { status: 'pass', reason: null, signals: [] }
    : { status: s[0].status, reason: s[0].reason, signals: s };
}

export const matchSimulationRules = (f: SimulationFacts): RuleMatch => decide(SIMULATION_RULES, f);

/** The sentence for a simulation's result: what decided, then what leaves and what arrives. */
export function simulationMessage(
  f: SimulationFacts,
  v: RuleMatch,
  ctx: { method: string; block: number | null; revertReason: string | null; native: string },
): string {
  const at = `${ctx.method}${ctx.block === null ? '' : ` at block ${ctx.block}`}`;
  if (v.reason === 'simulation_reverted')
    return `The transaction reverts (${at}): ${ctx.revertReason ?? 'no reason given'}.`;
  if (v.reason === 'effects_unknown')
    return `The node offers only eth_call: the transaction does not revert (${at}), but what it moves is unknown.`;
  const out = outflows(f).map((c) => `${describeAsset(c, ctx.native)} to ${short(c.counterparty)}`);
  const inn = inflows(f).map((c) => `${describeAsset(c, ctx.native)} from ${short(c.counterparty)}`);
  const approvals = f.approvalChanges
    .filter((a) => a.amount !== '0')
    .map((a) =>
      a.kind === 'erc721_all'
        ? `every token of ${short(a.token)} to ${short(a.spender)}`
        : `${a.unlimited ? 'unlimited' : a.amount} ${short(a.token)}${a.kind === 'permit2' ? ' via Permit2' : ''} to ${short(a.spender)}`,
    );
  const effects = [
    `sends ${out.length > 0 ? out.join(', ') : 'nothing'}`,
    `receives ${inn.length > 0 ? inn.join(', ') : 'nothing'}`,
    ...(approvals.length > 0 ? [`approves ${approvals.join(', ')}`] : []),
  ].join('; ');
  const declared = f.amountUsd === null ? '' : `; declared ${fmtUsd(f.amountUsd)}`;
  const lead: Record<string, string> = {
    unlimited_approval:
      v.status === 'fail'
        ? 'It grants an unlimited allowance to a spender not known to be safe'
        : 'It grants an unlimited allowance to a known-safe spender',
    approval_for_all:
      v.status === 'fail'
        ? 'It hands every token of a collection to an operator not known to be safe'
        : 'It hands every token of a collection to a known-safe operator',
    outflow_exceeds_declared: `It sends ${fmtUsd(f.netUsdOut)}, more than the declared ${fmtUsd(f.amountUsd ?? 0)} (tolerance 5% + $1)`,
    swap_receives_nothing: 'The swap sends assets and receives nothing',
    outflow_unpriced: 'Part of what it sends has no known price, so it cannot be held to the declared amount',
  };
  const head = v.reason ? `${lead[v.reason] ?? v.reason}. ` : '';
  return `${head}Simulated with ${at}: ${effects}; ${fmtUsd(f.netUsdOut)} out${declared}.`;
}

// ---------------------------------------------------------------------------------------------
// Signature scan (§4)

export type TypedDataKind =
  | 'eip2612_permit'
  | 'dai_permit'
  | 'permit2_single'
  | 'permit2_batch'
  | 'permit2_transfer'
  | 'permit2_batch_transfer'
  | 'eip3009_transfer'
  | 'eip3009_receive';

export interface SignatureGrant {
  token: string;
  /** Atomic units, decimal string. */
  amount: string;
  unlimited: boolean;
  usd: number | null;
}

export interface SignatureFacts {
  /** null: a primaryType none of the recognised shapes. */
  kind: TypedDataKind | null;
  /** The domain's chain id when given; null otherwise. */
  domainChainId: bigint | null;
  /** The request chain's id; null when the chain has none known. */
  chainId: number | null;
  spender: string | null;
  knownSafe: ReadonlySet<string>;
  grants: readonly SignatureGrant[];
  amountUsd: number | null;
  /** Unix seconds each permission or signature lasts to (deadline, expiration, sigDeadline). */
  validUntil: readonly bigint[];
  nowS: number;
}

const anyUnlimited = (f: SignatureFacts) => f.grants.some((g) => g.unlimited);
const spenderSafe = (f: SignatureFacts) => f.spender !== null && f.knownSafe.has(f.spender);
/** USD that can leave with the signature: null when a grant is unlimited or unpriced. */
export function signatureUsd(grants: readonly SignatureGrant[]): number | null {
  if (grants.some((g) => g.unlimited || g.usd === null)) return null;
  return Math.round(grants.reduce((s, g) => s + (g.usd ?? 0), 0) * 1e4) / 1e4;
}

export const SIGNATURE_RULES: readonly Row<SignatureFacts>[] = [
  {
    status: 'fail',
    reason: 'chain_mismatch',
    when: (f) => f.domainChainId !== null && f.chainId !== null && f.domainChainId !== BigInt(f.chainId),
  },
  { status: 'fail', reason: 'unlimited_permit', when: (f) => anyUnlimited(f) && !spenderSafe(f) },
  {
    status: 'fail',
    reason: 'outflow_exceeds_declared',
    when: (f) => {
      const usd = signatureUsd(f.grants);
      return f.amountUsd !== null && usd !== null && exceedsDeclared(usd, f.amountUsd);
    },
  },
  // Beyond the design's table, mirroring the simulation's: a declared amount that a grant cannot
  // be held to (no price or decimals) is not a pass, and an unlimited grant to a listed spender
  // is a warning, as the same approval in a transaction is.
  {
    status: 'warn',
    reason: 'outflow_unpriced',
    when: (f) => f.amountUsd !== null && f.grants.some((g) => !g.unlimited && g.usd === null),
  },
  { status: 'warn', reason: 'unlimited_permit', when: (f) => anyUnlimited(f) && spenderSafe(f) },
  {
    status: 'warn',
    reason: 'long_lived_permit',
    when: (f) => f.kind !== null && f.validUntil.some((t) => t > BigInt(f.nowS + LONG_LIVED_S)),
  },
  { status: 'warn', reason: 'unrecognised_typed_data', when: (f) => f.kind === null },
];

export const matchSignatureRules = (f: SignatureFacts): RuleMatch => decide(SIGNATURE_RULES, f);
