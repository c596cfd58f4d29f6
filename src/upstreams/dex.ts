/**
 * DEX provider (DexScreener /latest/dex/pairs/{chain}/{pair}). An unknown pair comes back as
 * HTTP 200 with `pair: null` / `pairs: null`; that is data (null), not an error. Numbers arrive
 * partly as strings; a field the provider left out stays null, never 0, because a missing
 * liquidity must not read as "no liquidity".
 */
import type { Config } from '../config.js';
import { fail, isObject, num, requestJson } from '../net/json.js';
import type { UpstreamResult } from '../net/result.js';

export const DEX_SOURCE = 'dex_provider';

export interface DexPair {
  chainId: string;
  pairAddress: string;
  dexId: string | null;
  url: string | null;
  baseSymbol: string | null;
  quoteSymbol: string | null;
  priceUsd: number | null;
  priceNative: number | null;
  liquidityUsd: number | null;
  volumeH24: number | null;
  buysH24: number | null;
  sellsH24: number | null;
  fdv: number | null;
  marketCap: number | null;
  /** Milliseconds since the epoch; absent for pools older than the provider's indexing. */
  pairCreatedAt: number | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const at = (o: unknown, key: string): unknown => (isObject(o) ? o[key] : undefined);

export function normalisePair(p: Record<string, unknown>, chain: string, pairAddress: string): DexPair {
  const h24 = at(p.txns, 'h24');
  return {
    chainId: str(p.chainId) ?? chain,
    pairAddress: str(p.pairAddress) ?? pairAddress,
    dexId: str(p.dexId),
    url: str(p.url),
    baseSymbol: str(at(p.baseToken, 'symbol')),
    quoteSymbol: str(at(p.quoteToken, 'symbol')),
    priceUsd: num(p.priceUsd),
    priceNative: num(p.priceNative),
    liquidityUsd: num(at(p.liquidity, 'usd')),
    volumeH24: num(at(p.volume, 'h24')),
    buysH24: num(at(h24, 'buys')),
    sellsH24: num(at(h24, 'sells')),
    fdv: num(p.fdv),
    marketCap: num(p.marketCap),
    pairCreatedAt: num(p.pairCreatedAt),
  };
}

export async function getDexPair(
  config: Readonly<Config>,
  chain: string,
  pairAddress: string,
  signal?: AbortSignal,
): Promise<UpstreamResult<DexPair | null>> {
  const started = performance.now();
  const url = `${config.dexApiUrl}/latest/dex/pairs/${encodeURIComponent(chain)}/${encodeURIComponent(pairAddress)}`;
  const r = await requestJson(url, { source: DEX_SOURCE, signal, timeoutMs: config.checkHardTimeoutMs });
  if (!r.ok) return r;
  const body = r.data.json;
  if (!isObject(body) || !('pair' in body || 'pairs' in body)) {
    return fail(DEX_SOURCE, started, {
      reason: 'upstream_bad_response',
      message: `${DEX_SOURCE} answered with an unexpected shape`,
      status: r.data.status,
    });
  }
  const wanted = pairAddress.toLowerCase();
  const pairs = Array.isArray(body.pairs) ? body.pairs.filter(isObject) : [];
  // `pair` is the one asked for; else the list entry with that address (or the list's only entry),
  // never some other pool's numbers.
  const found = isObject(body.pair)
    ? body.pair
    : (pairs.find((p) => typeof p.pairAddress === 'string' && p.pairAddress.toLowerCase() === wanted) ??
      (pairs.length === 1 ? pairs[0] : undefined));
  return {
    ok: true,
    data: found ? normalisePair(found, chain, pairAddress) : null,
    source: DEX_SOURCE,
    latencyMs: r.latencyMs,
  };
}
