import t from 'tap';
import { evaluatePrice } from '../../src/checks/price.js';
import { evaluateDepeg } from '../../src/checks/stablecoin_depeg.js';
import type { PriceCheck, StablecoinDepegCheck } from '../../src/generated/types.js';

const NOW = 1_779_092_258_000;
const fresh = (price: number | null, ageS = 30) => ({ price, lastUpdatedAt: NOW / 1000 - ageS });
const priceCheck = (extra: Partial<PriceCheck> = {}): PriceCheck => ({
  type: 'price',
  source: 'price_provider',
  asset_id: 'ethereum',
  quote: 'usd',
  ...extra,
});
const depeg = (extra: Partial<StablecoinDepegCheck> = {}): StablecoinDepegCheck => ({
  type: 'stablecoin_depeg',
  asset_id: 'usd-coin',
  quote: 'usd',
  warn_deviation_pct: 0.005,
  block_deviation_pct: 0.02,
  ...extra,
});

t.test('price table', async (t) => {
  const rows: Array<[string, Partial<PriceCheck>, Parameters<typeof evaluatePrice>[1], string, string | null]> = [
    ['within both bounds', { min_price: 1000, max_price: 5000 }, fresh(3000), 'pass', null],
    ['no bounds, fresh', {}, fresh(3000), 'pass', null],
    ['exactly at min passes', { min_price: 3000 }, fresh(3000), 'pass', null],
    ['below min', { min_price: 3500 }, fresh(3000), 'fail', 'price_below_min'],
    ['above max', { max_price: 2500 }, fresh(3000), 'fail', 'price_above_max'],
    ['unknown asset (absent)', {}, undefined, 'fail', 'unknown_asset'],
    ['known asset without a price', {}, fresh(null), 'fail', 'unknown_asset'],
    ['stale quote (11 min)', {}, fresh(3000, 660), 'warn', 'price_stale'],
    ['10 min exactly is not stale', {}, fresh(3000, 600), 'pass', null],
    ['no timestamp is treated as stale', {}, { price: 3000, lastUpdatedAt: null }, 'warn', 'price_stale'],
    ['a breached bound beats staleness', { max_price: 10 }, fresh(3000, 9999), 'fail', 'price_above_max'],
  ];
  for (const [name, extra, quote, status, reason] of rows) {
    const out = evaluatePrice(priceCheck(extra), quote, NOW);
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    t.equal(out.ttl_s, 30, name);
    t.equal(out.source, 'price_provider', name);
  }
  const out = evaluatePrice(priceCheck({ min_price: 3500 }), fresh(3000, 42), NOW);
  t.same(out.observed, { price: 3000, quote: 'usd', last_updated_at: NOW / 1000 - 42, age_s: 42 });
  t.same(out.expected, { min_price: 3500, max_price: null, max_age_s: 600 });
  t.equal(out.message, 'ethereum/usd at 3000 is below the minimum 3500.');
});

t.test('stablecoin_depeg table', async (t) => {
  const rows: Array<[string, Partial<StablecoinDepegCheck>, number | null, string, string | null]> = [
    ['on peg', {}, 1.0, 'pass', null],
    ['small deviation', {}, 0.9991, 'pass', null],
    ['warn threshold is inclusive (0.995)', {}, 0.995, 'warn', 'depeg_warning'],
    ['above peg counts too (1.006)', {}, 1.006, 'warn', 'depeg_warning'],
    ['block threshold is inclusive (0.98)', {}, 0.98, 'fail', 'depegged'],
    ['block threshold above peg (1.02)', {}, 1.02, 'fail', 'depegged'],
    ['just under block (0.9801)', {}, 0.9801, 'warn', 'depeg_warning'],
    ['deep depeg', {}, 0.87, 'fail', 'depegged'],
    ['custom thresholds', { warn_deviation_pct: 0.001, block_deviation_pct: 0.003 }, 0.998, 'warn', 'depeg_warning'],
    ['unknown asset', {}, null, 'fail', 'unknown_asset'],
  ];
  for (const [name, extra, price, status, reason] of rows) {
    const out = evaluateDepeg(depeg(extra), price === null ? undefined : fresh(price));
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    t.equal(out.ttl_s, 30, name);
  }
  const out = evaluateDepeg(depeg(), fresh(0.9712));
  t.equal(out.message, 'usd-coin at 0.9712 usd is 2.88% off peg; block limit 2%.');
  t.same(out.observed, { price: 0.9712, deviation_pct: 0.0288, quote: 'usd', last_updated_at: NOW / 1000 - 30 });
  t.same(out.expected, { peg: 1, warn_deviation_pct: 0.005, block_deviation_pct: 0.02 });
});
