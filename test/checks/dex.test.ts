import t from 'tap';
import { evaluateDexPrice } from '../../src/checks/dex_price.js';
import type { DexPairView } from '../../src/checks/dex-pair.js';
import { evaluateRug } from '../../src/checks/rug_pull_risk.js';
import { normalisePair } from '../../src/upstreams/dex.js';
import type { DexPriceCheck, RugPullRiskCheck } from '../../src/generated/types.js';
import { fixture } from './helpers.js';

const NOW = Date.UTC(2024, 2, 20);
const DAY = 86_400_000;
// The real babyDOJO/DOJO pair as the client normalises it: $0.004531, $879,284 liquidity, 14 buys / 768 sells.
const real = normalisePair(
  JSON.parse(fixture('latest_dex_tokens_injective_2024.real.json')).pairs[0],
  'injective',
  'inj17ufy5gqw33t0prwhkwa6ensv0jpj3xfvylgx8j',
);
const pair = (over: Partial<DexPairView> = {}): DexPairView => ({ ...real, ...over });
const dex = (extra: Partial<DexPriceCheck> = {}): DexPriceCheck => ({
  type: 'dex_price',
  chain: 'injective',
  pair_address: real.pairAddress,
  ...extra,
});
const rug = (extra: Partial<RugPullRiskCheck> = {}): RugPullRiskCheck => ({
  type: 'rug_pull_risk',
  chain: 'injective',
  pair_address: real.pairAddress,
  min_liquidity_usd: 50000,
  min_pair_age_minutes: 1440,
  max_fdv_to_liquidity_ratio: 20,
  ...extra,
});

t.test('the fixture normalises to numbers', async (t) => {
  t.match(real, {
    priceUsd: 0.004531,
    liquidityUsd: 879284.45,
    volumeH24: 250142.62,
    buysH24: 14,
    sellsH24: 768,
    fdv: null,
    pairCreatedAt: 1710685033000,
    baseSymbol: 'babyDOJO',
  });
});

t.test('dex_price table', async (t) => {
  const rows: Array<[string, Partial<DexPriceCheck>, DexPairView | null, string, string | null]> = [
    ['no bounds', {}, pair(), 'pass', null],
    [
      'all bounds met',
      { min_price_usd: 0.004, max_price_usd: 0.005, min_liquidity_usd: 500000, min_volume_h24_usd: 100000 },
      pair(),
      'pass',
      null,
    ],
    ['pair not found', {}, null, 'fail', 'pair_not_found'],
    ['price below min', { min_price_usd: 0.01 }, pair(), 'fail', 'price_below_min'],
    ['price above max', { max_price_usd: 0.001 }, pair(), 'fail', 'price_above_max'],
    ['liquidity below min', { min_liquidity_usd: 1_000_000 }, pair(), 'fail', 'liquidity_below_min'],
    ['volume below min', { min_volume_h24_usd: 300_000 }, pair(), 'fail', 'volume_below_min'],
    [
      'bounded field missing upstream',
      { min_liquidity_usd: 1 },
      pair({ liquidityUsd: null }),
      'error',
      'field_missing',
    ],
    [
      'unbounded field missing is fine',
      { min_price_usd: 0.001 },
      pair({ liquidityUsd: null, volumeH24: null }),
      'pass',
      null,
    ],
    ['null bound means no bound', { min_price_usd: null }, pair({ priceUsd: null }), 'pass', null],
  ];
  for (const [name, extra, p, status, reason] of rows) {
    const out = evaluateDexPrice(dex(extra), p);
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    if (status !== 'error') t.equal(out.ttl_s, 30, name);
  }
  const two = evaluateDexPrice(dex({ min_price_usd: 0.01, min_liquidity_usd: 1_000_000 }), pair());
  t.equal(two.reason, 'price_below_min', 'first breached bound names the reason');
  t.match(two.observed, {
    violations: ['price_below_min', 'liquidity_below_min'],
    price_usd: 0.004531,
    liquidity_usd: 879284.45,
  });
  t.equal(
    two.message,
    'babyDOJO/DOJO: price_usd $0.004531 is below the minimum $0.01; liquidity_usd $879,284 is below the minimum $1,000,000.',
  );
  const miss = evaluateDexPrice(dex({ min_volume_h24_usd: 5 }), pair({ volumeH24: null }));
  t.match(miss.observed, { missing: ['volume_h24_usd'] });
});

t.test('rug_pull_risk table', async (t) => {
  const old = pair({ pairCreatedAt: NOW - 400 * DAY, fdv: 100_000_000, buysH24: 300, sellsH24: 280 });
  const young = (over: Partial<DexPairView> = {}) =>
    pair({ pairCreatedAt: NOW - 2 * DAY, fdv: 1_000_000, liquidityUsd: 200_000, buysH24: 120, sellsH24: 90, ...over });
  const rows: Array<[string, Partial<RugPullRiskCheck>, DexPairView | null, string, string | null, string[]]> = [
    ['old deep pool: FDV ratio ignored past 30 days', {}, old, 'pass', null, []],
    ['young healthy pool', {}, young(), 'pass', null, []],
    ['not found', {}, null, 'fail', 'pair_not_found', []],
    [
      'liquidity below min fails alone',
      {},
      young({ liquidityUsd: 10_000, fdv: null }),
      'fail',
      'liquidity_below_min',
      ['liquidity_below_min'],
    ],
    ['sells blocked fails alone', {}, young({ buysH24: 20, sellsH24: 0 }), 'fail', 'sells_blocked', ['sells_blocked']],
    ['19 buys and no sells is not enough', {}, young({ buysH24: 19, sellsH24: 0 }), 'pass', null, []],
    ['too young warns', {}, young({ pairCreatedAt: NOW - 60 * 60_000 }), 'warn', 'pair_too_young', ['pair_too_young']],
    [
      'FDV/liquidity high on a young pair warns',
      {},
      young({ fdv: 5_000_000 }),
      'warn',
      'fdv_liquidity_ratio_high',
      ['fdv_liquidity_ratio_high'],
    ],
    [
      'two warns fail rug_risk_high',
      {},
      young({ pairCreatedAt: NOW - 60 * 60_000, fdv: 5_000_000 }),
      'fail',
      'rug_risk_high',
      ['pair_too_young', 'fdv_liquidity_ratio_high'],
    ],
    ['buys below min warns', { min_buys_h24: 200 }, young(), 'warn', 'buys_below_min', ['buys_below_min']],
    [
      'sells below min + buys below min fail',
      { min_buys_h24: 200, min_sells_h24: 100 },
      young(),
      'fail',
      'rug_risk_high',
      ['buys_below_min', 'sells_below_min'],
    ],
    [
      'missing pairCreatedAt skips age and FDV signals',
      {},
      young({ pairCreatedAt: null, fdv: 1e12 }),
      'pass',
      null,
      [],
    ],
    ['missing fdv skips the ratio', {}, young({ fdv: null }), 'pass', null, []],
    [
      'a hard fail keeps the warns in signals',
      {},
      young({ liquidityUsd: 1000, pairCreatedAt: NOW - 60_000 }),
      'fail',
      'liquidity_below_min',
      ['liquidity_below_min', 'pair_too_young', 'fdv_liquidity_ratio_high'],
    ],
  ];
  for (const [name, extra, p, status, reason, signals] of rows) {
    const out = evaluateRug(rug(extra), p, NOW);
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    t.equal(out.ttl_s, 60, name);
    if (p) t.same((out.observed as { signals: string[] }).signals, signals, `${name}: signals`);
  }
  const missingLiq = evaluateRug(rug(), young({ liquidityUsd: null }), NOW);
  t.equal(missingLiq.status, 'error');
  t.equal(missingLiq.reason, 'field_missing');

  const skipped = evaluateRug(rug(), young({ pairCreatedAt: null }), NOW);
  t.match(skipped.observed, {
    pair_age_minutes: null,
    skipped_signals: ['pair_too_young', 'fdv_liquidity_ratio_high'],
    risk_score: 0,
  });

  const high = evaluateRug(rug(), young({ pairCreatedAt: NOW - 60 * 60_000, fdv: 5_000_000 }), NOW);
  t.match(high.observed, { risk_score: 60, pair_age_minutes: 60, fdv_to_liquidity_ratio: 25 });
  t.equal(
    high.message,
    'babyDOJO/DOJO risk 60/100 from 2 signals: the pair is 60 min old (minimum 1440); FDV is 25x the liquidity (maximum 20x).',
  );
  const worst = evaluateRug(
    rug({ min_buys_h24: 500 }),
    young({ liquidityUsd: 1000, buysH24: 40, sellsH24: 0, pairCreatedAt: NOW - 60_000 }),
    NOW,
  );
  t.equal((worst.observed as { risk_score: number }).risk_score, 100, 'score is capped at 100');
});
