/**
 * One HTTP exchange over one of the outbound dispatchers (dispatchers.ts): the body read, abort,
 * and the mapping of transport failures and of the wrappers' refusals onto the stable upstream
 * reasons, so request-supplied URLs and configured upstreams fail the same way.
 */
import type { Dispatcher } from 'undici';
import type { UpstreamErrorReason } from './result.js';
import { errorCode, type NetDispatchOptions, NetRefusal, TRUNCATED_TRAILER } from './interceptors/types.js';

export { MAX_UPSTREAM_BODY_BYTES } from './interceptors/body-cap.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body was longer than the cap and was cut there. */
  truncated: boolean;
}

/** What a call adds to the URL: method, headers, body, signal, and the wrappers' options. */
export type SendOptions = Omit<NetDispatchOptions, 'origin' | 'path' | 'method' | 'signal'> & {
  method: 'GET' | 'HEAD' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
};

export type SendFailure = {
  ok: false;
  reason: UpstreamErrorReason;
  message: string;
  status?: number;
  retryAfterS?: number;
};
export type SendResult = { ok: true; res: RawResponse } | SendFailure;

const RESET = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);
export const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

function flatten(h: Dispatcher.ResponseData['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** The upstream reason for an error out of a dispatcher (or one of its wrappers). */
export function classifyFailure(err: unknown, signal: AbortSignal | undefined, stage: 'connect' | 'body'): SendFailure {
  if (err instanceof NetRefusal) return { ok: false, reason: err.reason, message: err.message, ...err.extra };
  if (signal?.aborted) {
    const why =
      (signal.reason as { name?: string } | undefined)?.name === 'TimeoutError' ? 'timed out' : 'was cancelled';
    return {
      ok: false,
      reason: 'upstream_timeout',
      message: `request ${why} ${stage === 'body' ? 'while reading the body' : 'before an answer'}`,
    };
  }
  const code = errorCode(err);
  if (stage === 'body')
    return { ok: false, reason: 'upstream_bad_response', message: `body ended early (${code || 'closed'})` };
  if (code.startsWith('HPE_'))
    return { ok: false, reason: 'upstream_bad_response', message: 'answer was not valid HTTP' };
  if (code === 'UND_ERR_HEADERS_TIMEOUT')
    return { ok: false, reason: 'upstream_timeout', message: 'no response headers in time' };
  if (RESET.has(code))
    return { ok: false, reason: 'upstream_unreachable', message: 'connection reset before an answer' };
  return { ok: false, reason: 'upstream_unreachable', message: `could not connect (${code || 'error'})` };
}

/**
 * Send one request to `url` (an absolute URL; userinfo in it becomes Basic auth) through
 * `dispatcher`. Failures come back as data, never thrown.
 */
export async function send(dispatcher: Dispatcher, url: URL, opts: SendOptions): Promise<SendResult> {
  const origin = `${url.protocol}//${url.username || url.password ? `${url.username}:${url.password}@` : ''}${url.host}`;
  let res: Dispatcher.ResponseData;
  try {
    res = await dispatcher.request({
      ...opts,
      origin,
      path: `${url.pathname}${url.search}`,
    } as Dispatcher.RequestOptions);
  } catch (err) {
    return classifyFailure(err, opts.signal, 'connect');
  }
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of res.body as AsyncIterable<Buffer>) chunks.push(chunk);
    const truncated = res.trailers[TRUNCATED_TRAILER] !== undefined;
    const body = Buffer.concat(chunks).toString('utf8');
    return { ok: true, res: { status: res.statusCode, headers: flatten(res.headers), body, truncated } };
  } catch (err) {
    return { ...classifyFailure(err, opts.signal, 'body'), status: res.statusCode };
  }
}

/** Seconds from a retry-after header (delta-seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
