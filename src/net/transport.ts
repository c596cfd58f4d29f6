/**
 * One HTTP exchange over an undici dispatcher: capped body read, abort, and the mapping of
 * transport failures onto the stable upstream reasons. Shared by safeFetch (request-supplied
 * URLs) and the configured-upstream clients, so both fail the same way.
 */
import type { Dispatcher } from 'undici';
import type { UpstreamErrorReason } from '../upstreams/types.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body was longer than the cap and was cut there. */
  truncated: boolean;
}

export interface SendOptions {
  method: 'GET' | 'HEAD' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  maxBodyBytes?: number;
}

export type SendResult =
  | { ok: true; res: RawResponse }
  | { ok: false; reason: UpstreamErrorReason; message: string; status?: number; connectFailed?: boolean };

const RESET = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);
const CONNECT = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

function codeOf(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const c = e?.code ?? e?.cause?.code;
  return typeof c === 'string' ? c : '';
}

function flatten(h: Dispatcher.ResponseData['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

async function readCapped(
  body: Dispatcher.ResponseData['body'],
  cap: number,
): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (size + chunk.length > cap) {
      chunks.push(chunk.subarray(0, cap - size));
      body.destroy(); // stop downloading; the connection is closed rather than drained
      return { text: Buffer.concat(chunks).toString('utf8'), truncated: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { text: Buffer.concat(chunks, size).toString('utf8'), truncated: false };
}

function failure(err: unknown, signal: AbortSignal, stage: 'connect' | 'body'): SendResult & { ok: false } {
  if (signal.aborted) {
    const why =
      (signal.reason as { name?: string } | undefined)?.name === 'TimeoutError' ? 'timed out' : 'was cancelled';
    return {
      ok: false,
      reason: 'upstream_timeout',
      message: `request ${why} ${stage === 'body' ? 'while reading the body' : 'before an answer'}`,
    };
  }
  const code = codeOf(err);
  if (stage === 'body')
    return { ok: false, reason: 'upstream_bad_response', message: `body ended early (${code || 'closed'})` };
  if (code.startsWith('HPE_'))
    return { ok: false, reason: 'upstream_bad_response', message: 'answer was not valid HTTP' };
  if (code === 'UND_ERR_HEADERS_TIMEOUT')
    return { ok: false, reason: 'upstream_timeout', message: 'no response headers in time' };
  if (RESET.has(code))
    return { ok: false, reason: 'upstream_unreachable', message: 'connection reset before an answer' };
  const connectFailed = CONNECT.has(code);
  return {
    ok: false,
    reason: 'upstream_unreachable',
    message: `could not connect (${code || 'error'})`,
    connectFailed,
  };
}

/**
 * Send one request to `origin` + `path`. A connection reset before any answer is retried once
 * (the usual cause is a keep-alive connection the server had just closed); nothing else is.
 */
export async function send(
  dispatcher: Dispatcher,
  origin: string,
  path: string,
  opts: SendOptions,
): Promise<SendResult> {
  const cap = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  for (let attempt = 0; ; attempt++) {
    let res: Dispatcher.ResponseData;
    try {
      res = await dispatcher.request({
        origin,
        path,
        method: opts.method,
        headers: opts.headers,
        body: opts.body,
        signal: opts.signal,
      });
    } catch (err) {
      if (attempt === 0 && !opts.signal.aborted && RESET.has(codeOf(err))) continue;
      return failure(err, opts.signal, 'connect');
    }
    try {
      const { text, truncated } = await readCapped(res.body, cap);
      return { ok: true, res: { status: res.statusCode, headers: flatten(res.headers), body: text, truncated } };
    } catch (err) {
      return { ...failure(err, opts.signal, 'body'), status: res.statusCode };
    }
  }
}

/** Seconds from a retry-after header (delta-seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
