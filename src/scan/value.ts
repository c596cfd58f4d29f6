/**
 * USD values of what an action moves (docs/action-scan.md §3): token prices from the price
 * provider's token-price endpoint by contract address, one call for all the tokens of a
 * simulation; the native coin by the provider's coin id. Prices are kept 30 s per token, as price
 * checks keep theirs; decimals and symbols, read from the token with eth_call in one batch, are
 * kept for the life of the process per node (a token does not change them; keyed by the node's
 * URL so one caller's node cannot tell another caller's request what a token's decimals are).
 * An unknown price is null, never 0.
 */
import { AbiCoder } from 'ethers';
import type { Config } from '../config.js';
import { type RpcOptions, rpcBatch } from '../net/rpc.js';
import { OldestFirst } from '../oldest-first.js';
import { getSimplePrices, getTokenPrices } from '../upstreams/price.js';
import type { AssetChange } from './changes.js';

/** The provider's platform id for token prices, by chain (testnets have none). */
export const PRICE_PLATFORMS: Readonly<Record<string, string>> = Object.freeze({
  base: 'base',
  ethereum: 'ethereum',
  optimism: 'optimistic-ethereum',
  arbitrum: 'arbitrum-one',
  polygon: 'polygon-pos',
  bsc: 'binance-smart-chain',
  avalanche: 'avalanche',
});

/** The provider's id of each chain's native coin (ETH on the rollups; testnet coins are worth nothing). */
export const NATIVE_COIN_IDS: Readonly<Record<string, string>> = Object.freeze({
  base: 'ethereum',
  ethereum: 'ethereum',
  optimism: 'ethereum',
  arbitrum: 'ethereum',
  polygon: 'polygon-ecosystem-token',
  bsc: 'binancecoin',
  avalanche: 'avalanche-2',
});

const PRICE_TTL_MS = 30_000;
const MAX_ENTRIES = 4096;

interface Kept<T> {
  value: T;
  until: number;
}
const prices = new Map<string, Kept<number | null>>();
const metas = new Map<string, TokenMeta>();
const pricesOldest = new OldestFirst(prices);
const metasOldest = new OldestFirst(metas);

function keep<T>(kept: OldestFirst<string, T>, key: string, value: T): void {
  if (kept.map.size >= MAX_ENTRIES) kept.evict();
  kept.map.set(key, value);
}

export interface Priced {
  /** USD per whole unit, by lower-case token address or "native"; null when unknown. */
  usd: Record<string, number | null>;
  /** Provider calls made (0 when every price was kept). */
  calls: number;
  /** Why some prices are missing, when the provider failed. */
  error: string | null;
}

/**
 * USD prices for `tokens` on `chain` (and the native coin when `native`), at most one token-price
 * call and one coin call, concurrently, for whatever is not kept already.
 */
export async function priceAssets(
  config: Readonly<Config>,
  chain: string,
  tokens: readonly string[],
  native: boolean,
  signal?: AbortSignal,
): Promise<Priced> {
  const now = Date.now();
  const usd: Record<string, number | null> = {};
  const fresh = (key: string): Kept<number | null> | undefined => {
    const k = prices.get(key);
    return k && k.until > now ? k : undefined;
  };
  const platform = Object.hasOwn(PRICE_PLATFORMS, chain) ? PRICE_PLATFORMS[chain] : null;
  const coin = Object.hasOwn(NATIVE_COIN_IDS, chain) ? NATIVE_COIN_IDS[chain] : null;
  const wantTokens: string[] = [];
  for (const t of new Set(tokens.map((a) => a.toLowerCase()))) {
    const k = platform ? fresh(`${platform}:${t}`) : undefined;
    if (k) usd[t] = k.value;
    else if (platform) wantTokens.push(t);
    else usd[t] = null;
  }
  let wantNative = false;
  if (native) {
    const k = coin ? fresh(`coin:${coin}`) : undefined;
    if (k) usd.native = k.value;
    else if (coin) wantNative = true;
    else usd.native = null;
  }
  const errors: string[] = [];
  let calls = 0;
  await Promise.all([
    (async () => {
      if (wantTokens.length === 0 || !platform) return;
      calls++;
      const r = await getTokenPrices(config, platform, wantTokens, 'usd', signal);
      for (const t of wantTokens) {
        const p = r.ok ? (r.data[t]?.price ?? null) : null;
        usd[t] = p;
        // A failed call is not an answer: only what the provider said is kept.
        if (r.ok) keep(pricesOldest, `${platform}:${t}`, { value: p, until: now + PRICE_TTL_MS });
      }
      if (!r.ok) errors.push(r.message);
    })(),
    (async () => {
      if (!wantNative || !coin) return;
      calls++;
      const r = await getSimplePrices(config, [coin], 'usd', signal);
      const p = r.ok ? (r.data[coin]?.price ?? null) : null;
      usd.native = p;
      if (r.ok) keep(pricesOldest, `coin:${coin}`, { value: p, until: now + PRICE_TTL_MS });
      else errors.push(r.message);
    })(),
  ]);
  return { usd, calls, error: errors.length > 0 ? errors.join('; ') : null };
}

export interface TokenMeta {
  decimals: number | null;
  symbol: string | null;
}

const DECIMALS = '0x313ce567';
const SYMBOL = '0x95d89b41';

/** A symbol() answer: an ABI string, or a bytes32 right-padded with zeros (older tokens). */
export function decodeSymbol(hex: unknown): string | null {
  if (typeof hex !== 'string' || !/^0x[0-9a-fA-F]*$/.test(hex) || hex.length < 66) return null;
  try {
    if (hex.length === 66) {
      const bytes = Buffer.from(hex.slice(2), 'hex');
      const end = bytes.indexOf(0);
      const s = bytes.subarray(0, end === -1 ? 32 : end).toString('utf8');
      return /^[\x20-\x7e]{1,32}$/.test(s) ? s : null;
    }
    const s = String(AbiCoder.defaultAbiCoder().decode(['string'], hex)[0]);
    return /^[\x20-\x7e]{1,32}$/.test(s) ? s : null;
  } catch {
    return null;
  }
}

function decodeDecimals(hex: unknown): number | null {
  if (typeof hex !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(hex)) return null;
  const n = BigInt(hex);
  return n <= 36n ? Number(n) : null;
}

/** decimals() and symbol() of each ERC-20, one batch for all that are not known yet. */
export async function tokenMeta(
  url: string,
  chain: string,
  tokens: readonly string[],
  opts: RpcOptions,
): Promise<Record<string, TokenMeta>> {
  const out: Record<string, TokenMeta> = {};
  const want: string[] = [];
  for (const t of new Set(tokens.map((a) => a.toLowerCase()))) {
    const k = metas.get(`${url}|${chain}:${t}`);
    if (k) out[t] = k;
    else want.push(t);
  }
  if (want.length === 0) return out;
  const calls = want.flatMap((to) => [
    { method: 'eth_call', params: [{ to, data: DECIMALS }, 'latest'] },
    { method: 'eth_call', params: [{ to, data: SYMBOL }, 'latest'] },
  ]);
  const r = await rpcBatch(url, calls, opts);
  want.forEach((t, i) => {
    const d = r.ok ? r.data[2 * i] : undefined;
    const s = r.ok ? r.data[2 * i + 1] : undefined;
    const meta = {
      decimals: d?.error ? null : decodeDecimals(d?.result),
      symbol: s?.error ? null : decodeSymbol(s?.result),
    };
    out[t] = meta;
    // Keep only a token that answered: a node failure must not pin "no decimals" for good.
    if (meta.decimals !== null) keep(metasOldest, `${url}|${chain}:${t}`, meta);
  });
  return out;
}

/** amount (atomic) × price / 10^decimals, rounded to cents' hundredths; null when any part is unknown. */
export function usdValue(
  amount: string,
  decimals: number | null | undefined,
  price: number | null | undefined,
): number | null {
  if (price === null || price === undefined || decimals === null || decimals === undefined) return null;
  const v = (Number(BigInt(amount)) / 10 ** decimals) * price;
  return Number.isFinite(v) ? Math.round(v * 1e4) / 1e4 : null;
}

/** Forget what was kept (tests). */
export function forgetValues(): void {
  prices.clear();
  metas.clear();
}

/**
 * Fills in USD values, symbols and decimals of what a simulation moved, in place: the prices (one
 * token-price call, and the native coin's when it moved) and the tokens' metadata from the node,
 * asked side by side. Nothing is asked when nothing moved. Returns the price provider's error, if
 * any (the changes then stay unpriced).
 */
export async function valueChanges(
  config: Readonly<Config>,
  chain: string,
  url: string,
  rpcOpts: RpcOptions,
  changes: AssetChange[],
  signal?: AbortSignal,
): Promise<string | null> {
  if (changes.length === 0) return null;
  const fungible = [...new Set(changes.filter((c) => c.standard === 'erc20').map((c) => c.asset))];
  const tokens = [...new Set(changes.filter((c) => c.standard !== 'native').map((c) => c.asset))];
  const [priced, meta] = await Promise.all([
    priceAssets(
      config,
      chain,
      fungible,
      changes.some((c) => c.standard === 'native'),
      signal,
    ),
    tokens.length > 0 ? tokenMeta(url, chain, tokens, rpcOpts) : Promise.resolve({} as Record<string, TokenMeta>),
  ]);
  for (const c of changes) {
    if (c.standard === 'native') {
      c.usd = usdValue(c.amount, 18, priced.usd.native);
      continue;
    }
    const info = meta[c.asset];
    if (info?.symbol) c.symbol = info.symbol;
    if (c.standard === 'erc20') {
      if (info?.decimals !== null && info?.decimals !== undefined) c.decimals = info.decimals;
      c.usd = usdValue(c.amount, c.decimals, priced.usd[c.asset]);
    }
  }
  return priced.error;
}
