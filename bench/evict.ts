/**
 * Inserts into a full check cache (bench/README.md, "Cache eviction"), timed in the bench's own
 * process: the service's ResultCache at the default bound (CACHE_MAX_ENTRIES, 50,000), full, so
 * that each insert of a new check drops the oldest one, against the same inserts into a cache with
 * room for them all. A busy service's cache is full within minutes of starting; every cold check
 * it answers is such an insert, on the event loop.
 */
import { ResultCache } from '../src/engine/cache.js';
import type { CheckOutcome } from '../src/checks/types.js';
import { LIMITS, type TargetCheck } from './targets.js';

export interface Eviction {
  /** CPU µs per insert into the full cache, and into the one with room. */
  fullUs: number;
  roomUs: number;
  entries: number;
}

const outcome = (i: number): CheckOutcome => ({
  status: 'pass',
  reason: null,
  message: `price ${i} is above the minimum`,
  observed: { price_usd: i },
  expected: { min_price: 1 },
  source: 'https://api.coingecko.com/api/v3/simple/price',
  ttl_s: 60,
});

export function measureEviction(entries = 50_000, inserts = 100_000): Eviction {
  const key = (i: number) => `price:{"asset_id":"bench-${i}","min_price":1,"type":"price","vs_currency":"usd"}`;
  const keys = Array.from({ length: entries + inserts }, (_, i) => key(i));
  const values = keys.map((_, i) => ({ outcome: outcome(i), storedAt: Date.now(), latencyMs: 50 }));
  const cpu = (): number => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  const time = (bound: number): number => {
    const cache = new ResultCache(bound);
    for (let i = 0; i < entries; i++) cache.set(keys[i], values[i]);
    const t = cpu();
    for (let i = entries; i < entries + inserts; i++) cache.set(keys[i], values[i]);
    return (cpu() - t) / inserts;
  };
  let full = Number.POSITIVE_INFINITY;
  let room = Number.POSITIVE_INFINITY;
  // The best of three passes of each: the driver shares the machine with the servers it measures.
  for (let pass = 0; pass < 3; pass++) {
    full = Math.min(full, time(entries));
    room = Math.min(room, time(entries + inserts));
  }
  return { fullUs: Math.round(full * 100) / 100, roomUs: Math.round(room * 100) / 100, entries };
}

export function checkEviction(e: Eviction): TargetCheck[] {
  const limit = Math.round(e.roomUs * LIMITS.cacheFullVsRoom * 100) / 100;
  return [
    {
      target: `an insert into the full check cache (${e.entries} entries) <= ${LIMITS.cacheFullVsRoom} x one into a cache with room`,
      ok: e.fullUs <= limit,
      detail: `${e.fullUs} us against ${e.roomUs} us a check (limit ${limit})`,
    },
  ];
}
