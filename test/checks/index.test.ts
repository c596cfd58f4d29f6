import t from 'tap';
import { checkName, checks, moduleFor, moduleOf, upstreamLabel } from '../../src/checks/index.js';
import { schemas } from '../../src/generated/schemas.js';
import * as validators from '../../src/generated/validators.js';
import type { Check } from '../../src/generated/types.js';

/** Raw request-shaped checks, before validation fills the defaults. */
const _raw = (x: object): Check => x as unknown as Check;

/** The types only the guard plans; the Check schema must not admit them. */
const GUARD_ONLY = [
  'counterparty_screen',
  'delegation_scan',
  'liquidity_depth',
  'rpc_health',
  'signature_scan',
  'transaction_simulation',
];

t.test("the registry holds exactly the schema's check types and the guard-only ones", async (t) => {
  const types = (schemas.Check as unknown as { oneOf: Array<{ $ref: string }> }).oneOf.map(
    (r) =>
      (schemas as unknown as Record<string, { properties: { type: { const: string } } }>)[r.$ref].properties.type.const,
  );
  t.same(Object.keys(checks).sort(), [...types, ...GUARD_ONLY].sort());
  for (const g of GUARD_ONLY) {
    t.notOk(types.includes(g), `the Check schema has no ${g}`);
    t.notOk(
      validators.Check({ type: g, chain: 'base', pair_address: '0x1', rpc_url: 'http://127.0.0.1:1' }),
      `a decide request cannot name ${g}`,
    );
  }
  for (const [type, mod] of Object.entries(checks)) t.equal(mod.type, type, `${type} module says its type`);
  t.equal(moduleFor({ type: 'approval_amount', amount: '1' }).type, 'approval_amount');
});

t.test('checkName', async (t) => {
  const all = [
    { type: 'stablecoin_depeg', asset_id: 'usd-coin' },
    { type: 'stablecoin_depeg', asset_id: 'tether' },
    { type: 'http', url: 'https://a.example/' },
    { type: 'http', url: 'https://b.example/' },
    { type: 'price', asset_id: 'ethereum' },
    { type: 'price', asset_id: 'ethereum', min_price: 1 },
    { type: 'approval_amount', amount: '1' },
  ] as unknown as Check[];
  t.same(
    all.map((c, i) => checkName(c, i, all)),
    [
      'stablecoin_depeg[usd-coin]',
      'stablecoin_depeg[tether]',
      'http[2]',
      'http[3]',
      'price[4]',
      'price[5]',
      'approval_amount',
    ],
  );
});

t.test('every registered module declares the upstream label its calls are counted under', async (t) => {
  const bounded = /^[a-z][a-z_]*$/; // a fixed name, never a URL or a host
  for (const [type, mod] of Object.entries(checks)) {
    const labels: readonly string[] = typeof mod.upstream === 'string' ? [mod.upstream] : mod.upstream;
    t.ok(labels.length > 0, `${type} declares at least one label`);
    for (const l of labels) t.match(l, bounded, `${type}: ${l} is a bounded label`);
  }
  // The label comes from the module, whatever host answered.
  t.equal(upstreamLabel('dex_price', { source: 'dex_provider' }), 'dex_provider');
  t.equal(upstreamLabel('tx', { source: 'mainnet.base.org' }), 'rpc');
  t.equal(upstreamLabel('rpc_health', { source: null }), 'rpc');
  t.equal(upstreamLabel('contract_verified', { source: 'etherscan' }), 'etherscan');
  t.equal(upstreamLabel('contract_verified', { source: null }), 'sourcify');
  t.equal(upstreamLabel('approval_amount', { source: null }), null, 'a check that calls nothing is not counted');
  t.equal(upstreamLabel('no_such_type', { source: 'x' }), 'other');
  t.equal(moduleOf('toString'), undefined, 'only registered types are found');
});
