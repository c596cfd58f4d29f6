/**
 * Fetching a caller-supplied URL for http and bridge_exploit_monitor: SSRF rules on, at most
 * 3 redirects, body read up to 1 MiB (docs/rules.md §2, §7). Answers as an UpstreamResult so the
 * checks map failures the same way as for the provider clients.
 */
import type { CheckContext } from './types.js';
import type { UpstreamResult } from '../net/result.js';
import { safeFetch, type SafeResponse } from '../net/safe-fetch.js';
import { isOperatorUrl } from './trust.js';
import { MAX_UPSTREAM_BODY_BYTES } from '../net/transport.js';

export const MAX_REDIRECTS = 3;

/** The response fields the checks read. */
export type FetchedPage = Pick<SafeResponse, 'status' | 'body' | 'truncated' | 'finalUrl'>;

export async function fetchTarget(
  url: string,
  method: 'GET' | 'HEAD',
  headers: Record<string, string> | undefined,
  ctx: CheckContext,
): Promise<UpstreamResult<SafeResponse>> {
  const res = await safeFetch(url, {
    method,
    headers: headers ?? {},
    signal: ctx.signal,
    allowPrivate: ctx.config.allowPrivateTargets || isOperatorUrl(ctx.config, url),
    maxRedirects: MAX_REDIRECTS,
    maxBodyBytes: MAX_UPSTREAM_BODY_BYTES,
  });
  if (res.ok) return res;
  // The transport's messages are fragments ("connection reset before an answer"); make a sentence
  // naming the host only, since the full URL may carry a token.
  // A URL with no host (file:, data:) is named by its scheme.
  const target = res.source || `a ${url.split(':')[0]}: URL`;
  return { ...res, message: `${method} to ${target} failed: ${res.message}.` };
}
