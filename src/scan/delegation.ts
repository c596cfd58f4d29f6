/**
 * EIP-7702 delegations (docs/action-scan.md §6): the designator an authorization installs, the
 * state overrides that install it in a simulation, and the rules that judge one delegation, as a
 * table (first match decides, every match is a signal). Pure: no I/O.
 */
import { fmtUsd } from '../format.js';
import type { ApprovalChange, AssetChange } from './changes.js';
import { describeAsset, type Signal, signals } from './rules.js';
import type { StateOverrides } from './simulate.js';

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';
/** The prefix of a delegated account's code: 0xef0100 followed by the delegate's 20 bytes. */
export const DESIGNATOR_PREFIX = '0xef0100';

/** One authorization as the check takes it (authority already defaulted to transaction.from). */
export interface Authorization {
  authority: string;
  address: string;
  chain_id: number;
  nonce: number | null;
}

/** The code an authorization leaves on its authority: `0xef0100 ‖ delegate`; empty for the zero address. */
export function designator(delegate: string): string {
  const d = delegate.toLowerCase();
  return d === ZERO_ADDRESS ? '0x' : `${DESIGNATOR_PREFIX}${d.slice(2)}`;
}

/** Does an authorization for `authChainId` take effect on a chain with id `chainId`? */
export const validOn = (authChainId: number, chainId: number | null): boolean =>
  authChainId === 0 || (chainId !== null && authChainId === chainId);

/**
 * The overrides that put a transaction's authorizations in place before it is simulated: each
 * authority's code becomes the designator (cleared for the zero address). Authorizations for
 * another chain are left out, as the chain skips them; of several for one authority the last
 * wins, as the chain applies them in order.
 */
export function delegationOverrides(list: readonly Authorization[], chainId: number | null): StateOverrides {
  const out: StateOverrides = {};
  for (const a of list) {
    if (!validOn(a.chain_id, chainId)) continue;
    out[a.authority.toLowerCase()] = { code: designator(a.address) };
  }
  return out;
}

/** What was learned about one delegation. */
export interface DelegationFacts {
  delegate: string;
  chainId: number;
  /** The request chain's id; null when the chain has none known. */
  requestChainId: number | null;
  /** The delegate has code; null when not asked (the zero address) or unknown. */
  code: boolean | null;
  /** Its source is verified; null when unknown (not asked, or the lookup failed). */
  verified: boolean | null;
  listed: boolean;
  /** What left the authority under the sweep probe. */
  sweptAssets: AssetChange[];
  sweptApprovals: ApprovalChange[];
}

interface Row {
  status: Signal['status'];
  reason: string;
  when: (f: DelegationFacts) => boolean;
}

const isZero = (f: DelegationFacts): boolean => f.delegate.toLowerCase() === ZERO_ADDRESS;

export const DELEGATION_RULES: readonly Row[] = [
  {
    status: 'fail',
    reason: 'delegate_sweeps_funds',
    when: (f) => f.sweptAssets.length > 0 || f.sweptApprovals.length > 0,
  },
  { status: 'fail', reason: 'delegate_has_no_code', when: (f) => !isZero(f) && f.code === false },
  { status: 'fail', reason: 'chain_mismatch', when: (f) => !validOn(f.chainId, f.requestChainId) },
  { status: 'fail', reason: 'unverified_delegate', when: (f) => !isZero(f) && !f.listed && f.verified === false },
  // Clearing a delegation on every chain hands nothing over: a revocation is exempt.
  { status: 'fail', reason: 'all_chains_authorization', when: (f) => f.chainId === 0 && !isZero(f) && !f.listed },
  { status: 'warn', reason: 'all_chains_authorization', when: (f) => f.chainId === 0 && !isZero(f) && f.listed },
  { status: 'warn', reason: 'unlisted_delegate', when: (f) => !isZero(f) && !f.listed },
];

/** Reasons that rest on facts the source lookup does not change: they decide even when it failed. */
export const SOURCE_INDEPENDENT = new Set(['delegate_sweeps_funds', 'delegate_has_no_code', 'chain_mismatch']);

export interface DelegationVerdict {
  status: 'pass' | Signal['status'];
  reason: string | null;
  signals: Signal[];
}

export function judgeDelegation(f: DelegationFacts): DelegationVerdict {
  const s = signals(DELEGATION_RULES, f);
  return s.length === 0
    ? { status: 'pass', reason: null, signals: [] }
    : { status: s[0].status, reason: s[0].reason, signals: s };
}

const short = (a: string): string => `${a.slice(0, 6)}…${a.slice(-4)}`;

/** The sentence for one delegation's verdict, naming the delegate, the chain and what moves. */
export function delegationMessage(
  a: Authorization,
  f: DelegationFacts,
  v: DelegationVerdict,
  ctx: { chain: string; native: string },
): string {
  const who = `${short(a.authority)} → ${short(a.address)}`;
  const on = a.chain_id === 0 ? 'on every chain' : `on chain ${a.chain_id}`;
  switch (v.reason) {
    case 'delegate_sweeps_funds': {
      const moved = f.sweptAssets.map((c) => `${describeAsset(c, ctx.native)} to ${c.counterparty}`);
      const approved = f.sweptApprovals.map((p) => `an allowance of ${p.token} to ${p.spender}`);
      const usd = f.sweptAssets.reduce((s, c) => s + (c.usd ?? 0), 0);
      return `Delegating ${who} hands the account to code that moves its funds on any call: under the probe it sent ${[...moved, ...approved].join(', ')} (${fmtUsd(usd)} priced).`;
    }
    case 'delegate_has_no_code':
      return `Delegate ${a.address} has no code on ${ctx.chain}: the account would run nothing, or whatever is deployed there later.`;
    case 'chain_mismatch':
      return `The authorization ${who} is for chain ${a.chain_id}, not ${ctx.chain} (${f.requestChainId ?? 'no id'}).`;
    case 'unverified_delegate':
      return `Delegate ${a.address} is not listed and its source is not verified: nobody can tell what it lets others do with the account.`;
    case 'all_chains_authorization':
      return v.status === 'fail'
        ? `The authorization ${who} has chain_id 0: it hands the account over on every chain, to a delegate that is not listed.`
        : `The authorization ${who} has chain_id 0: it is valid on every chain where the account has the same nonce (listed delegate).`;
    case 'unlisted_delegate':
      return `Delegate ${a.address} is verified and moved nothing under the probe, but it is not listed: a person or the operator's DELEGATE_ALLOWLIST decides.`;
    default:
      return a.address.toLowerCase() === ZERO_ADDRESS
        ? `The authorization clears the delegation of ${a.authority} ${on}: its calls run no code again.`
        : `Delegate ${a.address} (listed) may act for ${a.authority} ${on}; it moved nothing under the probe.`;
  }
}
