/**
 * What the wrappers of the outbound layer (dispatchers.ts) share: the extra dispatch options they
 * read, and the refusals they raise instead of making a call. A refusal travels as an Error through
 * undici's handler chain; net/transport.ts turns it back into an upstream reason.
 */
import type { Dispatcher } from 'undici';
import type { CallClass } from '../breaker.js';
import type { Resolver } from '../resolver.js';
import type { UpstreamErrorReason } from '../result.js';

/** A complete answer as the breaker's classifier sees it (the body only when one is set). */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  truncated: boolean;
}

export interface CircuitOptions {
  scope: 'provider' | 'target';
  /** Metric label (net/breaker.ts CIRCUIT_LABELS). */
  label: string;
  /** How a complete answer counts for the host; default: any answer means the host is up. */
  classify?: (a: Answer) => CallClass;
}

/** Where the redirect wrapper reports the URL that answered (without userinfo) and the hops taken. */
export interface Trail {
  url: string;
  redirects: number;
}

export interface NetDispatchOptions extends Dispatcher.DispatchOptions {
  /** The host's circuit breaker; none: no breaker. */
  circuit?: CircuitOptions;
  /** Body cap in bytes (default MAX_UPSTREAM_BODY_BYTES); a longer body is cut and flagged in the trailers. */
  maxBodyBytes?: number;
  /** Caller dispatcher: ALLOW_PRIVATE_TARGETS (or an operator-configured URL). */
  allowPrivate?: boolean;
  /** Caller dispatcher: the resolver used for the SSRF check (tests, pinned hosts). */
  resolver?: Resolver;
  /** Caller dispatcher: redirects followed before too_many_redirects (default 3). */
  maxRedirects?: number;
  trail?: Trail;
  signal?: AbortSignal;
}

/** The trailer the body cap adds to a body it cut (never sent by a server: set by us). */
export const TRUNCATED_TRAILER = 'x-preflight-body-truncated';

/** A call refused or abandoned by one of the wrappers, with the upstream reason it stands for. */
export class NetRefusal extends Error {
  readonly code = 'PREFLIGHT_NET_REFUSAL';
  constructor(
    readonly reason: UpstreamErrorReason,
    message: string,
    readonly extra: { status?: number; retryAfterS?: number } = {},
  ) {
    super(message);
  }
}

/** A handler error code, at the top level or one cause down (undici wraps some). */
export function errorCode(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const c = e?.code ?? e?.cause?.code;
  return typeof c === 'string' ? c : '';
}

export type Dispatch = Dispatcher.Dispatch;
export type Handler = Dispatcher.DispatchHandler;

/**
 * A handler that passes every event to the one it wraps; the wrappers override what they change.
 * (undici's DecoratorHandler does the same but is typed for its older handler interface.)
 */
export class Forward implements Dispatcher.DispatchHandler {
  constructor(protected readonly inner: Handler) {}
  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.inner.onRequestStart?.(controller, context);
  }
  onRequestUpgrade(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    socket: import('node:stream').Duplex,
  ): void {
    this.inner.onRequestUpgrade?.(controller, status, headers as never, socket);
  }
  onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    this.inner.onResponseStart?.(controller, status, headers as never, message);
  }
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.inner.onResponseData?.(controller, chunk);
  }
  onResponseEnd(controller: Dispatcher.DispatchController, trailers: Record<string, string | string[]>): void {
    this.inner.onResponseEnd?.(controller, trailers as never);
  }
  onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    this.inner.onResponseError?.(controller, err);
  }
}
