/**
 * The request and response the POST endpoints' handlers see: node's own objects with the few
 * fields the chain adds (the parsed body, the route's locals). The POST router (post-router.ts) hands
 * them over as they are; express hands its subclasses, which fit the same types, so one handler
 * serves both doors. Express's request/response API (res.status, req.get, ...) is not available
 * here on purpose: giving node's objects express's prototypes costs more than the rest of a cached
 * answer (V8 deoptimises every object whose prototype is swapped).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';

export interface ApiRequest extends IncomingMessage {
  body?: unknown;
  /** The body bytes as received (after any Content-Encoding is undone): what an answer's requestHash hashes. */
  rawBody?: Buffer;
  /** The body's text, when the POST router read the body itself (src/http/post-router.ts). */
  bodyText?: string;
  /** The URL as received (express sets it; the POST router too). */
  originalUrl?: string;
}

/** What the chain leaves on the response for the steps after it (docs/endpoints.md §3). */
export interface ApiLocals {
  /** The request's id: the caller's X-Request-Id when well formed, else a fresh UUID. Set first. */
  requestId: string;
  /** What a signed answer's id is the hash of: unique per answer (docs/attestations.md §1). */
  answerId: string;
  /** keccak256(answerId) once it has been made: the signed answer's id (docs/attestations.md §1). */
  answerIdHash?: Buffer;
  /** The route pattern from the endpoint table, for metrics and the access line. */
  route?: string;
  /** Who pays for the call, set by the billing gate. */
  billing?: {
    kind: 'key' | 'payment' | 'free';
    keyId?: string;
    keyName?: string;
    plan?: string;
    accountId?: string;
    role?: 'owner' | 'agent';
    policy?: string | null;
    storeDown?: boolean;
  };
  /**
   * The id of the answer's verdict-log row when it was written with the answer's reservation
   * (docs/policies.md §10): the log then writes no second one.
   */
  verdictLogged?: string;
}

declare global {
  namespace Express {
    interface Locals extends ApiLocals {}
  }
}

export interface ApiResponse extends ServerResponse {
  locals: ApiLocals;
}

export type Next = (err?: unknown) => void;
export type ApiHandler = (req: ApiRequest, res: ApiResponse, next: Next) => void | Promise<void>;
export type ApiErrorHandler = (err: unknown, req: ApiRequest, res: ApiResponse, next: Next) => void;

/** The path of the request as received, without the query. */
export function requestPath(req: ApiRequest): string {
  const url = req.originalUrl ?? req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * The scheme and Host the client used, e.g. `https://api.example.com`: X-Forwarded-Proto when
 * TRUST_PROXY is on (its first entry, as express reads it), else the connection's own. A Host
 * with characters no host name has becomes `localhost`.
 */
export function requestOrigin(req: ApiRequest, trustProxy: boolean): string {
  let proto = (req.socket as TLSSocket).encrypted ? 'https' : 'http';
  const forwarded = req.headers['x-forwarded-proto'];
  if (trustProxy && typeof forwarded === 'string' && forwarded !== '') proto = forwarded.split(',')[0].trim();
  const host = req.headers.host;
  return `${proto}://${host && /^[A-Za-z0-9.\-:[\]]+$/.test(host) ? host : 'localhost'}`;
}
