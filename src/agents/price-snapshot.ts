/**
 * One price-provider answer for a set of assets, kept for the price's lifetime (30 s) and shared
 * by identical requests in flight. The stablecoin agent asks for many assets in ONE upstream
 * call; going through the per-check engine would make one call per asset, so it keeps this small
 * snapshot cache instead. Only successful answers are kept.
 */
import type { Config } from '../config.js';
import { OldestFirst } from '../oldest-first.js';
import { getSimplePrices, type SimplePrice } from '../upstreams/price.js';
import type { UpstreamResult } from '../net/result.js';

export interface Snapshot {
  res: UpstreamResult<Record<string, SimplePrice>>;
  cached: boolean;
  ageS: number;
}

interface Entry {
  res: UpstreamResult<Record<string, SimplePrice>>;
  storedAt: number;
}

export class PriceSnapshots {
  private readonly entries = new Map<string, Entry>();
  private readonly oldest = new OldestFirst(this.entries);
  private readonly inflight = new Map<string, Promise<UpstreamResult<Record<string, SimplePrice>>>>();

  constructor(
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 256,
    private readonly now: () => number = Date.now,
  ) {}

  async get(config: Readonly<Config>, ids: readonly string[], quote: string, signal: AbortSignal): Promise<Snapshot> {
    const key = `${quote}|${[...ids].sort().join(',')}`;
    const hit = this.entries.get(key);
    if (hit && this.now() - hit.storedAt < this.ttlMs) {
      return { res: hit.res, cached: true, ageS: Math.floor((this.now() - hit.storedAt) / 1000) };
    }
    let flight = this.inflight.get(key);
    if (!flight) {
      flight = getSimplePrices(config, ids, quote, signal).finally(() => this.inflight.delete(key));
      this.inflight.set(key, flight);
    }
    const res = await flight;
    if (res.ok) this.store(key, res);
    return { res, cached: false, ageS: 0 };
  }

  private store(key: string, res: Entry['res']): void {
    this.entries.delete(key);
    this.entries.set(key, { res, storedAt: this.now() });
    if (this.entries.size > this.maxEntries) this.oldest.evict();
  }
}
