import t from 'tap';
import { price } from '../../src/checks/price.js';
import { stablecoinDepeg } from '../../src/checks/stablecoin_depeg.js';
import { dexPrice } from '../../src/checks/dex_price.js';
import { rugPullRisk } from '../../src/checks/rug_pull_risk.js';
import type { DexPriceCheck, PriceCheck, RugPullRiskCheck, StablecoinDepegCheck } from '../../src/generated/types.js';
import { startCoinGecko, CG_RATE_LIMIT_BODY, CG_PRO_KEY_ON_PUBLIC_HOST_BODY } from '../emulators/coingecko.js';
import { startDexScreener } from '../emulators/dexscreener.js';
import { closePools, ctx, testConfig } from './helpers.js';

t.teardown(closePools);

const PAIR = '0xd0b53D9277642d899DF5C87A3966A349A798F224';
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
const dex = (extra: Partial<DexPriceCheck> = {}): DexPriceCheck => ({
  type: 'dex_price',
  chain: 'base',
  pair_address: PAIR,
  ...extra,
});
const rug = (extra: Partial<RugPullRiskCheck> = {}): RugPullRiskCheck => ({
  type: 'rug_pull_risk',
  chain: 'base',
  pair_address: PAIR,
  min_liquidity_usd: 50000,
  min_pair_age_minutes: 1440,
  max_fdv_to_liquidity_ratio: 20,
  ...extra,
});

t.test('price and stablecoin_depeg against the CoinGecko emulator', async (t) => {
  const cg = await startCoinGecko();
  t.teardown(() => cg.close());
  const config = testConfig({ PRICE_API_URL: cg.url });
  const now = Math.floor(Date.now() / 1000);
  cg.setPrice('ethereum', 'usd', 3120.5)
    .setPrice('usd-coin', 'usd', 0.9998)
    .setPrice('tether', 'usd', 0.9712)
    .setPrice('dai', 'usd', 0.994)
    .setPrice('stale-coin', 'usd', 1, now - 3600);

  const rows: Array<[string, () => Promise<import('../../src/checks/types.js').CheckOutcome>, string, string | null]> =
    [
      ['price in bounds', () => price.run(priceCheck({ min_price: 3000, max_price: 3500 }), ctx(config)), 'pass', null],
      ['price below min', () => price.run(priceCheck({ min_price: 4000 }), ctx(config)), 'fail', 'price_below_min'],
      ['price above max', () => price.run(priceCheck({ max_price: 3000 }), ctx(config)), 'fail', 'price_above_max'],
      [
        'price of an unknown id',
        () => price.run(priceCheck({ asset_id: 'no-such-coin' }), ctx(config)),
        'fail',
        'unknown_asset',
      ],
      ['price stale', () => price.run(priceCheck({ asset_id: 'stale-coin' }), ctx(config)), 'warn', 'price_stale'],
      [
        'asset id case does not matter',
        () => price.run(priceCheck({ asset_id: 'Ethereum' }), ctx(config)),
        'pass',
        null,
      ],
      ['USDC on peg', () => stablecoinDepeg.run(depeg(), ctx(config)), 'pass', null],
      ['DAI off by 0.6%', () => stablecoinDepeg.run(depeg({ asset_id: 'dai' }), ctx(config)), 'warn', 'depeg_warning'],
      ['USDT at 0.9712', () => stablecoinDepeg.run(depeg({ asset_id: 'tether' }), ctx(config)), 'fail', 'depegged'],
      [
        'unknown stablecoin',
        () => stablecoinDepeg.run(depeg({ asset_id: 'no-such-coin' }), ctx(config)),
        'fail',
        'unknown_asset',
      ],
      [
        'quote the provider lacks',
        () => stablecoinDepeg.run(depeg({ quote: 'eur' }), ctx(config)),
        'fail',
        'unknown_asset',
      ],
    ];
  for (const [name, run, status, reason] of rows) {
    const out = await run();
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    t.equal(out.source, 'price_provider', name);
  }
  const usdt = await stablecoinDepeg.run(depeg({ asset_id: 'tether' }), ctx(config));
  t.equal(usdt.message, 'tether at 0.9712 usd is 2.88% off peg; block limit 2%.');

  t.test('provider failures are errors with the upstream reason', async (t) => {
    const faults: Array<[string, Parameters<typeof cg.faultOn>[1], string, number | undefined]> = [
      [
        '429 with retry-after',
        { status: 429, retryAfter: 119, body: CG_RATE_LIMIT_BODY, times: 1 },
        'upstream_rate_limited',
        119,
      ],
      ['500', { status: 500, times: 1 }, 'upstream_http_error', undefined],
      [
        'key error in a 400 envelope',
        { status: 400, body: CG_PRO_KEY_ON_PUBLIC_HOST_BODY, times: 1 },
        'upstream_error',
        undefined,
      ],
      ['not JSON', { garbage: true, times: 1 }, 'upstream_bad_response', undefined],
      ['connection reset (twice: one retry)', { reset: true, times: 2 }, 'upstream_unreachable', undefined],
      ['body cut short', { truncate: true, times: 1 }, 'upstream_bad_response', undefined],
    ];
    for (const [name, fault, reason, retry] of faults) {
      for (const run of [() => stablecoinDepeg.run(depeg(), ctx(config)), () => price.run(priceCheck(), ctx(config))]) {
        cg.faultOn('/simple/price', { ...fault });
        const out = await run();
        t.equal(out.status, 'error', name);
        t.equal(out.reason, reason, name);
        if (retry !== undefined) t.equal(out.retry_after_s, retry, `${name}: retry_after_s`);
        t.ok(out.message.length > 10, `${name}: message`);
      }
    }
    cg.faultOn('/simple/price', { hang: true, times: 1 });
    const started = Date.now();
    const out = await price.run(priceCheck(), ctx(config, 150));
    t.equal(out.reason, 'upstream_timeout');
    t.ok(Date.now() - started < 1000, 'the check answers at its deadline');
    t.equal(out.ttl_s, 0);
  });
});

t.test('dex_price and rug_pull_risk against the DexScreener emulator', async (t) => {
  const ds = await startDexScreener();
  t.teardown(() => ds.close());
  const config = testConfig({ DEX_API_URL: ds.url });
  const now = Date.now();
  ds.setPair('base', PAIR, {});
  ds.setPair('base', '0xyoung', {
    pairCreatedAt: now - 30 * 60_000,
    liquidityUsd: 80_000,
    fdv: 4_000_000,
    buysH24: 40,
    sellsH24: 12,
  });
  ds.setPair('base', '0xhoneypot', {
    pairCreatedAt: now - 3 * 86_400_000,
    liquidityUsd: 90_000,
    fdv: 500_000,
    buysH24: 64,
    sellsH24: 0,
  });
  ds.setPair('base', '0xnoliq', { liquidityUsd: null });
  ds.setPair('base', '0xold', { pairCreatedAt: null, fdv: 9e12 });

  const rows: Array<[string, () => Promise<import('../../src/checks/types.js').CheckOutcome>, string, string | null]> =
    [
      [
        'WETH/USDC in bounds',
        () =>
          dexPrice.run(
            dex({ min_price_usd: 3000, max_price_usd: 3300, min_liquidity_usd: 1e6, min_volume_h24_usd: 1e6 }),
            ctx(config),
          ),
        'pass',
        null,
      ],
      [
        'address case does not matter',
        () => dexPrice.run(dex({ pair_address: PAIR.toLowerCase() }), ctx(config)),
        'pass',
        null,
      ],
      ['price above max', () => dexPrice.run(dex({ max_price_usd: 3000 }), ctx(config)), 'fail', 'price_above_max'],
      [
        'liquidity below min',
        () => dexPrice.run(dex({ min_liquidity_usd: 2e7 }), ctx(config)),
        'fail',
        'liquidity_below_min',
      ],
      [
        'volume below min',
        () => dexPrice.run(dex({ min_volume_h24_usd: 5e6 }), ctx(config)),
        'fail',
        'volume_below_min',
      ],
      ['unknown pair', () => dexPrice.run(dex({ pair_address: '0xnope' }), ctx(config)), 'fail', 'pair_not_found'],
      [
        'liquidity left out upstream',
        () => dexPrice.run(dex({ pair_address: '0xnoliq', min_liquidity_usd: 1 }), ctx(config)),
        'error',
        'field_missing',
      ],
      ['rug: established pair', () => rugPullRisk.run(rug(), ctx(config)), 'pass', null],
      [
        'rug: young, high FDV ratio',
        () => rugPullRisk.run(rug({ pair_address: '0xyoung' }), ctx(config)),
        'fail',
        'rug_risk_high',
      ],
      [
        'rug: sells blocked',
        () => rugPullRisk.run(rug({ pair_address: '0xhoneypot' }), ctx(config)),
        'fail',
        'sells_blocked',
      ],
      ['rug: no pairCreatedAt', () => rugPullRisk.run(rug({ pair_address: '0xold' }), ctx(config)), 'pass', null],
      [
        'rug: liquidity missing',
        () => rugPullRisk.run(rug({ pair_address: '0xnoliq' }), ctx(config)),
        'error',
        'field_missing',
      ],
      [
        'rug: unknown pair',
        () => rugPullRisk.run(rug({ pair_address: '0xnope' }), ctx(config)),
        'fail',
        'pair_not_found',
      ],
    ];
  for (const [name, run, status, reason] of rows) {
    const out = await run();
    t.equal(out.status, status, `${name}: ${out.message}`);
    t.equal(out.reason, reason, name);
    t.equal(out.source, 'dex_provider', name);
  }
  const young = await rugPullRisk.run(rug({ pair_address: '0xyoung' }), ctx(config));
  t.match(young.observed, {
    risk_score: 60,
    signals: ['pair_too_young', 'fdv_liquidity_ratio_high'],
    pair_age_minutes: 30,
    fdv_to_liquidity_ratio: 50,
  });

  t.test('provider failures', async (t) => {
    for (const [name, fault, reason] of [
      ['429', { status: 429, retryAfter: 5, times: 1 }, 'upstream_rate_limited'],
      ['502', { status: 502, times: 1 }, 'upstream_http_error'],
      ['garbage', { garbage: true, times: 1 }, 'upstream_bad_response'],
      ['reset', { reset: true, times: 2 }, 'upstream_unreachable'],
    ] as const) {
      for (const run of [() => dexPrice.run(dex(), ctx(config)), () => rugPullRisk.run(rug(), ctx(config))]) {
        ds.fault = { ...fault };
        const a = await run();
        t.equal(a.status, 'error', name);
        t.equal(a.reason, reason, name);
      }
    }
    ds.fault = { delayMs: 1000, times: 1 };
    const out = await rugPullRisk.run(rug(), ctx(config, 150));
    t.equal(out.reason, 'upstream_timeout');
  });
});
