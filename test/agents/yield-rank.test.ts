import t from 'tap';
import { YieldRoutingRequest as validateRequest } from '../../src/generated/validators.js';
import type { YieldRoutingRequest } from '../../src/generated/types.js';
import { routeYield, score, summarise, type PegFinding } from '../../src/agents/yield-rank.js';

const pegged = (asset: string): PegFinding => ({
  status: 'pegged',
  reason: null,
  message: `${asset} at 1.0001 usd is 0.01% off peg.`,
  unverified: false,
});
const PEGS: Record<string, PegFinding> = {
  'usd-coin': pegged('usd-coin'),
  dai: pegged('dai'),
  'broken-usd': {
    status: 'depegged',
    reason: 'depegged',
    message: 'broken-usd at 0.91 usd is 9% off peg; block limit 2%.',
    unverified: false,
  },
  'soft-usd': {
    status: 'warning',
    reason: 'depeg_warning',
    message: 'soft-usd at 0.993 usd is 0.7% off peg; warn limit 0.5%.',
    unverified: false,
  },
  'typo-usd': {
    status: 'unknown',
    reason: 'unknown_asset',
    message: 'The price provider has no usd price for typo-usd.',
    unverified: false,
  },
  'dark-usd': {
    status: 'unknown',
    reason: 'upstream_timeout',
    message: 'price_provider did not answer within 250 ms.',
    unverified: true,
  },
};

function req(body: Record<string, unknown>): YieldRoutingRequest {
  const copy = structuredClone(body);
  if (!validateRequest(copy)) throw new Error(`invalid body: ${JSON.stringify((validateRequest as any).errors)}`);
  return copy as unknown as YieldRoutingRequest;
}

t.test('score is apy * (1 - risk_score / 100)', async (t) => {
  const table: Array<[number, number, number]> = [
    [10, 50, 5],
    [8, 0, 8],
    [12, 100, 0],
    [5.5, 20, 4.4],
    [12.3, 33.3, 8.2041],
    [-2, 50, -1],
  ];
  for (const [apy, risk, want] of table) t.equal(score(apy, risk), want, `apy ${apy}, risk ${risk}`);
});

t.test('exclusions: thin pool with the best APY, risk above the limit, depegged stablecoin', async (t) => {
  const routed = routeYield(
    req({
      options: [
        { name: 'thin-vault', apy: 40, risk_score: 10, liquidity_usd: 20_000 },
        { name: 'risky-vault', apy: 25, risk_score: 85, liquidity_usd: 5_000_000 },
        { name: 'depeg-vault', apy: 20, risk_score: 10, liquidity_usd: 5_000_000, stablecoin_asset_id: 'broken-usd' },
        { name: 'steady-vault', apy: 6, risk_score: 20, liquidity_usd: 5_000_000 },
        { name: 'dai-vault', apy: 5, risk_score: 10, liquidity_usd: 1_000_000, stablecoin_asset_id: 'dai' },
      ],
    }),
    PEGS,
  );
  const reasons = Object.fromEntries(routed.excluded.map((e) => [e.name, e.reasons.map((r) => r.code)]));
  t.same(reasons, {
    'thin-vault': ['liquidity_below_min'],
    'risky-vault': ['risk_above_max'],
    'depeg-vault': ['stablecoin_depegged'],
  });
  const msgs = Object.fromEntries(routed.excluded.map((e) => [e.name, e.reasons[0].message]));
  t.equal(msgs['thin-vault'], 'Liquidity $20,000 is below the minimum $50,000.');
  t.equal(msgs['risky-vault'], 'Risk score 85 is above the maximum 70.');
  t.match(msgs['depeg-vault'], /9% off peg/);
  t.same(
    routed.ranked.map((r) => [r.rank, r.name, r.score]),
    [
      [1, 'steady-vault', 4.8],
      [2, 'dai-vault', 4.5],
    ],
  );
  t.equal(routed.recommended?.name, 'steady-vault');
  t.equal(routed.excluded.find((e) => e.name === 'depeg-vault')?.stablecoin_status, 'depegged');
});

t.test('every failing rule is listed, in rule order', async (t) => {
  const routed = routeYield(
    req({
      options: [{ name: 'all-bad', apy: 50, risk_score: 90, liquidity_usd: 10, stablecoin_asset_id: 'broken-usd' }],
    }),
    PEGS,
  );
  t.same(
    routed.excluded[0].reasons.map((r) => r.code),
    ['liquidity_below_min', 'risk_above_max', 'stablecoin_depegged'],
  );
  t.equal(routed.recommended, null);
  t.match(
    summarise(routed, 1),
    /^No option qualifies: all 1 excluded \(liquidity_below_min, risk_above_max, stablecoin_depegged\)\.$/,
  );
});

t.test(
  'unknown liquidity, unknown and unverified stablecoins are excluded; a peg warning is only flagged',
  async (t) => {
    const routed = routeYield(
      req({
        options: [
          { name: 'no-liq', apy: 9, risk_score: 10 },
          { name: 'typo', apy: 9, risk_score: 10, liquidity_usd: 1e6, stablecoin_asset_id: 'typo-usd' },
          { name: 'dark', apy: 9, risk_score: 10, liquidity_usd: 1e6, stablecoin_asset_id: 'dark-usd' },
          { name: 'soft', apy: 9, risk_score: 10, liquidity_usd: 1e6, stablecoin_asset_id: 'soft-usd' },
        ],
      }),
      PEGS,
    );
    t.same(
      routed.excluded.map((e) => [e.name, e.reasons.map((r) => r.code)]),
      [
        ['no-liq', ['liquidity_unknown']],
        ['typo', ['stablecoin_unknown']],
        ['dark', ['stablecoin_unverified']],
      ],
    );
    t.same(
      routed.ranked.map((r) => [r.name, r.stablecoin_status]),
      [['soft', 'warning']],
    );
    const noMin = routeYield(
      req({ min_liquidity_usd: 0, options: [{ name: 'no-liq', apy: 9, risk_score: 10 }] }),
      PEGS,
    );
    t.equal(noMin.recommended?.name, 'no-liq', 'with no minimum, unknown liquidity is fine');
  },
);

t.test('ties: prefer_chain first, then the order given', async (t) => {
  const options = [
    { name: 'base-a', chain: 'base', apy: 10, risk_score: 50, liquidity_usd: 1e6 },
    { name: 'arb-a', chain: 'arbitrum', apy: 5, risk_score: 0, liquidity_usd: 1e6 },
    { name: 'arb-b', chain: 'arbitrum', apy: 6.25, risk_score: 20, liquidity_usd: 1e6 },
    { name: 'eth-low', chain: 'ethereum', apy: 4, risk_score: 0, liquidity_usd: 1e6 },
  ];
  const pref = routeYield(req({ options, prefer_chain: 'arbitrum' }), PEGS);
  t.same(
    pref.ranked.map((r) => [r.name, r.score, r.preferred_chain]),
    [
      ['arb-a', 5, true],
      ['arb-b', 5, true],
      ['base-a', 5, false],
      ['eth-low', 4, false],
    ],
  );
  t.match(
    summarise(pref, 4),
    /^Recommended arb-a on arbitrum: 5% APY at risk 0 scores 5, preferred chain breaking a tie; 4 of 4 option\(s\) qualify, 0 excluded\.$/,
  );
  const none = routeYield(req({ options }), PEGS);
  t.same(
    none.ranked.map((r) => r.name),
    ['base-a', 'arb-a', 'arb-b', 'eth-low'],
    'without prefer_chain the given order breaks ties',
  );
  const base = routeYield(req({ options, prefer_chain: 'base' }), PEGS);
  t.equal(base.recommended?.name, 'base-a');
  t.equal(base.ranked[0].rank, 1);
  const higher = routeYield(
    req({
      options: [...options, { name: 'eth-best', chain: 'ethereum', apy: 7, risk_score: 0, liquidity_usd: 1e6 }],
      prefer_chain: 'arbitrum',
    }),
    PEGS,
  );
  t.equal(higher.recommended?.name, 'eth-best', 'prefer_chain only breaks ties, it does not beat a higher score');
});

t.test('null stablecoin means usd-coin', async (t) => {
  const routed = routeYield(
    req({ options: [{ name: 'x', apy: 3, liquidity_usd: 1e6, stablecoin_asset_id: null }] }),
    PEGS,
  );
  t.equal(routed.recommended?.stablecoin_asset_id, 'usd-coin');
  t.equal(routed.recommended?.score, 1.5, 'default risk_score 50 applies');
});
