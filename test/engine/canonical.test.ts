/** The cache key: identical checks as the runner sees them (validated, defaults applied) share one key. */
import t from 'tap';
import { CheckKeys, canonical, checkKey } from '../../src/engine/canonical.js';
import { validator } from '../../src/http/validation.js';

const check = (c: object): unknown => {
  const body = { goal: 'g', checks: [structuredClone(c)] };
  if (!validator('DecideRequest')(body)) throw new Error('invalid test check');
  return body.checks[0];
};

t.test('defaults applied, nulls dropped, key order ignored', async (t) => {
  const bare = canonical(check({ type: 'http', url: 'https://a.example/' }));
  t.equal(
    bare,
    canonical(
      check({ url: 'https://a.example/', must_contain: null, expect_status: 200, method: 'GET', type: 'http' }),
    ),
  );
  t.equal(bare, '{"expect_status":200,"method":"GET","type":"http","url":"https://a.example/"}');
});

t.test('headers change the key; their order does not', async (t) => {
  const bare = canonical(check({ type: 'http', url: 'https://a.example/' }));
  t.not(canonical(check({ type: 'http', url: 'https://a.example/', headers: { authorization: 'a' } })), bare);
  t.equal(
    canonical(check({ type: 'http', url: 'https://a.example/', headers: { b: '1', a: '2' } })),
    canonical(check({ type: 'http', url: 'https://a.example/', headers: { a: '2', b: '1' } })),
  );
});

t.test('values that change the answer change the key', async (t) => {
  t.not(
    canonical(check({ type: 'rpc', rpc_url: 'https://r/', method_name: 'eth_getBalance', params: ['0x1', null] })),
    canonical(check({ type: 'rpc', rpc_url: 'https://r/', method_name: 'eth_getBalance', params: ['0x1'] })),
    'nulls inside params count',
  );
  t.not(
    canonical(check({ type: 'price', asset_id: 'ethereum', min_price: 1 })),
    canonical(check({ type: 'price', asset_id: 'ethereum', min_price: 2 })),
  );
  t.equal(
    canonical(check({ type: 'stablecoin_depeg', asset_id: 'usd-coin' })),
    '{"asset_id":"usd-coin","block_deviation_pct":0.02,"quote":"usd","type":"stablecoin_depeg","warn_deviation_pct":0.005}',
  );
});

t.test('the remembered key is the computed key, whatever was asked before', async (t) => {
  const cases = [
    check({ type: 'http', url: 'https://a.example/' }),
    check({ url: 'https://a.example/', must_contain: null, expect_status: 200, method: 'GET', type: 'http' }),
    check({ type: 'rpc', rpc_url: 'https://r/', method_name: 'eth_getBalance', params: ['0x1', null] }),
    check({ type: 'rpc', rpc_url: 'https://r/', method_name: 'eth_getBalance', params: ['0x1'] }),
    check({ type: 'price', asset_id: 'ethereum', min_price: 1 }),
    check({ type: 'price', asset_id: 'ethereum', min_price: 2 }),
    check({ type: 'http', url: 'https://a.example/', must_contain: 'x'.repeat(2500) }),
  ] as Array<{ type: string }>;
  for (let round = 0; round < 2; round++) {
    for (const c of cases) t.equal(checkKey(c), `${c.type}:${canonical(c)}`, JSON.stringify(c).slice(0, 60));
  }
  // Past its bound the memo forgets the oldest texts and still answers right.
  for (let i = 0; i < 5000; i++) {
    const other: { type: string; asset_id: string; min_price: number } = {
      type: 'price',
      asset_id: `a${i}`,
      min_price: i,
    };
    checkKey(other);
  }
  for (const c of cases) t.equal(checkKey(c), `${c.type}:${canonical(c)}`);
});

t.test('CheckKeys: the keys checkKey gives, remembered by the body text they came from', async (t) => {
  const memo = new CheckKeys();
  const checkKeysOf = memo.of.bind(memo);
  const a = [
    { type: 'price', asset_id: 'ethereum', min_price: 1000 },
    { type: 'rpc_health', chain: 'base' },
  ];
  const b = [{ type: 'price', asset_id: 'bitcoin', min_price: 1000 }];
  const textA = JSON.stringify({ goal: 'g', checks: a });
  const textB = JSON.stringify({ goal: 'g', checks: b });
  const expect = (checks: Array<{ type: string }>) => checks.map((c) => `${c.type}:${canonical(c)}`);
  for (let round = 0; round < 2; round++) {
    t.same(checkKeysOf(textA, a), expect(a), `round ${round}: the first body`);
    t.same(checkKeysOf(textB, b), expect(b), `round ${round}: another body`);
  }
  t.equal(checkKeysOf(textA, a), checkKeysOf(textA, a), 'the same text: the same keys, remembered');
  t.same(checkKeysOf(undefined, a), expect(a), 'no text: keyed as usual');
  const long = `${textA}${' '.repeat(5000)}`;
  t.same(checkKeysOf(long, b), expect(b), 'a long body: keyed as usual');
  // A text remembered with another number of checks is not trusted.
  t.same(checkKeysOf(textA, b), expect(b), 'a list that does not match what was remembered is keyed afresh');
  t.same(checkKeysOf(textA, a), expect(a), 'and the text then answers for its own list again');
  // Past its bound the memo forgets the oldest texts and still answers right.
  for (let i = 0; i < 1000; i++) checkKeysOf(`{"n":${i}}`, [{ type: 'price', asset_id: `a${i}` } as { type: string }]);
  t.same(checkKeysOf(textB, b), expect(b), 'after the memo turned over');
  // Each memo is its own: another way of planning the same text is not answered from this one.
  const other = new CheckKeys();
  t.same(other.of(textA, b), expect(b), 'a second memo keeps its own keys for the same text');
  t.same(checkKeysOf(textA, a), expect(a), 'and the first keeps its');
});
