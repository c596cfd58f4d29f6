/**
 * "GET/POST some JSON from a configured upstream": one keep-alive pool, a time limit, the 1 MiB
 * body cap, and the status classification every client shares, so each client is left with
 * only its provider's own shapes. Configured base URLs are the operator's and trusted: no SSRF
 * rule here (request-supplied URLs go through net/safe-fetch). The pool, breaker, body cap and
 * retry are the operator dispatcher's (net/dispatchers.ts).
 */
import type { CallClass } from './breaker.js';
import { deadline } from './deadline.js';
import { operatorDispatcher } from './dispatchers.js';
import type { Answer } from './interceptors/types.js';
import { type RawResponse, retryAfterSeconds, send } from './transport.js';
import type { UpstreamFail, UpstreamResult } from './result.js';

export interface JsonRequest {
  /** Evidence source name; also the only name used in messages (URLs may carry keys). */
  source: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Statuses handed to the caller with their body; the rest are classified here (default 2xx). */
  accept?: (status: number) => boolean;
  /**
   * The host's circuit breaker (net/breaker.ts): its metric label (default `source`), and how a
   * complete answer counts for the host (default jsonClassifier: an unparsable body or a 5xx is a failure).
   */
  circuit?: { label: string; classify?: (a: Answer) => CallClass };
}

export interface JsonResponse {
  status: number;
  headers: Record<string, string>;
  /** Parsed body; null for an empty body. */
  json: unknown;
}

const is2xx = (s: number): boolean => s >= 200 && s < 300;

export function fail(
  source: string,
  started: number,
  f: Omit<UpstreamFail, 'ok' | 'source' | 'latencyMs'>,
): UpstreamFail {
  return { ok: false, source, latencyMs: Math.round(performance.now() - started), ...f };
}

/** The failure for an HTTP status nobody accepted: 429 is rate limiting, the rest HTTP errors. */
export function statusFailure(
  source: string,
  started: number,
  res: Pick<RawResponse, 'status' | 'headers'>,
): UpstreamFail {
  if (res.status === 429) {
    const retryAfterS = retryAfterSeconds(res.headers['retry-after']);
    return fail(source, started, {
      reason: 'upstream_rate_limited',
      message: `${source} is rate limiting us (HTTP 429${retryAfterS === undefined ? '' : `, retry after ${retryAfterS} s`})`,
      status: 429,
      ...(retryAfterS === undefined ? {} : { retryAfterS }),
    });
  }
  return fail(source, started, {
    reason: 'upstream_http_error',
    message: `${source} answered HTTP ${res.status}`,
    status: res.status,
  });
}

/** How the breaker counts a provider's answer: a 5xx, or a body that is not the JSON promised, is a failure. */
export function jsonClassifier(source: string, accept?: (status: number) => boolean): (a: Answer) => CallClass {
  return (a) => answerClass(interpretJson(source, 0, a, accept));
}

/** How the breaker counts an interpreted answer: a 5xx, or a body that is not the JSON promised, is a failure. */
function answerClass(r: UpstreamResult<JsonResponse>): CallClass {
  if (r.ok) return r.data.status >= 500 ? 'failure' : 'success';
  return r.reason === 'upstream_bad_response' || (r.status ?? 0) >= 500 ? 'failure' : 'success';
}

/** One call through the operator dispatcher: a host failing repeatedly is not called for a while. */
export async function requestJson(url: string, req: JsonRequest): Promise<UpstreamResult<JsonResponse>> {
  const started = performance.now();
  const dl = deadline(req.signal, req.timeoutMs);
  // The breaker's classifier reads the complete answer before it is handed back here: its reading
  // is kept and used for the result, so each body is parsed once, not once for each.
  let read: { body: string; result: UpstreamResult<JsonResponse> } | null = null;
  const classify =
    req.circuit?.classify ??
    ((a: Answer): CallClass => {
      const result = interpretJson(req.source, started, a, req.accept);
      read = { body: a.body, result };
      return answerClass(result);
    });
  let r: Awaited<ReturnType<typeof send>>;
  try {
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    if (req.body !== undefined) headers['content-type'] ??= 'application/json';
    r = await send(operatorDispatcher(), new URL(url), {
      method: req.method ?? 'GET',
      headers,
      body: req.body,
      signal: dl.signal,
      circuit: {
        scope: 'provider',
        label: req.circuit?.label ?? req.source,
        classify,
      },
    });
  } finally {
    dl.done();
  }
  if (!r.ok) {
    return fail(req.source, started, {
      reason: r.reason,
      message: `${req.source}: ${r.message}`,
      ...(r.status === undefined ? {} : { status: r.status }),
      ...(r.retryAfterS === undefined ? {} : { retryAfterS: r.retryAfterS }),
    });
  }
  const kept = read as { body: string; result: UpstreamResult<JsonResponse> } | null;
  if (kept !== null && kept.body === r.res.body && !r.res.truncated) {
    const k = kept.result;
    return k.ok ? { ...k, latencyMs: Math.round(performance.now() - started) } : k;
  }
  return interpretJson(req.source, started, r.res, req.accept);
}

/** Status classification and JSON parsing of a received response (also used for safeFetch answers). */
export function interpretJson(
  source: string,
  started: number,
  res: RawResponse,
  accept: (status: number) => boolean = is2xx,
): UpstreamResult<JsonResponse> {
  if (!accept(res.status)) return statusFailure(source, started, res);
  if (res.truncated) {
    return fail(source, started, {
      reason: 'upstream_bad_response',
      message: `${source} sent a body over the size cap`,
      status: res.status,
    });
  }
  let json: unknown = null;
  if (res.body.trim() !== '') {
    try {
      json = JSON.parse(res.body);
    } catch {
      // An error page in HTML on a 4xx/5xx says more by its status than by its body.
      if (!is2xx(res.status)) return statusFailure(source, started, res);
      return fail(source, started, {
        reason: 'upstream_bad_response',
        message: `${source} answered with a body that is not JSON`,
        status: res.status,
      });
    }
  }
  return {
    ok: true,
    data: { status: res.status, headers: res.headers, json },
    source,
    latencyMs: Math.round(performance.now() - started),
  };
}

/** A number from a JSON number or numeric string; null for anything else (never 0 for missing). */
export function num(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
