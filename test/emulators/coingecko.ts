/**
 * CoinGecko emulator: /simple/price, /simple/token_price/{platform} and /ping in the provider's
 * shapes (test/fixtures/upstreams/coingecko). Unknown ids and contract addresses are left out
 * of the answer, as upstream.
 */
import { Emulator } from './core.js';

/** Bodies copied from the fixtures, for `cg.fault = { status, body }`. */
export const CG_RATE_LIMIT_BODY = JSON.stringify({
  status: {
    error_code: 429,
    error_message:
      "You've exceeded the Rate Limit. Please visit https://www.coingecko.com/en/api/pricing to subscribe to our API plans for higher rate limits.",
  },
});
export const CG_PRO_KEY_ON_PUBLIC_HOST_BODY = JSON.stringify({
  status: {
    error_code: 10010,
    error_message:
      'If you are using Pro API key, please change your root URL from api.coingecko.com to pro-api.coingecko.com',
  },
});

/** A quote's `last_updated_at`: a fixed Unix second, null (sent as null), or `'live'`: the second it is asked for. */
type UpdatedAt = number | null | 'live';

interface Quote {
  price: number | string | null;
  lastUpdatedAt: UpdatedAt;
}

const updatedAt = (q: Quote): number | null =>
  q.lastUpdatedAt === 'live' ? Math.floor(Date.now() / 1000) : q.lastUpdatedAt;

export class CoinGeckoEmulator extends Emulator {
  private readonly assets = new Map<string, Map<string, Quote>>();
  private readonly tokens = new Map<string, Quote>();

  /** Price of `id` in `quote`; a string price is sent as a JSON string, null as null. */
  setPrice(
    id: string,
    quote: string,
    price: number | string | null,
    lastUpdatedAt: UpdatedAt = Math.floor(Date.now() / 1000),
  ): this {
    let quotes = this.assets.get(id);
    if (!quotes) this.assets.set(id, (quotes = new Map()));
    quotes.set(quote.toLowerCase(), { price, lastUpdatedAt });
    return this;
  }

  /** USD price of the token at `address` on `platform` (base, ethereum, ...); null is sent as null. */
  setTokenPrice(
    platform: string,
    address: string,
    usd: number | null,
    lastUpdatedAt: UpdatedAt = Math.floor(Date.now() / 1000),
  ): this {
    this.tokens.set(`${platform}:${address.toLowerCase()}`, { price: usd, lastUpdatedAt });
    return this;
  }

  removeAsset(id: string): this {
    this.assets.delete(id);
    return this;
  }

  constructor() {
    super();
    this.route('GET', '/ping', () => ({ body: { gecko_says: '(V3) To the Moon!' } }));
    this.route('GET', '/simple/price', (req) => {
      const ids = (req.query.get('ids') ?? '').split(',').filter(Boolean);
      const vs = (req.query.get('vs_currencies') ?? '').toLowerCase().split(',').filter(Boolean);
      const withTime = req.query.get('include_last_updated_at') === 'true';
      const out: Record<string, Record<string, unknown>> = {};
      for (const id of ids) {
        const quotes = this.assets.get(id);
        if (!quotes) continue;
        const entry: Record<string, unknown> = {};
        for (const v of vs) {
          const q = quotes.get(v);
          if (!q) continue;
          entry[v] = q.price;
          if (withTime) entry.last_updated_at = updatedAt(q);
        }
        out[id] = entry;
      }
      return { body: out };
    });
    // Upstream keys the answer by the address in lower case and answers only the usd quote here.
    this.route('GET', /^\/simple\/token_price\/([^/]+)$/, (req) => {
      const platform = req.params[0];
      const addresses = (req.query.get('contract_addresses') ?? '').toLowerCase().split(',').filter(Boolean);
      const vs = (req.query.get('vs_currencies') ?? '').toLowerCase().split(',').filter(Boolean);
      const withTime = req.query.get('include_last_updated_at') === 'true';
      const out: Record<string, Record<string, unknown>> = {};
      for (const a of addresses) {
        const q = this.tokens.get(`${platform}:${a}`);
        if (!q || !vs.includes('usd')) continue;
        out[a] = { usd: q.price, ...(withTime ? { last_updated_at: updatedAt(q) } : {}) };
      }
      return { body: out };
    });
  }
}

export async function startCoinGecko(): Promise<CoinGeckoEmulator> {
  return new CoinGeckoEmulator().listen();
}
