/**
 * rpc: one JSON-RPC 2.0 call to the caller's endpoint, judged on its result. When a minimum
 * block is set, the head comes from the result itself for eth_blockNumber, else from an
 * eth_blockNumber sent in the same batch (one round trip).
 */
import type { RpcCheck } from '../generated/types.js';
import type { CheckModule, CheckOutcome } from './types.js';
import { checkError, fromUpstreamFail, neverThrow, rateLimitedError } from './outcome.js';
import { hexQuantity } from '../format.js';
import { RPC_RATE_LIMIT_CODES, rpcBatch, type RpcReply } from '../net/rpc.js';
import { isOperatorUrl } from './trust.js';

export type { RpcReply };

export const RPC_TTL_S = 10;
const HEX = /^0x[0-9a-fA-F]*$/;
/** Results larger than this are summarised in observed instead of copied. */
const MAX_OBSERVED_RESULT_CHARS = 1024;

function observedResult(result: unknown): Record<string, unknown> {
  const json = JSON.stringify(result) ?? 'null';
  if (json.length <= MAX_OBSERVED_RESULT_CHARS) return { result };
  return { result_chars: json.length, result_prefix: json.slice(0, 64) };
}

function rateLimited(source: string, e: { code: number; message: string }): CheckOutcome {
  const message = `The RPC node refused the call as rate-limited (${e.code}: ${e.message}).`;
  return rateLimitedError(message, source, { observed: { rpc_error: e } });
}

function describe(result: unknown): string {
  if (typeof result === 'string') return JSON.stringify(result.slice(0, 40));
  return `a ${Array.isArray(result) ? 'list' : typeof result}`;
}

/** `head` is the eth_blockNumber reply when one was batched, else undefined. */
export function evaluateRpc(
  check: RpcCheck,
  reply: RpcReply,
  head: RpcReply | undefined,
  source: string,
): CheckOutcome {
  const min = check.min_block_number ?? null;
  const expected = { hex_result: check.expect_hex_result, min_block_number: min };
  const base = { source, ttl_s: RPC_TTL_S, expected };
  const call = check.method_name;
  if (reply.error) {
    const { code, message } = reply.error;
    if (RPC_RATE_LIMIT_CODES.has(code)) return rateLimited(source, reply.error);
    return {
      ...base,
      status: 'fail',
      reason: 'rpc_error',
      message: `${call} answered JSON-RPC error ${code}: ${message}.`,
      observed: { rpc_error: { code, message } },
    };
  }
  const result = reply.result ?? null;
  const observed = observedResult(result);
  if (result === null)
    return { ...base, observed, status: 'fail', reason: 'empty_result', message: `${call} returned null.` };
  if (check.expect_hex_result && !(typeof result === 'string' && HEX.test(result))) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'not_hex',
      message: `${call} returned ${describe(result)}, not 0x-hex.`,
    };
  }
  if (min === null) {
    return {
      ...base,
      observed,
      status: 'pass',
      reason: null,
      message: `${call} returned a ${check.expect_hex_result ? 'hex ' : ''}result.`,
    };
  }

  const headReply = call === 'eth_blockNumber' ? reply : head;
  if (headReply === undefined)
    return checkError('internal_error', 'No chain head was fetched for min_block_number.', source);
  if (headReply.error) {
    const { code, message } = headReply.error;
    if (RPC_RATE_LIMIT_CODES.has(code)) return rateLimited(source, headReply.error);
    const text = `eth_blockNumber answered JSON-RPC error ${code}: ${message}.`;
    return checkError('upstream_error', text, source, {
      observed: { ...observed, rpc_error: { code, message } },
      expected,
    });
  }
  const headBlock = hexQuantity(headReply.result);
  if (headBlock === null) {
    const text = `eth_blockNumber returned ${JSON.stringify(headReply.result)}, not a block number.`;
    return checkError('upstream_bad_response', text, source, { observed, expected });
  }
  const withHead = { ...observed, head_block: headBlock };
  if (headBlock < min) {
    const message = `The node's head is block ${headBlock}, ${min - headBlock} behind the required ${min}.`;
    return { ...base, observed: withHead, status: 'fail', reason: 'block_behind', message };
  }
  return {
    ...base,
    observed: withHead,
    status: 'pass',
    reason: null,
    message: `${call} returned a result; head block ${headBlock} >= ${min}.`,
  };
}

export const rpc: CheckModule<RpcCheck> = {
  type: 'rpc',
  upstream: 'rpc',
  run: neverThrow(async (check, ctx) => {
    const calls = [{ method: check.method_name, params: check.params ?? [] }];
    const needHead = check.min_block_number != null && check.method_name !== 'eth_blockNumber';
    if (needHead) calls.push({ method: 'eth_blockNumber', params: [] });
    // rpc_url comes from the request: the SSRF rules apply.
    const res = await rpcBatch(check.rpc_url, calls, {
      signal: ctx.signal,
      safe: !isOperatorUrl(ctx.config, check.rpc_url),
      allowPrivate: ctx.config.allowPrivateTargets,
    });
    if (!res.ok) return fromUpstreamFail(res, RPC_TTL_S);
    const [reply, head] = res.data;
    if (reply === undefined || (needHead && head === undefined)) {
      return checkError(
        'upstream_bad_response',
        `The RPC node answered ${res.data.length} of ${calls.length} batched calls.`,
        res.source,
      );
    }
    return evaluateRpc(check, reply, needHead ? head : undefined, res.source);
  }),
};
