import t from 'tap';
import { assessAssets, requestedAssets, summariseAssets } from '../../src/agents/stablecoin.js';
import type { Snapshot } from '../../src/agents/price-snapshot.js';

const NOW = 1_750_000_000_000;
const body = { quote: 'usd', warn_deviation_pct: 0.005, block_deviation_pct: 0.02 };
const snap = (prices: Record<string, number | null>): Snapshot => ({
  res: {
    ok: true,
    source: 'price_provider',
    latencyMs: 12,
    data: Object.fromEntries(Object.entries(prices).map(([k, p]) => [k, { price: p, lastUpdatedAt: NOW / 1000 - 90 }])),
  },
  cached: false,
  ageS: 0,
});

t.test('requested assets: defaults, lowercased, deduplicated', async (t) => {
  t.same(requestedAssets({ ...body }), ['usd-coin', 'tether', 'dai', 'ethena-usde', 'paypal-usd']);
  t.same(requestedAssets({ ...body, asset_ids: [] }), ['usd-coin', 'tether', 'dai', 'ethena-usde', 'paypal-usd']);
  t.same(requestedAssets({ ...body, asset_ids: ['DAI', ' dai ', 'tether'] }), ['dai', 'tether']);
});

t.test('per-asset status and the worst asset', async (t) => {
  const table: Array<{
    name: string;
    prices: Record<string, number | null>;
    assets: string[];
    statuses: string[];
    worst: string | null;
    worstStatus: string | null;
  }> = [
    {
      name: 'all pegged: the farthest from peg is named',
      prices: { a: 1.001, b: 0.9995, c: 0.998 },
      assets: ['a', 'b', 'c'],
      statuses: ['pegged', 'pegged', 'pegged'],
      worst: 'c',
      worstStatus: 'pegged',
    },
    {
      name: 'warn at exactly 0.5 %',
      prices: { a: 0.995, b: 1 },
      assets: ['a', 'b'],
      statuses: ['warning', 'pegged'],
      worst: 'a',
      worstStatus: 'warning',
    },
    {
      name: 'depeg outranks unknown, unknown outranks warning',
      prices: { a: 0.99, b: 0.97 },
      assets: ['a', 'b', 'x'],
      statuses: ['warning', 'depegged', 'unknown'],
      worst: 'b',
      worstStatus: 'depegged',
    },
    {
      name: 'unknown outranks a warning',
      prices: { a: 0.99 },
      assets: ['a', 'x'],
      statuses: ['warning', 'unknown'],
      worst: 'x',
      worstStatus: 'unknown',
    },
    {
      name: 'a null price is unknown',
      prices: { a: null },
      assets: ['a'],
      statuses: ['unknown'],
      worst: 'a',
      worstStatus: 'unknown',
    },
  ];
  for (const c of table) {
    const { results, views } = assessAssets(body, c.assets, snap(c.prices), NOW);
    t.same(
      views.map((v) => v.status),
      c.statuses,
      `${c.name}: statuses`,
    );
    t.same(
      results.map((r) => r.name),
      c.assets.map((a) => `stablecoin_depeg[${a}]`),
      `${c.name}: evidence names`,
    );
    const s = summariseAssets(views);
    t.equal(s.worst_asset, c.worst, `${c.name}: worst asset`);
    t.equal(s.worst_status, c.worstStatus, `${c.name}: worst status`);
  }
  const { views } = assessAssets(body, ['a'], snap({ a: 0.97 }), NOW);
  t.same(views[0], {
    asset_id: 'a',
    status: 'depegged',
    price: 0.97,
    deviation_pct: 0.03,
    last_updated_at: new Date(NOW - 90_000).toISOString(),
    age_s: 90,
    reason: 'depegged',
    message: 'a at 0.97 usd is 3% off peg; block limit 2%.',
  });
  t.match(
    summariseAssets(views).message,
    /^Of 1 stablecoins: 0 pegged, 0 warning, 1 depegged, 0 unknown\. Worst: a, depegged \(3% off peg\)\./,
  );
  t.same(summariseAssets([]), {
    worst_asset: null,
    worst_status: null,
    worst_deviation_pct: null,
    counts: { pegged: 0, warning: 0, depegged: 0, unknown: 0 },
    message: 'No asset was analysed.',
  });
});

t.test('a provider failure makes every asset an error, not a price', async (t) => {
  const failed: Snapshot = {
    res: {
      ok: false,
      reason: 'upstream_timeout',
      message: 'price_provider did not answer within 250 ms',
      source: 'price_provider',
      latencyMs: 250,
    },
    cached: false,
    ageS: 0,
  };
  const { results, views } = assessAssets(body, ['a', 'b'], failed, NOW);
  t.same(
    results.map((r) => [r.status, r.reason]),
    [
      ['error', 'upstream_timeout'],
      ['error', 'upstream_timeout'],
    ],
  );
  t.same(
    views.map((v) => [v.status, v.price]),
    [
      ['unknown', null],
      ['unknown', null],
    ],
  );
});
