/**
 * DexScreener emulator: /latest/dex/pairs/{chain}/{pair} in the provider's shape
 * (test/fixtures/upstreams/dexscreener). Unknown pairs answer 200 with `pairs: null, pair: null`.
 */
import { Emulator } from './core.js';

/** Pair fields a test sets; null means the provider leaves the field out. */
export interface PairFields {
  dexId: string;
  baseSymbol: string;
  quoteSymbol: string;
  priceUsd: string | number | null;
  priceNative: string | number | null;
  liquidityUsd: number | null;
  volumeH24: number | null;
  buysH24: number | null;
  sellsH24: number | null;
  fdv: number | null;
  marketCap: number | null;
  /** Milliseconds since the epoch. */
  pairCreatedAt: number | null;
}

const DEFAULTS: PairFields = {
  dexId: 'uniswap',
  baseSymbol: 'WETH',
  quoteSymbol: 'USDC',
  priceUsd: '3120.55',
  priceNative: '3120.55',
  liquidityUsd: 12_500_000,
  volumeH24: 4_200_000,
  buysH24: 1800,
  sellsH24: 1750,
  fdv: 9_400_000_000,
  marketCap: 9_400_000_000,
  pairCreatedAt: Date.UTC(2023, 7, 9),
};

const key = (chain: string, pair: string): string => `${chain}/${pair.toLowerCase()}`;

/** The upstream JSON object for a pair, leaving out null fields as the provider does. */
export function pairBody(chain: string, address: string, f: PairFields): Record<string, unknown> {
  const p: Record<string, unknown> = {
    chainId: chain,
    dexId: f.dexId,
    url: `https://dexscreener.com/${chain}/${address.toLowerCase()}`,
    pairAddress: address,
    baseToken: { address: '0x4200000000000000000000000000000000000006', name: f.baseSymbol, symbol: f.baseSymbol },
    quoteToken: { address: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', name: f.quoteSymbol, symbol: f.quoteSymbol },
    priceChange: { h24: 0.4 },
  };
  if (f.priceNative !== null) p.priceNative = String(f.priceNative);
  if (f.priceUsd !== null) p.priceUsd = String(f.priceUsd);
  if (f.buysH24 !== null || f.sellsH24 !== null)
    p.txns = {
      h24: {
        ...(f.buysH24 === null ? {} : { buys: f.buysH24 }),
        ...(f.sellsH24 === null ? {} : { sells: f.sellsH24 }),
      },
    };
  if (f.volumeH24 !== null) p.volume = { h24: f.volumeH24 };
  if (f.liquidityUsd !== null) p.liquidity = { usd: f.liquidityUsd, base: 1000, quote: 1000 };
  if (f.fdv !== null) p.fdv = f.fdv;
  if (f.marketCap !== null) p.marketCap = f.marketCap;
  if (f.pairCreatedAt !== null) p.pairCreatedAt = f.pairCreatedAt;
  return p;
}

export class DexScreenerEmulator extends Emulator {
  private readonly pairs = new Map<string, Record<string, unknown>>();

  /** Add or replace a pair; unset fields take realistic WETH/USDC defaults. */
  setPair(chain: string, address: string, fields: Partial<PairFields> = {}): this {
    this.pairs.set(key(chain, address), pairBody(chain, address, { ...DEFAULTS, ...fields }));
    return this;
  }

  /** A pair object exactly as given (odd shapes, string numbers, extra fields). */
  setRawPair(chain: string, address: string, raw: Record<string, unknown>): this {
    this.pairs.set(key(chain, address), raw);
    return this;
  }

  removePair(chain: string, address: string): this {
    this.pairs.delete(key(chain, address));
    return this;
  }

  constructor() {
    super();
    this.route('GET', /^\/latest\/dex\/pairs\/([^/]+)\/([^/]+)$/, (req) => {
      const [chain, address] = req.params.map(decodeURIComponent);
      const p = this.pairs.get(key(chain, address)) ?? null;
      return { body: { schemaVersion: '1.0.0', pairs: p ? [p] : null, pair: p } };
    });
  }
}

export async function startDexScreener(): Promise<DexScreenerEmulator> {
  return new DexScreenerEmulator().listen();
}
