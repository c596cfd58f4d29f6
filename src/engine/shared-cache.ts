/**
 * The fleet's shared result cache and single flight, in Redis (docs/fleet.md). Every instance of a
 * fleet pointed at one Redis reads the results the others computed, and identical cold checks in
 * flight anywhere make one upstream call: the first instance takes a short lock, the others wait
 * for its result within their own deadline.
 *
 * Redis is an accelerator, never a dependency: every command is bounded by a timeout and fails at
 * once while the connection is down (no offline queue), a failure reads as a miss or as "go
 * ahead", and a timeout or error opens a short pause during which Redis is not asked at all. The
 * in-process cache (cache.ts) stays in front as the first level.
 *
 * A stored value names its format version and its own cache key and is checked field by field on
 * read; a value that does not parse, or that belongs to another key, format or program, is ignored
 * and never served.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { CheckOutcome } from '../checks/types.js';
import type { CacheEntry } from './cache.js';

/** Bumped whenever the stored shape changes: an older or newer program's values are then foreign. */
export const FORMAT = 1;
const PREFIX = `preflight:v${FORMAT}:`;
/** How long Redis is left alone after a command failed or timed out. */
export const PAUSE_MS = 1000;
/** How often a waiter looks for the lock holder's result. */
export const WAIT_POLL_MS = 10;
const STATUSES = new Set(['pass', 'warn', 'fail', 'error']);

export type SharedState = 'ok' | 'degraded';
export type SharedOp = 'get' | 'set' | 'lock' | 'wait';
export type SharedOutcome = 'hit' | 'miss' | 'ok' | 'busy' | 'error' | 'timeout' | 'corrupt';

export interface SharedCacheOptions {
  url: string;
  /** Bound on every Redis command, in milliseconds. */
  timeoutMs: number;
  /** How long a lock holds if its owner never releases it (crash): the owner's hard timeout and a margin. */
  lockMs: number;
  onEvent?: (op: SharedOp, outcome: SharedOutcome) => void;
  onState?: (state: SharedState) => void;
}

export interface SharedCache {
  /** The entry another instance stored, or undefined (missing, unreadable, Redis unavailable). */
  get(key: string): Promise<CacheEntry | undefined>;
  /** Stores an entry for the rest of its TTL; failures are counted, never thrown. */
  set(key: string, entry: CacheEntry): Promise<void>;
  /**
   * Takes the fleet-wide lock for `key`, and reads the stored result in the same round trip (it
   * may have landed since our first look). 'mine': go ahead and call upstream (the lock is ours,
   * or Redis is unavailable); 'theirs': another instance is calling it now; or the stored entry.
   */
  lock(key: string): Promise<'mine' | 'theirs' | CacheEntry>;
  /** Releases our lock, if it is still ours. */
  unlock(key: string): Promise<void>;
  /**
   * Waits until the lock holder stores the result (returned), the lock goes away without a
   * result, or `untilMs` (a performance.now() time) passes: undefined, and the caller goes ahead.
   */
  wait(key: string, untilMs: number): Promise<CacheEntry | undefined>;
  state(): SharedState;
  /** Resolves once connected, or after `ms` (the service then starts degraded and connects later). */
  ready(ms: number): Promise<SharedState>;
  close(): Promise<void>;
}

class TimeoutError extends Error {}

/** The Redis key of a cache key: hashed, so a key of any length or content is one fixed-size name. */
function redisKey(kind: 'r' | 'l', key: string): string {
  return PREFIX + kind + ':' + createHash('sha256').update(key).digest('base64url');
}

/** A stored value read back: the entry, or null when it is not ours to serve. */
export function decodeEntry(raw: string | null, key: string): CacheEntry | null {
  if (raw === null) return null;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const o = v as Record<string, unknown>;
  if (o.f !== FORMAT || o.k !== key) return null;
  if (typeof o.at !== 'number' || !Number.isFinite(o.at) || typeof o.ms !== 'number' || !Number.isFinite(o.ms))
    return null;
  const out = o.o as Record<string, unknown> | null;
  if (typeof out !== 'object' || out === null) return null;
  if (typeof out.status !== 'string' || !STATUSES.has(out.status)) return null;
  if (typeof out.message !== 'string' || (out.reason !== null && typeof out.reason !== 'string')) return null;
  if (typeof out.ttl_s !== 'number' || !Number.isFinite(out.ttl_s) || out.ttl_s <= 0) return null;
  if (out.source !== null && typeof out.source !== 'string') return null;
  return { outcome: out as unknown as CheckOutcome, storedAt: o.at, latencyMs: o.ms };
}

/**
 * The stored form. The decision-only fields (basis, unknown inputs, components) are part of the
 * outcome object and travel with it, so a result read from Redis is judged as the one computed.
 */
export function encodeEntry(key: string, entry: CacheEntry): string {
  return JSON.stringify({ f: FORMAT, k: key, at: entry.storedAt, ms: entry.latencyMs, o: entry.outcome });
}

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

export function createSharedCache(opts: SharedCacheOptions): SharedCache {
  const owner = randomUUID();
  const emit = opts.onEvent ?? (() => undefined);
  const client = new Redis(opts.url, {
    // Fail fast instead of queueing while disconnected; ioredis keeps reconnecting in the background.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: opts.timeoutMs,
    connectTimeout: Math.max(200, opts.timeoutMs * 4),
    retryStrategy: (times) => Math.min(50 * times, 1000),
    enableAutoPipelining: true,
    lazyConnect: false,
  });
  let pausedUntil = 0;
  let current: SharedState = 'degraded';
  const setState = (s: SharedState) => {
    if (s === current) return;
    current = s;
    opts.onState?.(s);
  };
  client.on('ready', () => {
    pausedUntil = 0;
    setState('ok');
  });
  client.on('close', () => setState('degraded'));
  // Connection errors are expected while Redis is away; the state and the counters carry them.
  client.on('error', () => setState('degraded'));

  const usable = () => client.status === 'ready' && performance.now() >= pausedUntil;

  /** One command, bounded, or a TimeoutError / the client's error. */
  async function run<T>(fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeoutError()), opts.timeoutMs);
    });
    try {
      return await Promise.race([fn(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
  function failed(op: SharedOp, err: unknown): void {
    emit(op, err instanceof TimeoutError ? 'timeout' : 'error');
    pausedUntil = performance.now() + PAUSE_MS;
    setState('degraded');
  }

  async function get(key: string): Promise<CacheEntry | undefined> {
    if (!usable()) return undefined;
    let raw: string | null;
    try {
      raw = await run(() => client.get(redisKey('r', key)));
    } catch (err) {
      failed('get', err);
      return undefined;
    }
    if (raw === null) {
      emit('get', 'miss');
      return undefined;
    }
    const entry = decodeEntry(raw, key);
    if (entry === null || Date.now() - entry.storedAt >= entry.outcome.ttl_s * 1000) {
      emit('get', entry === null ? 'corrupt' : 'miss');
      return undefined;
    }
    emit('get', 'hit');
    return entry;
  }

  async function set(key: string, entry: CacheEntry): Promise<void> {
    const leftMs = Math.floor(entry.storedAt + entry.outcome.ttl_s * 1000 - Date.now());
    if (leftMs <= 0 || !usable()) return;
    try {
      await run(() => client.set(redisKey('r', key), encodeEntry(key, entry), 'PX', leftMs));
      emit('set', 'ok');
    } catch (err) {
      failed('set', err);
    }
  }

  async function lock(key: string): Promise<'mine' | 'theirs' | CacheEntry> {
    if (!usable()) return 'mine';
    let replies: [Error | null, unknown][] | null;
    try {
      replies = await run(() =>
        client.multi().get(redisKey('r', key)).set(redisKey('l', key), owner, 'PX', opts.lockMs, 'NX').exec(),
      );
    } catch (err) {
      failed('lock', err);
      return 'mine';
    }
    const stored = decodeEntry((replies?.[0]?.[1] ?? null) as string | null, key);
    const got = replies?.[1]?.[1] === 'OK';
    if (stored !== null && Date.now() - stored.storedAt < stored.outcome.ttl_s * 1000) {
      emit('lock', 'hit');
      if (got) void unlock(key);
      return stored;
    }
    emit('lock', got ? 'ok' : 'busy');
    return got ? 'mine' : 'theirs';
  }

  async function unlock(key: string): Promise<void> {
    if (!usable()) return;
    try {
      await run(() => client.eval(RELEASE, 1, redisKey('l', key), owner));
    } catch (err) {
      failed('lock', err);
    }
  }

  async function wait(key: string, untilMs: number): Promise<CacheEntry | undefined> {
    const lockKey = redisKey('l', key);
    const resultKey = redisKey('r', key);
    while (performance.now() < untilMs) {
      await new Promise((r) => setTimeout(r, Math.min(WAIT_POLL_MS, Math.max(0, untilMs - performance.now()))));
      if (!usable()) return undefined;
      let raw: [Error | null, unknown][] | null;
      try {
        raw = await run(() => client.multi().get(resultKey).exists(lockKey).exec());
      } catch (err) {
        failed('wait', err);
        return undefined;
      }
      const value = (raw?.[0]?.[1] ?? null) as string | null;
      const held = raw?.[1]?.[1] === 1;
      if (value !== null) {
        const entry = decodeEntry(value, key);
        emit('wait', entry === null ? 'corrupt' : 'hit');
        if (entry !== null) return entry;
        return undefined;
      }
      if (!held) {
        emit('wait', 'miss');
        return undefined;
      }
    }
    emit('wait', 'timeout');
    return undefined;
  }

  return {
    get,
    set,
    lock,
    unlock,
    wait,
    state: () => (usable() ? 'ok' : 'degraded'),
    ready(ms) {
      if (client.status === 'ready') return Promise.resolve('ok' as SharedState);
      return new Promise<SharedState>((resolve) => {
        const timer = setTimeout(() => {
          client.off('ready', onReady);
          resolve('degraded');
        }, ms);
        const onReady = () => {
          clearTimeout(timer);
          resolve('ok');
        };
        client.once('ready', onReady);
      });
    },
    async close() {
      client.disconnect();
    },
  };
}
