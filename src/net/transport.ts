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

function flatten(h: Record<string, string | string[] | undefined>): Record<string, string> {
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
 *
 * The exchange is driven by a handler of its own on `dispatch` rather than undici's `request`:
 * every body here is read whole (and capped by the body-cap wrapper), so the readable stream, the
 * async resource and the async iteration `request` adds per call would only cost CPU
 * (docs/outbound.md, "Reading the answer").
 */
export function send(dispatcher: Dispatcher, url: URL, opts: SendOptions): Promise<SendResult> {
  const origin = `${url.protocol}//${url.username || url.password ? `${url.username}:${url.password}@` : ''}${url.host}`;
  const { signal } = opts;
  return new Promise<SendResult>((resolve) => {
    const exchange = new Exchange(signal, resolve);
    if (signal.aborted) {
      exchange.onResponseError(null, signal.reason);
      return;
    }
    signal.addEventListener('abort', exchange.onAbort, { once: true });
    try {
      dispatcher.dispatch(
        { ...opts, origin, path: `${url.pathname}${url.search}` } as Dispatcher.DispatchOptions,
        exchange,
      );
    } catch (err) {
      // Options the dispatcher refuses outright (an invalid header, say) are thrown, not handed on.
      exchange.onResponseError(null, err as Error);
    }
  });
}

/** One exchange's handler: the controller of the hop under way, the status, headers and body chunks. */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private status = 0;
  private headers: Record<string, string> | null = null;
  private readonly chunks: Buffer[] = [];
  private settled = false;

  constructor(
    private readonly signal: AbortSignal,
    private readonly resolve: (r: SendResult) => void,
  ) {}

  /** The caller's signal fired: abort the hop under way (or the next one as it starts). */
  readonly onAbort = (): void => {
    this.controller?.abort(this.signal.reason);
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Each hop of a redirect starts again here with its own controller.
    this.controller = controller;
    if (this.signal.aborted) controller.abort(this.signal.reason);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (status < 200) return; // an informational answer (103 Early Hints): the real one follows, as `request` does
    this.status = status;
    this.headers = flatten(headers);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: Record<string, string | string[]>): void {
    if (this.headers === null) {
      this.onResponseError(null, new Error('response ended before its headers'));
      return;
    }
    const c = this.chunks;
    const body = (c.length === 1 ? c[0] : Buffer.concat(c)).toString('utf8');
    const truncated = trailers?.[TRUNCATED_TRAILER] !== undefined;
    this.settle({ ok: true, res: { status: this.status, headers: this.headers, body, truncated } });
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    const stage = this.headers === null ? 'connect' : 'body';
    const failure = classifyFailure(err, this.signal, stage);
    this.settle(stage === 'body' ? { ...failure, status: this.status } : failure);
  }

  private settle(r: SendResult): void {
    if (this.settled) return;
    this.settled = true;
    this.controller = null;
    this.signal.removeEventListener('abort', this.onAbort);
    this.resolve(r);
  }
}

/** Seconds from a retry-after header (delta-seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
