/**
 * Source-verification lookups: Sourcify v2 (keyless, asked first) and the Etherscan v2 explorer
 * API (only with a key). Etherscan reports its errors inside HTTP 200 (`status: "0"`), and the
 * key rides in the query string, so no URL ever reaches a message or a log here.
 */
import type { Config } from '../config.js';
import { fail, isObject, requestJson } from '../net/json.js';
import type { UpstreamResult } from '../net/result.js';

export const SOURCIFY_SOURCE = 'sourcify';
export const ETHERSCAN_SOURCE = 'etherscan';

export interface VerificationStatus {
  verified: boolean;
  /** Sourcify: "exact_match" | "match"; Etherscan: "verified"; null when not verified. */
  match: string | null;
}

const clip = (s: string): string => s.replace(/\s+/g, ' ').slice(0, 200);

export async function getSourcifyStatus(
  config: Readonly<Config>,
  chainId: number,
  address: string,
  signal?: AbortSignal,
): Promise<UpstreamResult<VerificationStatus>> {
  const started = performance.now();
  const url = `${config.sourcifyUrl}/v2/contract/${chainId}/${encodeURIComponent(address)}`;
  // 404 is Sourcify's "not verified"; 400 carries its error code (unsupported_chain, invalid address).
  const r = await requestJson(url, {
    source: SOURCIFY_SOURCE,
    signal,
    timeoutMs: config.checkHardTimeoutMs,
    accept: (s) => s === 200 || s === 404 || s === 400,
  });
  if (!r.ok) return r;
  const { status, json } = r.data;
  if (status === 400) {
    const code = isObject(json) && typeof json.customCode === 'string' ? json.customCode : 'bad_request';
    const msg = isObject(json) && typeof json.message === 'string' ? json.message : 'request refused';
    return fail(SOURCIFY_SOURCE, started, {
      reason: 'upstream_error',
      message: `${SOURCIFY_SOURCE} refused the lookup (${code}: ${clip(msg)})`,
      status,
    });
  }
  // Only a body with the `match` field is an answer; a bare 404 (wrong base URL, proxy page) is not.
  if (!isObject(json) || !('match' in json)) {
    return status === 404
      ? fail(SOURCIFY_SOURCE, started, {
          reason: 'upstream_http_error',
          message: `${SOURCIFY_SOURCE} answered HTTP 404 without a lookup result`,
          status,
        })
      : fail(SOURCIFY_SOURCE, started, {
          reason: 'upstream_bad_response',
          message: `${SOURCIFY_SOURCE} answered with an unexpected shape`,
          status,
        });
  }
  const match = typeof json.match === 'string' && json.match !== '' ? json.match : null;
  return { ok: true, data: { verified: match !== null, match }, source: SOURCIFY_SOURCE, latencyMs: r.latencyMs };
}

export async function getEtherscanStatus(
  config: Readonly<Config>,
  chainId: number,
  address: string,
  signal?: AbortSignal,
): Promise<UpstreamResult<VerificationStatus>> {
  const started = performance.now();
  const key = config.etherscanApiKey;
  if (!key)
    return fail(ETHERSCAN_SOURCE, started, {
      reason: 'upstream_error',
      message: 'no explorer API key is configured (ETHERSCAN_API_KEY)',
    });
  const qs = `chainid=${chainId}&module=contract&action=getsourcecode&address=${encodeURIComponent(address)}&apikey=${encodeURIComponent(key)}`;
  const r = await requestJson(`${config.etherscanApiUrl}?${qs}`, {
    source: ETHERSCAN_SOURCE,
    signal,
    timeoutMs: config.checkHardTimeoutMs,
  });
  if (!r.ok) return r;
  const body = r.data.json;
  if (!isObject(body) || (body.status !== '0' && body.status !== '1')) {
    return fail(ETHERSCAN_SOURCE, started, {
      reason: 'upstream_bad_response',
      message: `${ETHERSCAN_SOURCE} answered with an unexpected shape`,
      status: r.data.status,
    });
  }
  if (body.status === '0') {
    // The explanation is in `result` (rate limit, invalid key, chain not on this plan...).
    const text = clip(
      (typeof body.result === 'string' ? body.result : String(body.message ?? 'NOTOK')).split(key).join('***'),
    );
    const limited = /rate limit/i.test(text);
    return fail(ETHERSCAN_SOURCE, started, {
      reason: limited ? 'upstream_rate_limited' : 'upstream_error',
      message: `${ETHERSCAN_SOURCE} refused the lookup: ${text}`,
      status: r.data.status,
    });
  }
  const entry = Array.isArray(body.result) && isObject(body.result[0]) ? body.result[0] : null;
  if (!entry)
    return fail(ETHERSCAN_SOURCE, started, {
      reason: 'upstream_bad_response',
      message: `${ETHERSCAN_SOURCE} answered without a result entry`,
      status: r.data.status,
    });
  const source = typeof entry.SourceCode === 'string' ? entry.SourceCode : '';
  const verified = source !== '' && entry.ABI !== 'Contract source code not verified';
  return {
    ok: true,
    data: { verified, match: verified ? 'verified' : null },
    source: ETHERSCAN_SOURCE,
    latencyMs: r.latencyMs,
  };
}
