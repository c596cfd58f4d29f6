/**
 * The console's only way to the service: same-origin fetches with the owner key as `x-api-key`
 * (docs/console.md §2). The key lives in sessionStorage, is never put in a URL, a cookie or
 * localStorage, and is dropped on sign-out or when the tab closes.
 */

const STORE = 'preflight.ownerKey';

export function savedKey(): string | null {
  try {
    return sessionStorage.getItem(STORE);
  } catch {
    return null;
  }
}

export function saveKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(STORE);
  else sessionStorage.setItem(STORE, key);
}

/** One FastAPI-style validation error (the spec's 422 body). */
export interface FieldError {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/** What an error answer carries: a sentence, or the 422's list. */
export interface ErrorBody {
  detail?: string | FieldError[];
}

export interface Answer<T> {
  status: number;
  /** T when the status is the one asked for; an ErrorBody otherwise. */
  body: T & ErrorBody;
  headers: Headers;
}

/** The monthly quota as the service's RateLimit-* headers last reported it. */
export interface Quota {
  limit: number;
  remaining: number;
  resetsAt: Date;
  seenAt: Date;
}

let lastQuota: Quota | null = null;
const quotaListeners = new Set<(q: Quota) => void>();

export function quota(): Quota | null {
  return lastQuota;
}
export function onQuota(fn: (q: Quota) => void): () => void {
  quotaListeners.add(fn);
  return () => quotaListeners.delete(fn);
}

function readQuota(h: Headers): void {
  const limit = h.get('ratelimit-limit');
  const remaining = h.get('ratelimit-remaining');
  const reset = h.get('ratelimit-reset');
  if (limit === null || remaining === null || reset === null) return;
  const now = new Date();
  lastQuota = {
    limit: Number(limit),
    remaining: Number(remaining),
    resetsAt: new Date(now.getTime() + Number(reset) * 1000),
    seenAt: now,
  };
  for (const fn of quotaListeners) fn(lastQuota);
}

/** Calls the service with the signed-in key; the body is JSON when the answer is. */
export async function call<T = ErrorBody>(
  method: string,
  path: string,
  body?: unknown,
  key = savedKey(),
): Promise<Answer<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key) headers['x-api-key'] = key;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
    referrerPolicy: 'no-referrer',
  });
  readQuota(res.headers);
  const text = await res.text();
  let parsed: unknown = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  return { status: res.status, body: (parsed ?? {}) as T & ErrorBody, headers: res.headers };
}

/** A sentence for an answer that is not what was asked for. */
export function problem(a: Answer<unknown>): string {
  const d = a.body?.detail;
  if (typeof d === 'string') return `${a.status}: ${d}`;
  if (Array.isArray(d)) return `${a.status}: ${d.map((e) => `${e.loc.join('.')}: ${e.msg}`).join('; ')}`;
  return `The service answered ${a.status}.`;
}

export const enc = encodeURIComponent;
