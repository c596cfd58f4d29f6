/**
 * API keys: issuing, hashing, reading them off a request, and a short-lived lookup cache.
 *
 * A key is `pvk_` + 32 random bytes in base64url (256 bits). Only its SHA-256 is stored; the raw
 * key is shown once, in the signup answer. Lookups sit on every paid request, so results (found,
 * revoked, or unknown) are cached in this process's memory for `ttlMs` (default 4 s), at most
 * `maxEntries` of them: a revoked key, a plan change or a new policy binding takes effect within
 * 5 s on every process (the TTL plus the time a request in flight takes), and at once on the
 * process that made the change (`forget`). Quota counts are never cached; they are always counted in the database.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ApiKeyRecord, Store } from '../store/types.js';
import { OldestFirst } from '../oldest-first.js';

export const KEY_PREFIX = 'pvk_';
const KEY_PATTERN = /^pvk_[A-Za-z0-9_-]{43}$/;
/** Characters of the key kept as its public prefix: `pvk_` plus 8 (48 bits, enough to tell keys apart). */
const PREFIX_LENGTH = KEY_PREFIX.length + 8;

export interface IssuedKey {
  key: string;
  hash: string;
  prefix: string;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function generateApiKey(): IssuedKey {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, hash: hashApiKey(key), prefix: key.slice(0, PREFIX_LENGTH) };
}

/** Shape check only: anything else cannot be one of ours, so it is refused without a lookup. */
export function isWellFormedKey(s: string): boolean {
  return KEY_PATTERN.test(s);
}

/**
 * The key a request presents: `x-api-key: K`, else `Authorization: Bearer K`. Returns null when
 * neither carries a non-empty value (another Authorization scheme counts as no key).
 */
export function presentedKey(req: Pick<IncomingMessage, 'headers'>): string | null {
  const header = req.headers['x-api-key'];
  const direct = (Array.isArray(header) ? header[0] : header)?.trim();
  if (direct) return direct;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '');
  return m ? m[1] : null;
}

/** How long a key lookup is reused: under the 5 s within which a revocation is honoured everywhere. */
export const KEY_CACHE_MS = 4000;

interface Entry {
  record: ApiKeyRecord | null;
  expires: number;
}

export interface KeyResolverOptions {
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

/** Resolves raw keys to records through a bounded, time-limited cache with one lookup in flight per key. */
export class KeyResolver {
  private readonly cache = new Map<string, Entry>();
  private readonly oldest = new OldestFirst(this.cache);
  private readonly inflight = new Map<string, Promise<ApiKeyRecord | null>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly store: Pick<Store, 'findApiKeyByHash'>,
    opts: KeyResolverOptions = {},
  ) {
    this.ttlMs = opts.ttlMs ?? KEY_CACHE_MS;
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * The key's record (revoked ones included: the caller tells them apart), or null when unknown.
   * The cache is keyed by the presented key itself, so a hit costs no hash (the SHA-256 is most
   * of a hit's cost); the entry lives in this process's memory for `ttlMs` at most, like the
   * request that carried the key, and is never written anywhere.
   */
  async resolve(rawKey: string): Promise<ApiKeyRecord | null> {
    const hit = this.cache.get(rawKey);
    // A hit is not moved to the back: an entry lives `ttlMs` at most, so eviction by age of
    // insertion differs from least-recently-used only past `maxEntries` keys within one TTL.
    if (hit !== undefined && hit.expires > this.now()) return hit.record;
    if (!isWellFormedKey(rawKey)) return null;
    let pending = this.inflight.get(rawKey);
    if (!pending) {
      pending = this.store.findApiKeyByHash(hashApiKey(rawKey)).finally(() => this.inflight.delete(rawKey));
      this.inflight.set(rawKey, pending);
      const record = await pending;
      this.remember(rawKey, record);
      return record;
    }
    return pending;
  }

  private remember(rawKey: string, record: ApiKeyRecord | null): void {
    this.cache.delete(rawKey);
    this.cache.set(rawKey, { record, expires: this.now() + this.ttlMs });
    while (this.cache.size > this.maxEntries && this.oldest.evict() !== undefined);
  }

  /**
   * Drops every cached entry of the key with this id, so this process honours a revocation or a
   * new policy binding at once (other processes within `ttlMs`).
   */
  forget(keyId: string): void {
    for (const [raw, e] of this.cache) if (e.record?.id === keyId) this.cache.delete(raw);
  }

  get size(): number {
    return this.cache.size;
  }
}
