import t from 'tap';
import { checkName, checks, moduleFor } from '../../src/checks/index.js';
import { schemas } from '../../src/generated/schemas.js';
import type { Check } from '../../src/generated/types.js';

/** Raw request-shaped checks, before validation fills the defaults. */
const _raw = (x: object): Check => x as unknown as Check;

t.test("the registry holds exactly the schema's check types", async (t) => {
  const types = (schemas.Check as unknown as { oneOf: Array<{ $ref: string }> }).oneOf.map(
    (r) =>
      (schemas as unknown as Record<string, { properties: { type: { const: string } } }>)[r.$ref].properties.type.const,
  );
  t.same(Object.keys(checks).sort(), [...types].sort());
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
