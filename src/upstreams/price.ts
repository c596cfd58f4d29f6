/**
 * Price provider (CoinGecko /simple/price). One call for any number of assets. An id the
 * provider does not know is simply absent from its answer, and so from ours: the check turns
 * that into `unknown_asset`.
 */
import type { Config } from '../config.js';
import { fail, isObject, num, requestJson } from '../net/json.js';
import type { UpstreamResult } from '../net/result.js';

export const PRICE_SOURCE = 'price_provider';

export interface SimplePrice {
  /** Price in the quote currency; null when the provider knows the asset but gave no price. */
  price: number | null;
  /** Unix seconds of the provider's last update; null when absent. */
  lastUpdatedAt: number | null;
}

// Key problems (10010: pro key on the public host, 10011: demo key on the pro host, ...) are the
// operator's to fix; they are errors of the provider, not of the asset.
const RATE_LIMIT_CODES = new Set([429, 10005]);

function keyHeader(config: Readonly<Config>): Record<string, string> {
  if (!config.priceApiKey) return {};
  const pro = new URL(config.priceApiUrl).hostname.startsWith('pro-api.');
  return { [pro ? 'x-cg-pro-api-key' : 'x-cg-demo-api-key']: config.priceApiKey };
}

/** The provider's error envelope: {"status":{"error_code":..,"error_message":..}} or {"error":".."}. */
function envelope(body: unknown): { code: number | null; message: string } | null {
  if (!isObject(body)) return null;
  if (isObject(body.status) && body.status.error_code !== undefined) {
    const msg = typeof body.status.error_message === 'string' ? body.status.error_message : 'error';
    return { code: num(body.status.error_code), message: msg };
  }
  if (typeof body.error === 'string') return { code: null, message: body.error };
  return null;
}

/** The provider's answer as JSON, or the failure its error envelope or status says. */
async function priceJson(
  config: Readonly<Config>,
  pathAndQuery: string,
  signal: AbortSignal | undefined,
): Promise<UpstreamResult<{ status: number; json: Record<string, unknown> }>> {
  const started = performance.now();
  const r = await requestJson(`${config.priceApiUrl}${pathAndQuery}`, {
    source: PRICE_SOURCE,
    signal,
    timeoutMs: config.checkHardTimeoutMs,
    headers: keyHeader(config),
    // 4xx bodies carry the provider's error envelope, which says more than the status.
    accept: (s) => s < 500 && s !== 429,
  });
  if (!r.ok) return r;
  const { status, json } = r.data;
  const env = envelope(json);
  if (env || status >= 400) {
    const code = env?.code ?? null;
    const limited = code !== null && RATE_LIMIT_CODES.has(code);
    return fail(PRICE_SOURCE, started, {
      reason: limited ? 'upstream_rate_limited' : 'upstream_error',
      message: `${PRICE_SOURCE} refused the request (${code ?? `HTTP ${status}`}: ${(env?.message ?? 'no detail').slice(0, 200)})`,
      status,
    });
  }
  if (!isObject(json)) {
    return fail(PRICE_SOURCE, started, {
      reason: 'upstream_bad_response',
      message: `${PRICE_SOURCE} answered with an unexpected shape`,
      status,
    });
  }
  return { ok: true, data: { status, json }, source: PRICE_SOURCE, latencyMs: r.latencyMs };
}

/**
 * Token prices by contract address on one platform (/simple/token_price/{platform}), one call
 * for all of them. An address the provider does not know is absent from the answer, and so from ours.
 */
export async function getTokenPrices(
  config: Readonly<Config>,
  platform: string,
  addresses: readonly string[],
  quote: string,
  signal?: AbortSignal,
): Promise<UpstreamResult<Record<string, SimplePrice>>> {
  const unique = [...new Set(addresses.map((a) => a.trim().toLowerCase()).filter(Boolean))];
  const vs = quote.trim().toLowerCase();
  const qs = `contract_addresses=${unique.map(encodeURIComponent).join(',')}&vs_currencies=${encodeURIComponent(vs)}&include_last_updated_at=true`;
  const r = await priceJson(config, `/simple/token_price/${encodeURIComponent(platform)}?${qs}`, signal);
  if (!r.ok) return r;
  const byLower = new Map(Object.entries(r.data.json).map(([k, v]) => [k.toLowerCase(), v]));
  const out: Record<string, SimplePrice> = {};
  for (const a of unique) {
    const entry = byLower.get(a);
    if (!isObject(entry)) continue;
    out[a] = { price: num(entry[vs]), lastUpdatedAt: num(entry.last_updated_at) };
  }
  return { ok: true, data: out, source: PRICE_SOURCE, latencyMs: r.latencyMs };
}

export async function getSimplePrices(
  config: Readonly<Config>,
  ids: readonly string[],
  quote: string,
  signal?: AbortSignal,
): Promise<UpstreamResult<Record<string, SimplePrice>>> {
  const unique = [...new Set(ids.map((id) => id.trim().toLowerCase()).filter(Boolean))];
  const vs = quote.trim().toLowerCase();
  const qs = `ids=${unique.map(encodeURIComponent).join(',')}&vs_currencies=${encodeURIComponent(vs)}&include_last_updated_at=true`;
  const r = await priceJson(config, `/simple/price?${qs}`, signal);
  if (!r.ok) return r;
  const json = r.data.json;
  const out: Record<string, SimplePrice> = {};
  for (const id of unique) {
    const entry = json[id];
    if (!isObject(entry)) continue; // unknown id: absent
    out[id] = { price: num(entry[vs]), lastUpdatedAt: num(entry.last_updated_at) };
  }
  return { ok: true, data: out, source: PRICE_SOURCE, latencyMs: r.latencyMs };
}
