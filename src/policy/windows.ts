/**
 * Limit windows (docs/policies.md §3): UTC calendar hours, days, weeks (from Monday) and months,
 * or the last n seconds; and, for a window that is full now, when the action would fit.
 */
import type { CounterBucket, LimitWindow } from '../store/types.js';
import type { PolicyLimit } from './document.js';

export type Window = PolicyLimit['window'];

/** What counters are kept under with the limit's id: a changed window starts afresh. */
export function windowKey(w: Window): string {
  return typeof w === 'string' ? w : `rolling:${w.rolling_s}`;
}

/** The window around `now` (unix ms): a calendar one's start and end, or a rolling one's last n seconds up to now. */
export function windowBounds(w: Window, now: number): { start: number; end: number } {
  if (typeof w !== 'string') return { start: now - w.rolling_s * 1000, end: now };
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  switch (w) {
    case 'hour': {
      const start = Date.UTC(y, m, day, d.getUTCHours());
      return { start, end: start + 3_600_000 };
    }
    case 'day': {
      const start = Date.UTC(y, m, day);
      return { start, end: start + 86_400_000 };
    }
    case 'week': {
      // getUTCDay: 0 is Sunday; a week starts on Monday.
      const start = Date.UTC(y, m, day - ((d.getUTCDay() + 6) % 7));
      return { start, end: start + 7 * 86_400_000 };
    }
    case 'month':
      return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
  }
}

/** A rolling window is counted in this many buckets; a reservation counts until its bucket has aged out. */
export const ROLLING_BUCKETS = 100;

/**
 * The limits as the store counts them at `now`: a calendar window is one bucket (its start); a
 * rolling window of n seconds is counted in buckets of n/100 seconds, and a bucket counts while
 * any of it lies in the last n seconds, so a reservation counts for n to n + n/100 seconds: never
 * less than its window, at most 1 % more.
 */
export function limitWindows(limits: readonly PolicyLimit[], now: number): LimitWindow[] {
  return limits.map((l) => {
    const w = l.window;
    const bounds = windowBounds(w, now);
    const step =
      typeof w === 'string' ? bounds.end - bounds.start : Math.max(1000, (w.rolling_s * 1000) / ROLLING_BUCKETS);
    const bucket = typeof w === 'string' ? bounds.start : Math.floor(now / step) * step;
    const from = typeof w === 'string' ? bounds.start : Math.floor((now - w.rolling_s * 1000) / step) * step;
    return {
      id: l.id,
      windowKey: windowKey(w),
      bucket,
      from,
      step,
      maxUsd: l.max_usd ?? null,
      maxCount: l.max_count ?? null,
    };
  });
}

/** Whether the action alone is more than the limit allows in any window. */
export function exceedsAlone(l: PolicyLimit, usd: number): boolean {
  return (l.max_usd !== undefined && usd > l.max_usd) || (l.max_count !== undefined && l.max_count < 1);
}

/**
 * Seconds until `usd` more (and one more count) would fit in a full window, as far as what is
 * counted now tells: a calendar window's end; for a rolling window, when enough of the oldest
 * buckets (oldest first) have aged out. At least 1.
 */
export function secondsUntilFits(
  l: PolicyLimit,
  lw: Pick<LimitWindow, 'step'>,
  buckets: readonly CounterBucket[],
  usd: number,
  now: number,
): number {
  const w = l.window;
  if (typeof w === 'string') return Math.max(1, Math.ceil((windowBounds(w, now).end - now) / 1000));
  const span = w.rolling_s * 1000;
  let used = buckets.reduce((s, b) => s + b.usd, 0);
  let count = buckets.reduce((s, b) => s + b.n, 0);
  const fits = () =>
    (l.max_usd === undefined || used + usd <= l.max_usd + 1e-9) &&
    (l.max_count === undefined || count + 1 <= l.max_count);
  for (const b of buckets) {
    used -= b.usd;
    count -= b.n;
    // A bucket counts while it is at or after the window's oldest bucket: until now - span passes its end.
    if (fits()) return Math.max(1, Math.ceil((b.bucket + lw.step + span - now) / 1000));
  }
  return Math.max(1, Math.ceil(span / 1000));
}
