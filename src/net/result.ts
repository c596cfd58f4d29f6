/**
 * What every upstream client resolves to. Clients never throw for a failure of the upstream:
 * the failure comes back as data with a stable reason code, which a check turns into an
 * `error` result (or, for `target_forbidden`, a `fail`).
 */
export type UpstreamErrorReason =
  | 'upstream_timeout' // our per-call timeout or the request's deadline fired first
  | 'upstream_unreachable' // DNS failure, connection refused or reset (after one retry on reset)
  | 'upstream_http_error' // 4xx (other than 404-as-not-found and 429) or 5xx
  | 'upstream_rate_limited' // 429, or a rate-limit body on 200 (Etherscan status "0", JSON-RPC -32005/-32016)
  | 'upstream_bad_response' // unparsable or wrong-shaped body, truncated body
  | 'upstream_error' // the provider answered with an error of its own (Etherscan NOTOK, API key errors)
  | 'target_forbidden' // request-supplied URL refused by the SSRF rules
  | 'too_many_redirects'
  | 'circuit_open'; // the upstream host failed repeatedly; answered fast without a call

export interface UpstreamOk<T> {
  ok: true;
  data: T;
  /** Short stable name for evidence `source`: price_provider, dex_provider, sourcify, etherscan, or the RPC host. */
  source: string;
  latencyMs: number;
}

export interface UpstreamFail {
  ok: false;
  reason: UpstreamErrorReason;
  /** One human sentence, no secrets (never an API key). */
  message: string;
  source: string;
  latencyMs: number;
  /** HTTP status when one was received. */
  status?: number;
  /** From a 429's retry-after, in seconds. */
  retryAfterS?: number;
}

export type UpstreamResult<T> = UpstreamOk<T> | UpstreamFail;
