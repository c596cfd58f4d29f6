/**
 * rpc_health (guard-only: the guard plans it; a decide request cannot name it): the node
 * serves the chain the action is on and its head is fresh. One batch: eth_chainId, eth_blockNumber and the latest block (timestamp).
 * A request-supplied rpc_url goes through the SSRF-safe fetch; the operator's RPC for the chain
 * (RPC_URLS) is trusted. Trust comes from the configuration, never from the check object.
 */
import type { CheckModule, CheckOutcome, RpcHealthCheck } from './types.js';
import { checkError, fromUpstreamFail, neverThrow, rateLimitedError } from './outcome.js';
import { hexQuantity } from '../format.js';
import { RPC_RATE_LIMIT_CODES, rpcBatch, type RpcReply } from '../net/rpc.js';
import { isOperatorUrl } from './trust.js';

export const RPC_HEALTH_TTL_S = 10;

/** The three replies of the batch, in order: eth_chainId, eth_blockNumber, eth_getBlockByNumber(latest). */
export function evaluateRpcHealth(
  check: RpcHealthCheck,
  replies: RpcReply[],
  nowMs: number,
  headStaleSeconds: number,
  source: string,
): CheckOutcome {
  const [idReply, numReply, blockReply] = replies;
  const expected = { chain_id: check.chain_id, max_head_age_s: headStaleSeconds };
  const base = { source, ttl_s: RPC_HEALTH_TTL_S, expected };
  const named: Array<[string, RpcReply]> = [
    ['eth_chainId', idReply],
    ['eth_blockNumber', numReply],
    ['eth_getBlockByNumber', blockReply],
  ];
  for (const [method, reply] of named) {
    if (!reply?.error) continue;
    if (RPC_RATE_LIMIT_CODES.has(reply.error.code)) {
      return rateLimitedError(
        `The RPC node refused ${method} as rate-limited (${reply.error.code}: ${reply.error.message}).`,
        source,
        { observed: { method, rpc_error: reply.error } },
      );
    }
    return {
      ...base,
      status: 'fail',
      reason: 'rpc_error',
      message: `${method} answered JSON-RPC error ${reply.error.code}: ${reply.error.message}.`,
      observed: { method, rpc_error: reply.error },
    };
  }
  const chainId = hexQuantity(idReply?.result);
  const headBlock = hexQuantity(numReply?.result);
  const block = blockReply?.result as { number?: unknown; timestamp?: unknown } | null | undefined;
  const blockTime = block && typeof block === 'object' ? hexQuantity(block.timestamp) : null;
  if (chainId === null || headBlock === null || blockTime === null) {
    return checkError(
      'upstream_bad_response',
      `The RPC node gave no usable ${chainId === null ? 'chain id' : headBlock === null ? 'block number' : 'latest block timestamp'}.`,
      source,
      { expected },
    );
  }
  const ageS = Math.max(0, Math.round(nowMs / 1000 - blockTime));
  const observed = { chain_id: chainId, head_block: headBlock, head_age_s: ageS, head_timestamp: blockTime };
  if (check.chain_id !== null && chainId !== check.chain_id) {
    return {
      ...base,
      observed,
      status: 'fail',
      reason: 'chain_mismatch',
      message: `The RPC node serves chain id ${chainId}, not ${check.chain} (${check.chain_id}).`,
    };
  }
  const on =
    check.chain_id === null
      ? `chain id ${chainId} (${check.chain} has no known id to compare)`
      : `${check.chain} (${chainId})`;
  if (ageS > headStaleSeconds) {
    return {
      ...base,
      observed,
      status: 'warn',
      reason: 'head_stale',
      message: `The RPC node on ${on} has head block ${headBlock} from ${ageS} s ago; stale after ${headStaleSeconds} s.`,
    };
  }
  return {
    ...base,
    observed,
    status: 'pass',
    reason: null,
    message: `The RPC node on ${on} has head block ${headBlock}, ${ageS} s old (limit ${headStaleSeconds} s).`,
  };
}

export const rpcHealth: CheckModule<RpcHealthCheck> = {
  type: 'rpc_health',
  upstream: 'rpc',
  run: neverThrow(async (check, ctx) => {
    const calls = [
      { method: 'eth_chainId', params: [] as unknown[] },
      { method: 'eth_blockNumber', params: [] as unknown[] },
      { method: 'eth_getBlockByNumber', params: ['latest', false] as unknown[] },
    ];
    const res = await rpcBatch(check.rpc_url, calls, {
      signal: ctx.signal,
      safe: !isOperatorUrl(ctx.config, check.rpc_url),
      allowPrivate: ctx.config.allowPrivateTargets,
    });
    if (!res.ok) return fromUpstreamFail(res, RPC_HEALTH_TTL_S);
    if (res.data.length < calls.length) {
      return checkError(
        'upstream_bad_response',
        `The RPC node answered ${res.data.length} of ${calls.length} batched calls.`,
        res.source,
      );
    }
    return evaluateRpcHealth(check, res.data, Date.now(), ctx.config.headStaleSeconds, res.source);
  }),
};
