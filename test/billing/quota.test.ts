import t from 'tap';
import {
  nextPeriodStart,
  nextSignupWindowStart,
  planLimit,
  quotaView,
  secondsUntil,
  signupWindow,
  usagePeriod,
} from '../../src/billing/quota.js';
import { loadConfig } from '../../src/config.js';

t.test('periods are UTC calendar months and reset at the next month start', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['2026-11-03T14:22:05.123Z', '2026-11', '2026-12-01T00:00:00.000Z'],
    ['2026-12-31T23:59:59.999Z', '2026-12', '2027-01-01T00:00:00.000Z'],
    ['2027-01-01T00:00:00.000Z', '2027-01', '2027-02-01T00:00:00.000Z'],
    ['2028-02-29T12:00:00.000Z', '2028-02', '2028-03-01T00:00:00.000Z'],
    // 23:30 on Nov 30 in New York is already December in UTC: the UTC month decides.
    ['2026-12-01T04:30:00.000Z', '2026-12', '2027-01-01T00:00:00.000Z'],
  ];
  for (const [now, period, reset] of cases) {
    t.equal(usagePeriod(new Date(now)), period, now);
    t.equal(nextPeriodStart(new Date(now)).toISOString(), reset, now);
  }
});

t.test('signup windows are UTC hours', async (t) => {
  t.equal(signupWindow(new Date('2026-11-03T14:59:59Z')), '2026-11-03T14');
  t.equal(nextSignupWindowStart(new Date('2026-11-03T14:59:59Z')).toISOString(), '2026-11-03T15:00:00.000Z');
  t.equal(nextSignupWindowStart(new Date('2026-12-31T23:10:00Z')).toISOString(), '2027-01-01T00:00:00.000Z');
});

t.test('seconds until a reset round up and never go negative', async (t) => {
  const now = new Date('2026-11-30T23:59:58.200Z');
  t.equal(secondsUntil(nextPeriodStart(now), now), 2);
  t.equal(secondsUntil(new Date('2026-11-30T23:59:58.200Z'), now), 0);
  t.equal(secondsUntil(new Date('2026-11-01T00:00:00Z'), now), 0);
});

t.test('plan limits: Basic is the free tier, the others come from PLAN_LIMITS', async (t) => {
  const def = loadConfig({});
  t.same([planLimit(def, 'Basic'), planLimit(def, 'DeFi'), planLimit(def, 'Execution')], [100, 10000, 100000]);
  const c = loadConfig({ FREE_TIER_MONTHLY_LIMIT: '7', PLAN_LIMITS: 'DeFi=50,Execution=900' });
  t.same([planLimit(c, 'Basic'), planLimit(c, 'DeFi'), planLimit(c, 'Execution')], [7, 50, 900]);
});

t.test('the quota view never shows a negative remainder', async (t) => {
  const now = new Date('2026-11-30T00:00:00Z');
  t.same(quotaView(100, 40, now), {
    limit: 100,
    used: 40,
    remaining: 60,
    resetsAt: new Date('2026-12-01T00:00:00Z'),
    resetSeconds: 86400,
  });
  t.equal(quotaView(5, 9, now).remaining, 0, 'a lowered plan limit below the count');
});

t.test('the period is right on both sides of a month boundary, asked in any order', async (t) => {
  const edge = Date.UTC(2026, 11, 1); // 2026-12-01T00:00:00Z
  const at = (ms: number) => usagePeriod(new Date(ms));
  t.equal(at(edge - 1), '2026-11');
  t.equal(at(edge), '2026-12');
  t.equal(at(edge - 1), '2026-11', 'back again');
  t.equal(at(Date.UTC(2027, 0, 31, 23, 59, 59, 999)), '2027-01');
  t.equal(at(Date.UTC(2026, 1, 28, 12)), '2026-02');
});
