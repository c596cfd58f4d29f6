/**
 * tx: is a transaction mined, and did it succeed? eth_getTransactionReceipt and eth_blockNumber
 * go in one batch so confirmations come from the same moment as the receipt.
 */
import type { TxCheck } from '../generated/types.js';
import type { CheckModule, CheckOutcome } from './types.js';
import { checkError, fromUpstreamFail, neverThrow, rateLimitedError } from './outcome.js';
import { hexQuantity } from '../format.js';
import { RPC_RATE_LIMIT_CODES, rpcBatch, type RpcReply } from '../net/rpc.js';
import { isOperatorUrl } from './trust.js';

/** A pending transaction may land any second; a mined one changes only with a reorg. */
export const TX_PENDING_TTL_S = 5;
export const TX_FINAL_TTL_S = 300;

function receiptError(check: TxCheck, e: NonNullable<RpcReply['error']>, source: string): CheckOutcome {
  const limited = RPC_RATE_LIMIT_CODES.has(e.code);
  const message = `eth_getTransactionReceipt for ${check.tx_hash.slice(0, 10)}… answered JSON-RPC error ${e.code}: ${e.message}.`;
  const extra = { observed: { rpc_error: e }, expected: { mined: true, success: check.require_success } };
  return limited ? rateLimitedError(message, source, extra) : checkError('upstream_error', message, source, extra);
}

export function evaluateTx(check: TxCheck, receiptReply: RpcReply, headReply: RpcReply, source: string): CheckOutcome {
  const expected = { mined: true, success: check.require_success };
  const short = `${check.tx_hash.slice(0, 10)}…`;
  if (receiptReply.error) return receiptError(check, receiptReply.error, source);
  const head = headReply.error ? null : hexQuantity(headReply.result);
  const receipt = receiptReply.result;
  if (receipt === null || receipt === undefined) {
    const at = head === null ? '' : ` at head block ${head}`;
    const observed = { mined: false, head_block: head, confirmations: 0 };
    return {
      status: 'warn',
      reason: 'tx_pending',
      message: `Transaction ${short} has no receipt yet${at}.`,
      observed,
      expected,
      source,
      ttl_s: TX_PENDING_TTL_S,
    };
  }
  if (typeof receipt !== 'object' || Array.isArray(receipt)) {
    return checkError(
      'upstream_bad_response',
      `eth_getTransactionReceipt returned ${typeof receipt}, not a receipt object.`,
      source,
      { expected },
    );
  }
  const r = receipt as Record<string, unknown>;
  const block = hexQuantity(r.blockNumber);
  if (block === null) {
    return checkError(
      'upstream_bad_response',
      `The receipt of ${short} has no valid blockNumber (${JSON.stringify(r.blockNumber)}).`,
      source,
      { expected },
    );
  }
  const confirmations = head === null ? null : Math.max(0, head - block + 1);
  // Pre-Byzantium receipts carry a state `root` instead of `status`: success is not recorded.
  const status = r.status === '0x1' ? 'success' : r.status === '0x0' ? 'reverted' : null;
  const root = status === null && typeof r.root === 'string' ? { root: r.root } : {};
  const observed = {
    mined: true,
    status,
    block_number: block,
    head_block: head,
    confirmations,
    gas_used: hexQuantity(r.gasUsed),
    ...root,
  };
  const base = { observed, expected, source, ttl_s: TX_FINAL_TTL_S };
  const mined = `Transaction ${short} was mined in block ${block}${confirmations === null ? '' : ` with ${confirmations} confirmation(s)`}`;
  if (status === 'reverted' && check.require_success) {
    return { ...base, status: 'fail', reason: 'tx_reverted', message: `${mined} and reverted.` };
  }
  if (status === null && check.require_success) {
    return {
      ...base,
      status: 'warn',
      reason: 'status_unknown',
      message: `${mined}, but its pre-Byzantium receipt does not record success.`,
    };
  }
  return { ...base, status: 'pass', reason: null, message: `${mined}${status === null ? '' : `, status ${status}`}.` };
}

export const tx: CheckModule<TxCheck> = {
  type: 'tx',
  upstream: 'rpc',
  run: neverThrow(async (check, ctx) => {
    const calls = [
      { method: 'eth_getTransactionReceipt', params: [check.tx_hash] },
      { method: 'eth_blockNumber', params: [] },
    ];
    // rpc_url comes from the request: the SSRF rules apply.
    const res = await rpcBatch(check.rpc_url, calls, {
      signal: ctx.signal,
      safe: !isOperatorUrl(ctx.config, check.rpc_url),
      allowPrivate: ctx.config.allowPrivateTargets,
    });
    if (!res.ok) return fromUpstreamFail(res, TX_FINAL_TTL_S);
    const [receipt, head] = res.data;
    if (receipt === undefined || head === undefined) {
      return checkError(
        'upstream_bad_response',
        `The RPC node answered ${res.data.length} of 2 batched calls.`,
        res.source,
      );
    }
    return evaluateTx(check, receipt, head, res.source);
  }),
};
