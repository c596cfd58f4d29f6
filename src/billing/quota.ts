/**
 * Monthly quotas and signup windows as small pure functions of the clock. Periods are UTC calendar
 * months (`2026-11`), reset at 00:00 UTC on the 1st; signup windows are UTC hours (`2026-11-03T14`).
 */
import type { ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import type { Plan } from '../store/types.js';

let period = { from: 0, until: -1, text: '' };

/** The quota period containing `now`, e.g. `2026-11`; kept until the month turns, as every paid call asks. */
export function usagePeriod(now: Date): string {
  const t = now.getTime();
  if (t >= period.from && t < period.until) return period.text;
  const from = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  period = { from, until: nextPeriodStart(now).getTime(), text: now.toISOString().slice(0, 7) };
  return period.text;
}

/** The start of the next UTC calendar month: when the quota resets. */
export function nextPeriodStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

/** The signup window containing `now`, e.g. `2026-11-03T14`. */
export function signupWindow(now: Date): string {
  return now.toISOString().slice(0, 13);
}

export function nextSignupWindowStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), now.getUTCHours() + 1));
}

/** Whole seconds from `now` until `then`, rounded up, at least 1 while `then` is ahead. */
export function secondsUntil(then: Date, now: Date): number {
  return Math.max(0, Math.ceil((then.getTime() - now.getTime()) / 1000));
}

/** Basic is FREE_TIER_MONTHLY_LIMIT; DeFi and Execution come from PLAN_LIMITS. */
export function planLimit(config: Pick<Config, 'freeTierMonthlyLimit' | 'planLimits'>, plan: Plan): number {
  return plan === 'Basic' ? config.freeTierMonthlyLimit : config.planLimits[plan];
}

export interface QuotaView {
  limit: number;
  used: number;
  remaining: number;
  resetsAt: Date;
  resetSeconds: number;
}

export function quotaView(limit: number, used: number, now: Date): QuotaView {
  const resetsAt = nextPeriodStart(now);
  return { limit, used, remaining: Math.max(0, limit - used), resetsAt, resetSeconds: secondsUntil(resetsAt, now) };
}

/** The RateLimit-* headers every keyed answer carries (IETF draft, delta-seconds reset). */
export function setQuotaHeaders(res: ServerResponse, q: QuotaView): void {
  res.setHeader('RateLimit-Limit', String(q.limit));
  res.setHeader('RateLimit-Remaining', String(q.remaining));
  res.setHeader('RateLimit-Reset', String(q.resetSeconds));
}
