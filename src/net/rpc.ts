/**
 * The one JSON-RPC 2.0 client: single calls and batches (several calls in one HTTP request,
 * answers matched by id since servers may reorder a batch), over the operator dispatcher for an
 * operator's node (RPC_URLS, X402_RPC_URL) or the caller dispatcher for a request-supplied one
 * (`safe: true`: SSRF rules on every hop). Keep-alive comes from the dispatcher's pool.
 *
 * A node that refuses batches (one error object for the whole batch, or an HTTP 4xx) gets the
 * calls again one by one, in parallel; an operator's node is remembered for a while so its next
 * batch goes straight to single calls. Failures are data (UpstreamResult), never thrown. The evidence source
 * is the RPC host name alone: paths and query strings of RPC URLs routinely carry API keys.
 */
import type { Dispatcher } from 'undici';
import { fail, interpretJson, isObject, jsonClassifier, type JsonResponse } from './json.js';
import type { UpstreamResult } from './result.js';
import type { CallClass } from './breaker.js';
import { deadline } from './deadline.js';
import { OldestFirst } from '../oldest-first.js';
import { operatorDispatcher } from './dispatchers.js';
import type { Answer } from './interceptors/types.js';
import type { Resolver } from './resolver.js';
import { safeFetch } from './safe-fetch.js';
import { send } from './transport.js';

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
  /** The URL came from the request: the caller dispatcher and its SSRF rules. */
  safe: boolean;
  allowPrivate?: boolean;
  timeoutMs?: number;
  /** Evidence source name; default the URL's host name. */
  source?: string;
  /** For safe calls: resolver and pool overrides (tests, pinned hosts). */
  resolver?: Resolver;
  dispatcher?: Dispatcher;
}

/** Provider rate limits: -32005 "limit exceeded" (EIP-1474), -32016 "over rate limit" (Base, others). */
export const RPC_RATE_LIMIT_CODES: ReadonlySet<number> = new Set([-32005, -32016]);

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

const isRpcAnswer = (json: unknown): json is Record<string, unknown> =>
  isObject(json) && ('result' in json || isObject(json.error));

// Nodes answer JSON-RPC errors with assorted HTTP statuses; the body decides, except 429.
const accept = (s: number): boolean => s !== 429;

/** A body shaped as a JSON-RPC answer: the node is up, whatever HTTP status came with it. */
function rpcClassifier(source: string): (a: Answer) => CallClass {
  const base = jsonClassifier(source, accept);
  return (a) => {
    const r = interpretJson(source, 0, a, accept);
    if (r.ok && (Array.isArray(r.data.json) || isRpcAnswer(r.data.json))) return 'success';
    return base(a);
  };
}

const HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

async function post(
  url: string,
  body: string,
  opts: RpcOptions,
  source: string,
): Promise<UpstreamResult<JsonResponse>> {
  const started = performance.now();
  if (opts.safe) {
    const r = await safeFetch(url, {
      method: 'POST',
      headers: HEADERS,
      body,
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      allowPrivate: opts.allowPrivate,
      resolver: opts.resolver,
      dispatcher: opts.dispatcher,
      source,
      circuit: { label: 'rpc_target', classify: rpcClassifier(source) },
    });
    // safeFetch's messages are fragments ("connection reset before an answer"): name the node.
    if (!r.ok) return { ...r, message: `${source}: ${r.message}` };
    return interpretJson(source, started, r.data, accept);
  }
  let url_: URL;
  try {
    url_ = new URL(url);
  } catch {
    return fail(source, started, { reason: 'upstream_unreachable', message: `${source}: not a valid RPC URL` });
  }
  const dl = deadline(opts.signal, opts.timeoutMs);
  let r: Awaited<ReturnType<typeof send>>;
  try {
    r = await send(operatorDispatcher(), url_, {
      method: 'POST',
      headers: { ...HEADERS },
      body,
      signal: dl.signal,
      circuit: { scope: 'provider', label: 'rpc', classify: rpcClassifier(source) },
    });
  } finally {
    dl.done();
  }
  if (!r.ok) {
    const { ok: _ok, ...f } = r;
    return fail(source, started, { ...f, message: `${source}: ${r.message}` });
  }
  return interpretJson(source, started, r.res, accept);
}

/**
 * Operator nodes seen refusing batches (bounded; oldest forgotten first): their batches go as single
 * calls at once. Only the operator's: they are few and called constantly (the paid path's reads),
 * while caller URLs are many, each seen rarely, and a caller's node may change its mind.
 */
const NO_BATCH_TTL_MS = 10 * 60_000;
const noBatch = new Map<string, number>();
const noBatchOldest = new OldestFirst(noBatch);
function refusesBatches(url: string): boolean {
  const until = noBatch.get(url);
  if (until === undefined) return false;
  if (until > Date.now()) return true;
  noBatch.delete(url);
  return false;
}
function rememberRefusal(url: string): void {
  if (noBatch.size >= 256) noBatchOldest.evict();
  noBatch.set(url, Date.now() + NO_BATCH_TTL_MS);
}

type Parsed = { ok: true; replies: RpcReply[] } | { ok: false; refused: boolean; fail: UpstreamResult<never> };

function parse(
  json: unknown,
  status: number,
  calls: readonly RpcCall[],
  source: string,
  started: number,
  firstId: number,
): Parsed {
  const bad = (message: string): Parsed => ({
    ok: false,
    refused: false,
    fail: fail(source, started, { reason: 'upstream_bad_response', message: `${source}: ${message}`, status }),
  });
  if (Array.isArray(json)) {
    const byId = new Map<number, Record<string, unknown>>();
    for (const e of json)
      if (isObject(e) && (typeof e.id === 'number' || typeof e.id === 'string')) byId.set(Number(e.id), e);
    const replies: RpcReply[] = [];
    for (let i = 0; i < calls.length; i++) {
      const e = byId.get(firstId + i);
      if (!e) return bad(`no answer for ${calls[i].method} in the batch`);
      replies.push(toReply(e));
    }
    return { ok: true, replies };
  }
  if (isRpcAnswer(json)) {
    // An `error` that is not an object ({"error":"Bad Gateway"} from a proxy) is no JSON-RPC answer.
    if (calls.length === 1) return { ok: true, replies: [toReply(json)] };
    // One error object for the whole batch: the node refused it (batches unsupported, too large, limits).
    const err = toError(json.error);
    const limited = RPC_RATE_LIMIT_CODES.has(err.code);
    return {
      ok: false,
      refused: !limited,
      fail: fail(source, started, {
        reason: limited ? 'upstream_rate_limited' : 'upstream_error',
        message: `${source} rejected the batch (${err.code}: ${err.message.slice(0, 200)})`,
        status,
      }),
    };
  }
  if (status >= 400)
    return {
      ok: false,
      refused: calls.length > 1 && status < 500,
      fail: fail(source, started, {
        reason: 'upstream_http_error',
        message: `${source} answered HTTP ${status}`,
        status,
      }),
    };
  return bad('answer is not JSON-RPC');
}

function rateLimited(
  replies: RpcReply[],
  source: string,
  started: number,
  status?: number,
): UpstreamResult<never> | null {
  const limited = replies.find((x) => x.error && RPC_RATE_LIMIT_CODES.has(x.error.code));
  if (!limited?.error) return null;
  return fail(source, started, {
    reason: 'upstream_rate_limited',
    message: `${source} is rate limiting us (${limited.error.code}: ${limited.error.message.slice(0, 200)})`,
    ...(status === undefined ? {} : { status }),
  });
}

async function exchange(
  url: string,
  calls: readonly RpcCall[],
  opts: RpcOptions,
  source: string,
  started: number,
): Promise<Parsed> {
  const first = 1; // ids need only be unique within one request
  const reqs = calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, method: c.method, params: c.params }));
  // A lone call goes unbatched: some endpoints and gateways do not accept batches at all.
  const r = await post(url, JSON.stringify(reqs.length === 1 ? reqs[0] : reqs), opts, source);
  if (!r.ok) return { ok: false, refused: false, fail: r };
  return parse(r.data.json, r.data.status, calls, source, started, first);
}

/** Each call on its own, in parallel: for nodes that refuse batches. */
async function oneByOne(
  url: string,
  calls: readonly RpcCall[],
  opts: RpcOptions,
  source: string,
  started: number,
): Promise<UpstreamResult<RpcReply[]>> {
  const each = await Promise.all(calls.map((c) => exchange(url, [c], opts, source, started)));
  const replies: RpcReply[] = [];
  for (const p of each) {
    if (!p.ok) return p.fail;
    replies.push(p.replies[0]);
  }
  return (
    rateLimited(replies, source, started) ?? {
      ok: true,
      data: replies,
      source,
      latencyMs: Math.round(performance.now() - started),
    }
  );
}

/** Several calls, replies in call order; a JSON-RPC error of one call is data in its reply. */
export async function rpcBatch(
  url: string,
  calls: readonly RpcCall[],
  opts: RpcOptions,
): Promise<UpstreamResult<RpcReply[]>> {
  const started = performance.now();
  const source = opts.source ?? rpcSource(url);
  if (calls.length > 1 && !opts.safe && refusesBatches(url)) return oneByOne(url, calls, opts, source, started);
  const p = await exchange(url, calls, opts, source, started);
  if (!p.ok) {
    if (!p.refused || opts.signal?.aborted) return p.fail;
    if (!opts.safe) rememberRefusal(url);
    return oneByOne(url, calls, opts, source, started);
  }
  return (
    rateLimited(p.replies, source, started) ?? {
      ok: true,
      data: p.replies,
      source,
      latencyMs: Math.round(performance.now() - started),
    }
  );
}

/** One call; its reply (result, or the node's JSON-RPC error as data). */
export async function rpcCall(
  url: string,
  method: string,
  params: unknown[],
  opts: RpcOptions,
): Promise<UpstreamResult<RpcReply>> {
  const r = await rpcBatch(url, [{ method, params }], opts);
  return r.ok ? { ...r, data: r.data[0] } : r;
}
