/**
 * Host name → addresses for the SSRF check. The default resolver asks the system resolver for
 * every address and keeps answers briefly: getaddrinfo runs on libuv's small thread pool, and at
 * thousands of checks a second the same few hosts come back constantly. Caching cannot weaken
 * the check, because the connection always goes to an address that was classified.
 */
import { lookup } from 'node:dns/promises';
import { OldestFirst } from '../oldest-first.js';

export type Resolver = (hostname: string) => Promise<string[]>;

const TTL_MS = 15_000;
const MAX_ENTRIES = 1024;

interface Entry {
  expires: number;
  addresses: Promise<string[]>;
}

const cache = new Map<string, Entry>();
const cacheOldest = new OldestFirst(cache);

async function systemLookup(hostname: string): Promise<string[]> {
  const all = await lookup(hostname, { all: true, verbatim: true });
  return all.map((a) => a.address);
}

export const systemResolver: Resolver = (hostname) => {
  const now = Date.now();
  const hit = cache.get(hostname);
  if (hit && hit.expires > now) return hit.addresses;
  if (cache.size >= MAX_ENTRIES) cacheOldest.evict();
  // The pending promise is cached too, so a burst for one host makes one lookup.
  const addresses = systemLookup(hostname);
  const entry = { expires: now + TTL_MS, addresses };
  cache.set(hostname, entry);
  addresses.catch(() => {
    if (cache.get(hostname) === entry) cache.delete(hostname); // failures are not remembered
  });
  return addresses;
};

/** A fixed name → addresses table, for tests and for operators who pin hosts. */
export function staticResolver(table: Readonly<Record<string, readonly string[]>>): Resolver {
  return async (hostname) => {
    const hit = table[hostname.toLowerCase()];
    if (!hit) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return [...hit];
  };
}
