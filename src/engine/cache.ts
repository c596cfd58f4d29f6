/**
 * Result cache with per-entry TTL and a size bound (oldest entries evicted first), plus
 * single-flight: identical checks in flight at once share one upstream call.
 */
import type { CheckOutcome } from '../checks/types.js';
import { OldestFirst } from '../oldest-first.js';

export interface CacheEntry {
  outcome: CheckOutcome;
  storedAt: number;
  /** Milliseconds the upstream call took, for the evidence of later hits. */
  latencyMs: number;
}

export class ResultCache {
  private readonly entries = new Map<string, CacheEntry>();
  private readonly inflight = new Map<string, Promise<CacheEntry>>();
  private readonly oldest = new OldestFirst(this.entries);

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A fresh entry, or undefined. Expired entries are dropped on read. */
  get(key: string): CacheEntry | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (this.now() - e.storedAt >= e.outcome.ttl_s * 1000) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }

  set(key: string, entry: CacheEntry): void {
    if (entry.outcome.ttl_s <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > this.maxEntries) this.oldest.evict();
  }

  /** Joins the call in flight for `key`, or starts one with `start`. `joined` says which. */
  flight(key: string, start: () => Promise<CacheEntry>): { promise: Promise<CacheEntry>; joined: boolean } {
    const existing = this.inflight.get(key);
    if (existing) return { promise: existing, joined: true };
    const promise = start().finally(() => this.inflight.delete(key));
    this.inflight.set(key, promise);
    return { promise, joined: false };
  }

  /**
   * Drops every expired entry. Reads drop the ones they meet, but a key nobody asks for again
   * (a one-off asset or pair) would otherwise stay until the size bound pushed it out.
   */
  sweep(): number {
    const now = this.now();
    let dropped = 0;
    for (const [key, e] of this.entries) {
      if (now - e.storedAt >= e.outcome.ttl_s * 1000) {
        this.entries.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }
}
