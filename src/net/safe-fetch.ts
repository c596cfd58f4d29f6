/**
 * fetch for REQUEST-SUPPLIED URLs (http check, bridge status_url; JSON-RPC goes through net/rpc.ts),
 * over the caller dispatcher (dispatchers.ts): SSRF guard on every redirect hop, at most 3 hops,
 * the circuit breaker of each hop's host, the body cap. This file only shapes the request and the
 * answer.
 */
import type { Dispatcher } from 'undici';
import type { UpstreamResult } from './result.js';
import type { CallClass } from './breaker.js';
import { deadline } from './deadline.js';
import { callerDispatcher, callerOver } from './dispatchers.js';
import { sanitizeHeaders } from './headers.js';
import type { Answer, Trail } from './interceptors/types.js';
import type { Resolver } from './resolver.js';
import { type RawResponse, send } from './transport.js';

export interface SafeFetchOptions {
  signal?: AbortSignal;
  method?: 'GET' | 'HEAD' | 'POST';
  headers?: Readonly<Record<string, string>>;
  body?: string;
  /** Own time limit on top of `signal`. */
  timeoutMs?: number;
  /** ALLOW_PRIVATE_TARGETS: let loopback/private/link-local targets through. */
  allowPrivate?: boolean;
  /** Redirects followed before answering too_many_redirects (default 3). */
  maxRedirects?: number;
  maxBodyBytes?: number;
  resolver?: Resolver;
  /** A pool to put the caller's wrappers over instead of the shared one (tests, a custom CA). */
  dispatcher?: Dispatcher;
  /** Evidence source name; defaults to the URL's host name. */
  source?: string;
  /**
   * The circuit breaker of each hop's host:port (net/breaker.ts): its metric label (default
   * http_target), and which complete answers count as failures of the host. By default none do:
   * a caller's page answering 500 is what the http and bridge checks judge, not a dead host.
   */
  circuit?: { label?: string; classify?: (a: Answer) => CallClass };
}

export interface SafeResponse extends RawResponse {
  finalUrl: string;
  redirects: number;
}

const wrapped = new WeakMap<Dispatcher, Dispatcher>();
function dispatcherFor(base: Dispatcher | undefined): Dispatcher {
  if (!base) return callerDispatcher();
  let d = wrapped.get(base);
  if (!d) {
    d = callerOver(base);
    wrapped.set(base, d);
  }
  return d;
}

export async function safeFetch(rawUrl: string, opts: SafeFetchOptions = {}): Promise<UpstreamResult<SafeResponse>> {
  const started = performance.now();
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    url = null as unknown as URL;
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    // Refused on its face, before any wrapper (the SSRF guard would say the same).
    const message =
      url === null
        ? 'not a valid absolute URL'
        : `scheme ${url.protocol.replace(':', '')} is not allowed (http and https only)`;
    return {
      ok: false,
      reason: 'target_forbidden',
      message,
      source: opts.source ?? url?.hostname ?? 'unknown',
      latencyMs: 0,
    };
  }
  const source = opts.source ?? url.hostname;
  const headers = sanitizeHeaders(opts.headers);
  if (!headers['user-agent']) headers['user-agent'] = 'preflight-verifier';
  const trail: Trail = { url: url.href, redirects: 0 };
  const dl = deadline(opts.signal, opts.timeoutMs ?? (opts.signal ? undefined : 10_000));
  let r: Awaited<ReturnType<typeof send>>;
  try {
    r = await send(dispatcherFor(opts.dispatcher), url, {
      method: opts.method ?? 'GET',
      headers,
      body: opts.body,
      signal: dl.signal,
      allowPrivate: opts.allowPrivate ?? false,
      resolver: opts.resolver,
      maxRedirects: opts.maxRedirects ?? 3,
      maxBodyBytes: opts.maxBodyBytes,
      circuit: { scope: 'target', label: opts.circuit?.label ?? 'http_target', classify: opts.circuit?.classify },
      trail,
    });
  } finally {
    dl.done();
  }
  const latencyMs = Math.round(performance.now() - started);
  if (!r.ok) {
    const { ok: _ok, ...f } = r;
    return { ok: false, ...f, source, latencyMs };
  }
  return { ok: true, data: { ...r.res, finalUrl: trail.url, redirects: trail.redirects }, source, latencyMs };
}
