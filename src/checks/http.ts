/**
 * http: fetch the caller's URL (SSRF-safe, at most 3 redirects, body read up to 1 MiB) and
 * compare the status and, optionally, a text the body must contain.
 */
import type { HttpCheck } from '../generated/types.js';
import type { CheckModule, CheckOutcome } from './types.js';
import { fromUpstreamFail, neverThrow } from './outcome.js';
import { fetchTarget, type FetchedPage } from './fetch-target.js';

export const HTTP_TTL_S = 30;

export function evaluateHttp(check: HttpCheck, page: FetchedPage, source: string): CheckOutcome {
  const mustContain = check.must_contain ?? null;
  const expected = { status: check.expect_status, must_contain: mustContain };
  const text = page.body;
  const observed = {
    status: page.status,
    final_url: page.finalUrl,
    body_bytes: Buffer.byteLength(text),
    truncated: page.truncated,
  };
  const base = { observed, expected, source, ttl_s: HTTP_TTL_S };
  const target = `${check.method} ${check.url}`;
  if (page.status !== check.expect_status) {
    return {
      ...base,
      status: 'fail',
      reason: 'unexpected_status',
      message: `${target} answered ${page.status}, expected ${check.expect_status}.`,
    };
  }
  if (mustContain !== null && !text.includes(mustContain)) {
    const scope = page.truncated ? 'the first 1 MiB of the body' : `the ${observed.body_bytes}-byte body`;
    return {
      ...base,
      status: 'fail',
      reason: 'body_mismatch',
      message: `${target} answered ${page.status} but ${scope} lacks ${JSON.stringify(mustContain.slice(0, 80))}.`,
    };
  }
  const found = mustContain === null ? '' : ` and contains ${JSON.stringify(mustContain.slice(0, 80))}`;
  return { ...base, status: 'pass', reason: null, message: `${target} answered ${page.status}${found}.` };
}

export const http: CheckModule<HttpCheck> = {
  type: 'http',
  upstream: 'http_target',
  run: neverThrow(async (check, ctx) => {
    const res = await fetchTarget(check.url, check.method, check.headers, ctx);
    if (!res.ok) return fromUpstreamFail(res, HTTP_TTL_S);
    return evaluateHttp(check, res.data, res.source);
  }),
};
