/** The result cache: TTL per entry, a size bound, and a sweep that frees keys nobody reads again. */
import t from 'tap';
import { ResultCache } from '../../src/engine/cache.js';
import type { CheckOutcome } from '../../src/checks/types.js';

const outcome = (ttl_s: number): CheckOutcome => ({ status: 'pass', reason: null, message: 'ok', source: null, ttl_s });

t.test('entries expire by their own TTL, errors-free outcomes with ttl 0 are not kept', async (t) => {
  let now = 0;
  const c = new ResultCache(10, () => now);
  c.set('a', { outcome: outcome(30), storedAt: 0, latencyMs: 1 });
  c.set('b', { outcome: outcome(300), storedAt: 0, latencyMs: 1 });
  c.set('z', { outcome: outcome(0), storedAt: 0, latencyMs: 1 });
  t.equal(c.size, 2);
  now = 29_999;
  t.ok(c.get('a'));
  now = 30_000;
  t.notOk(c.get('a'), 'expired at its TTL');
  t.ok(c.get('b'));
});

t.test('the sweep drops expired entries nobody reads', async (t) => {
  let now = 0;
  const c = new ResultCache(100_000, () => now);
  for (let i = 0; i < 1000; i++) c.set(`cold-${i}`, { outcome: outcome(30), storedAt: 0, latencyMs: 1 });
  c.set('long', { outcome: outcome(3600), storedAt: 0, latencyMs: 1 });
  now = 31_000;
  t.equal(c.sweep(), 1000);
  t.equal(c.size, 1);
  t.ok(c.get('long'));
});

t.test('the size bound evicts the oldest entry', async (t) => {
  const c = new ResultCache(2, () => 0);
  for (const k of ['a', 'b', 'c']) c.set(k, { outcome: outcome(30), storedAt: 0, latencyMs: 1 });
  t.notOk(c.get('a'));
  t.ok(c.get('b'));
  t.ok(c.get('c'));
});
