/**
 * approval_amount: judges an ERC-20 allowance before it is signed. Pure, no upstream call.
 * Anything at or above 2^96 - 1 is treated as unlimited: wallets and routers use uint96,
 * uint160 (Permit2) and uint256 maxima for "infinite", and no real balance comes close.
 */
import type { ApprovalAmountCheck } from '../generated/types.js';
import { type CheckModule, type CheckOutcome, NO_UPSTREAM } from './types.js';
import { checkError, neverThrow } from './outcome.js';
import { UNLIMITED_THRESHOLD } from '../scan/changes.js';

export const APPROVAL_TTL_S = 300;
const ZERO_ADDRESS = /^0x0{40}$/i;
const AMOUNT = /^([0-9]+|0x[0-9a-fA-F]+)$/;

/** "115792089237316195423570985008687907853269984665640564039457584007913129639935" → "2^256-1". */
function describe(amount: bigint): string {
  for (const bits of [256n, 160n, 96n]) if (amount === (1n << bits) - 1n) return `2^${bits}-1`;
  return amount.toString();
}

export function evaluateApproval(check: ApprovalAmountCheck): CheckOutcome {
  const expected = { unlimited_threshold: UNLIMITED_THRESHOLD.toString() };
  const base = { source: null, ttl_s: APPROVAL_TTL_S, expected };
  // The schema already refuses other strings with a 422; this guards direct callers.
  if (!AMOUNT.test(check.amount))
    return checkError(
      'invalid_amount',
      `The amount ${JSON.stringify(check.amount)} is not a decimal or 0x-hex integer.`,
      null,
    );
  const amount = BigInt(check.amount);
  const spender = check.spender ? check.spender : null;
  const safeList = (check.known_safe_addresses ?? []).map((a) => a.toLowerCase());
  const knownSafe = spender !== null && safeList.includes(spender.toLowerCase());
  const unlimited = amount >= UNLIMITED_THRESHOLD;
  const observed = { amount: amount.toString(), unlimited, spender, spender_known_safe: knownSafe };
  const what = `An approval of ${describe(amount)}${unlimited ? ' (unlimited)' : ''}`;
  const to = spender === null ? 'to an unnamed spender' : `to ${spender}`;

  if (amount === 0n) {
    return {
      ...base,
      observed,
      status: 'pass',
      reason: null,
      message: `An approval of 0 ${to} revokes the allowance.`,
    };
  }
  if (spender !== null && ZERO_ADDRESS.test(spender)) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'zero_address_spender',
      message: `${what} to the zero address can never be used legitimately.`,
    };
  }
  if (unlimited && knownSafe) {
    return {
      ...base,
      observed,
      status: 'warn',
      reason: 'unlimited_approval',
      message: `${what} ${to}, a known safe spender; an exact amount is still safer.`,
    };
  }
  if (unlimited) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'unlimited_approval',
      message: `${what} ${to} lets the spender move the whole balance at any time.`,
    };
  }
  if (spender === null) {
    return {
      ...base,
      observed,
      status: 'warn',
      reason: 'spender_unknown',
      message: `${what} names no spender, so it cannot be judged.`,
    };
  }
  return {
    ...base,
    observed,
    status: 'pass',
    reason: null,
    message: `${what} ${to} is bounded (below ${describe(UNLIMITED_THRESHOLD)}).`,
  };
}

export const approvalAmount: CheckModule<ApprovalAmountCheck> = {
  type: 'approval_amount',
  upstream: NO_UPSTREAM,
  run: neverThrow(async (check) => evaluateApproval(check)),
};
