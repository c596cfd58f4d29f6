/**
 * JSON-RPC 2.0 calls, several in one HTTP request. Answers are matched by id (servers may
 * reorder a batch). A request-supplied endpoint (`safe: true`) goes through the SSRF rules; an
 * operator's RPC_URLS entry does not. The evidence source is the RPC host name alone: paths and
 * query strings of RPC URLs routinely carry API keys.
 */
import type { Dispatcher } from 'undici';
import { safeFetch } from '../net/safe-fetch.js';
import { hostVerdict, type CallVerdict } from '../net/breaker.js';
import type { RawResponse } from '../net/transport.js';
import type { Resolver } from '../net/resolver.js';
import { fail, interpretJson, isObject, requestJson, type JsonResponse } from './http.js';
import type { UpstreamResult } from './types.js';

export interface RpcCall {
  method: string;
  params: unknown[];
}

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export interface RpcReply {
  result?: unknown;
  error?: RpcError;
}

export interface RpcOptions {
  signal?: AbortSignal;
  /** The URL came from the request: apply the SSRF rules. */
  safe: boolean;
  allowPrivate?: boolean;
  source?: string;
  timeoutMs?: number;
  /** For safe calls: resolver and pool overrides (tests, pinned hosts). */
  resolver?: Resolver;
  dispatcher?: Dispatcher;
}

// Provider rate limits: -32005 "limit exceeded" (EIP-1474), -32016 "over rate limit" (Base, others).
const RATE_LIMIT_CODES = new Set([-32005, -32016]);

export function rpcSource(url: string): string {
  try {
    return new URL(url).hostname || 'rpc';
  } catch {
    return 'rpc';
  }
}

function toError(e: unknown): RpcError {
  const o = isObject(e) ? e : {};
  const err: RpcError = {
    code: typeof o.code === 'number' ? o.code : -32603,
    message: typeof o.message === 'string' ? o.message : '',
  };
  if (o.data !== undefined) err.data = o.data;
  return err;
}

function toReply(entry: Record<string, unknown>): RpcReply {
  return 'error' in entry && entry.error !== null && entry.error !== undefined
    ? { error: toError(entry.error) }
    : { result: entry.result };
}

/** A body shaped as a JSON-RPC answer: the node is up, whatever HTTP status came with it. */
function rpcVerdict(r: UpstreamResult<JsonResponse>): CallVerdict {
  const json = r.ok ? r.data.json : null;
  if (Array.isArray(json) || (isObject(json) && ('result' in json || isObject(json.error)))) return 'success';
  return hostVerdict(r);
}

async function post(
  url: string,
  body: string,
  opts: RpcOptions,
  source: string,
  started: number,
): Promise<UpstreamResult<JsonResponse>> {
  // Nodes answer JSON-RPC errors with assorted HTTP statuses; the body decides, except 429.
  const accept = (s: number): boolean => s !== 429;
  const headers = { 'content-type': 'application/json', accept: 'application/json' };
  if (!opts.safe) {
    const circuit = { label: 'rpc', verdict: rpcVerdict };
    return requestJson(url, {
      source,
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      method: 'POST',
      headers,
      body,
      accept,
      circuit,
    });
  }
  // The caller's node is judged on its body too, so the answer is interpreted once, inside the
  // breaker's verdict, and reused here.
  let interpreted: UpstreamResult<JsonResponse> | undefined;
  const failed = (res: RawResponse): boolean => {
    interpreted = interpretJson(source, started, res, accept);
    return rpcVerdict(interpreted) === 'failure';
  };
  const r = await safeFetch(url, {
    method: 'POST',
    headers,
    body,
    signal: opts.signal,
    timeoutMs: opts.timeoutMs,
    allowPrivate: opts.allowPrivate,
    resolver: opts.resolver,
    dispatcher: opts.dispatcher,
    source,
    circuit: { label: 'rpc_target', failed },
  });
  // safeFetch's messages are fragments ("connection reset before an answer"): name the node.
  if (!r.ok) return { ...r, message: `${source}: ${r.message}` };
  return interpreted ?? interpretJson(source, started, r.data, accept);
}

export async function rpcBatch(
  url: string,
  calls: readonly RpcCall[],
  opts: RpcOptions,
): Promise<UpstreamResult<RpcReply[]>> {
  const started = performance.now();
  const source = opts.source ?? rpcSource(url);
  const reqs = calls.map((c, i) => ({ jsonrpc: '2.0', id: i + 1, method: c.method, params: c.params }));
  // A lone call goes unbatched: some endpoints and gateways do not accept batches at all.
  const body = JSON.stringify(reqs.length === 1 ? reqs[0] : reqs);
  const r = await post(url, body, opts, source, started);
  if (!r.ok) return r;
  const { json, status } = r.data;
  const bad = (message: string) =>
    fail(source, started, { reason: 'upstream_bad_response', message: `${source}: ${message}`, status });

  let replies: RpcReply[];
  if (Array.isArray(json)) {
    const byId = new Map<number, Record<string, unknown>>();
    for (const e of json)
      if (isObject(e) && (typeof e.id === 'number' || typeof e.id === 'string')) byId.set(Number(e.id), e);
    replies = [];
    for (let i = 0; i < calls.length; i++) {
      const e = byId.get(i + 1);
      if (!e) return bad(`no answer for ${calls[i].method} in the batch`);
      replies.push(toReply(e));
    }
  } else if (isObject(json) && ('result' in json || isObject(json.error))) {
    // An `error` that is not an object ({"error":"Bad Gateway"} from a proxy) is no JSON-RPC answer.
    if (calls.length === 1) replies = [toReply(json)];
    else {
      // One error object for the whole batch: the node refused it (batches unsupported, too large, limits).
      const err = toError(json.error);
      const limited = RATE_LIMIT_CODES.has(err.code);
      return fail(source, started, {
        reason: limited ? 'upstream_rate_limited' : 'upstream_error',
        message: `${source} rejected the batch (${err.code}: ${err.message.slice(0, 200)})`,
        status,
      });
    }
  } else {
    if (status >= 400)
      return fail(source, started, {
        reason: 'upstream_http_error',
        message: `${source} answered HTTP ${status}`,
        status,
      });
    return bad('answer is not JSON-RPC');
  }
  const limited = replies.find((x) => x.error && RATE_LIMIT_CODES.has(x.error.code));
  if (limited?.error) {
    return fail(source, started, {
      reason: 'upstream_rate_limited',
      message: `${source} is rate limiting us (${limited.error.code}: ${limited.error.message.slice(0, 200)})`,
      status,
    });
  }
  return { ok: true, data: replies, source, latencyMs: Math.round(performance.now() - started) };
}
