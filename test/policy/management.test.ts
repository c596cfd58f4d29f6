/**
 * Keys and policy documents over HTTP on the real app (SQLite): owner and agent keys, the 403s an
 * agent key gets, revocation, versions and their hash (recomputed here with ethers' keccak over a
 * canonical form written out by hand), and hostile documents: each a 4xx with a clear body,
 * nothing half-stored.
 */
import t from 'tap';
import { keccak256, toUtf8Bytes } from 'ethers';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { agentKey, call, signup } from './helpers.js';

let app: TestApp;
let owner: string;
const A = '0xAbCdEf0000000000000000000000000000000001';
const B = '0x00000000000000000000000000000000000000b2';

t.before(async () => {
  app = await startTestApp({ BILLING: 'on', FREE_TIER_MONTHLY_LIMIT: '1000', MAX_AGENT_KEYS: '3' });
  owner = await signup(app.url);
});
t.teardown(() => app?.close());

/** JCS for documents of strings, integers, arrays and objects: sorted keys, no spaces. */
function jcs(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${jcs((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

const payments = {
  address_sets: { payees: [A, B] },
  rules: [{ id: 'pay-payees', effect: 'allow', match: { recipients: ['$payees'], selectors: ['0xA9059CBB'] } }],
  limits: [{ id: 'daily', window: 'day', max_usd: 1000 }],
};

t.test('a policy is versioned, stored lower-cased, and its hash is keccak256 of its canonical JSON', async (t) => {
  const put = await call(app.url, 'PUT', '/v1/policies/pay', owner, payments);
  t.equal(put.status, 201, JSON.stringify(put.body));
  t.equal(put.body.version, 1);
  t.equal(put.body.document.address_sets.payees[0], A.toLowerCase(), 'addresses lower-cased');
  t.equal(put.body.document.rules[0].match.selectors[0], '0xa9059cbb', 'selectors lower-cased');
  t.equal(put.body.document.rules[0].match.recipients[0], '$payees', 'set names as given');
  t.notOk('default' in put.body.document, 'no default filled in');
  t.equal(put.body.hash, keccak256(toUtf8Bytes(jcs(put.body.document))), 'anyone can recompute the hash');
  const same = await call(app.url, 'PUT', '/v1/policies/pay', owner, payments);
  t.same(
    [same.status, same.body.version, same.body.hash],
    [200, 1, put.body.hash],
    'the same document: 200, no version',
  );
  const v2 = await call(app.url, 'PUT', '/v1/policies/pay', owner, { ...payments, default: 'block' });
  t.same([v2.status, v2.body.version], [201, 2]);
  t.not(v2.body.hash, put.body.hash);
  const back = await call(app.url, 'PUT', '/v1/policies/pay', owner, payments);
  t.same(
    [back.status, back.body.version, back.body.hash],
    [201, 3, put.body.hash],
    'an older document is a new version',
  );
  t.same((await call(app.url, 'GET', '/v1/policies/pay/versions/2', owner)).body.document.default, 'block');
  t.equal((await call(app.url, 'GET', '/v1/policies/pay', owner)).body.version, 3);
  t.same(
    (await call(app.url, 'GET', '/v1/policies', owner)).body.policies.map((p: any) => [p.name, p.version]),
    [['pay', 3]],
  );
  t.equal((await call(app.url, 'GET', '/v1/policies/pay/versions/9', owner)).status, 404);
  t.equal((await call(app.url, 'GET', '/v1/policies/nope', owner)).status, 404);
  t.same((await call(app.url, 'GET', '/v1/policies/pay/versions/x', owner)).body.detail[0].loc, ['path', 'n']);
  t.same((await call(app.url, 'PUT', '/v1/policies/Bad!', owner, {})).body.detail[0].loc, ['path', 'name']);
});

t.test('agent keys: created, listed, bound, refused management, revoked at once', async (t) => {
  const bot = await agentKey(app.url, owner, 'payments bot', 'pay');
  t.match(bot.key, /^pvk_/);
  const listed = await call(app.url, 'GET', '/v1/keys', owner);
  t.same(
    listed.body.keys.map((k: any) => [k.name, k.role, k.policy]),
    [
      ['owner', 'owner', null],
      ['payments bot', 'agent', 'pay'],
    ],
  );
  t.notOk(JSON.stringify(listed.body).includes('pvk_'), 'no key in the list');
  t.equal((await call(app.url, 'POST', '/v1/keys', owner, { name: 'payments bot' })).status, 409, 'name taken');
  t.equal((await call(app.url, 'POST', '/v1/keys', owner, { name: 'x', policy: 'none-such' })).status, 404);
  t.same((await call(app.url, 'POST', '/v1/keys', owner, { name: 'bad/name' })).body.detail[0].loc, ['body', 'name']);

  // What an agent key may not do: 403 naming the owner key.
  for (const [method, path, body] of [
    ['POST', '/v1/keys', { name: 'mine' }],
    ['GET', '/v1/keys', undefined],
    ['PATCH', `/v1/keys/${bot.id}`, { policy: null }],
    ['DELETE', `/v1/keys/${bot.id}`, undefined],
    ['PUT', '/v1/policies/pay', { default: 'allow' }],
    ['DELETE', '/v1/policies/pay', undefined],
    ['GET', '/v1/policies', undefined],
  ] as const) {
    const r = await call(app.url, method, path, bot.key, body);
    t.equal(r.status, 403, `${method} ${path}`);
    t.match(r.body.detail, /owner key/);
  }
  t.equal((await call(app.url, 'GET', '/v1/policies/pay', owner)).body.version, 3, 'the policy is unchanged');
  // What it may: its own policy, its usage, a dry run under it.
  t.equal((await call(app.url, 'GET', '/v1/policies/pay', bot.key)).status, 200);
  t.equal((await call(app.url, 'GET', '/v1/policies/pay/versions/1', bot.key)).status, 200);
  t.equal((await call(app.url, 'GET', '/v1/policies/pay/usage', bot.key)).status, 200);
  await call(app.url, 'PUT', '/v1/policies/other', owner, {});
  t.equal((await call(app.url, 'GET', '/v1/policies/other', bot.key)).status, 403, 'another policy of the account');

  // Without a key: 401, also with an x402 payment header.
  t.equal((await call(app.url, 'GET', '/v1/keys', null)).status, 401);
  t.equal((await call(app.url, 'GET', '/v1/keys', null, undefined, { 'payment-signature': 'e30=' })).status, 401);

  t.equal((await call(app.url, 'DELETE', '/v1/policies/pay', owner)).status, 409, 'bound to a live key');

  // The agent key draws on the account's one quota.
  const before = Number(
    (await call(app.url, 'POST', '/v1/guard', owner, { action: 'swap' })).headers.get('ratelimit-remaining'),
  );
  const mid = await call(app.url, 'POST', '/v1/guard', bot.key, { action: 'swap' });
  t.equal(Number(mid.headers.get('ratelimit-remaining')), before - 1, "the agent's call counts on the account");

  const del = await call(app.url, 'DELETE', `/v1/keys/${bot.id}`, owner);
  t.equal(del.status, 204);
  t.equal((await call(app.url, 'POST', '/v1/guard', bot.key, { action: 'swap' })).status, 401, 'refused at once here');
  t.equal((await call(app.url, 'DELETE', `/v1/keys/${bot.id}`, owner)).status, 404, 'revoked once');
  const rows = (await call(app.url, 'GET', '/v1/keys', owner)).body.keys;
  t.ok(rows.find((k: any) => k.id === bot.id).revoked_at, 'listed as revoked');
  t.ok(rows[0].last_used_at, "the owner key's last use is shown");
  t.equal((await call(app.url, 'DELETE', '/v1/policies/pay', owner)).status, 204, 'deletable once unbound');
  t.equal((await call(app.url, 'GET', '/v1/policies/pay', owner)).status, 404);
  t.equal(
    (await call(app.url, 'DELETE', `/v1/keys/${rows[0].id}`, owner)).status,
    409,
    'the owner key is not revoked here',
  );
});

t.test('MAX_AGENT_KEYS live agent keys at most', async (t) => {
  const o = await signup(app.url);
  for (const n of ['a', 'b', 'c']) await agentKey(app.url, o, n, null);
  const r = await call(app.url, 'POST', '/v1/keys', o, { name: 'd' });
  t.equal(r.status, 409);
  t.match(r.body.detail, /MAX_AGENT_KEYS/);
});

t.test('hostile documents: each a 4xx with a clear body, nothing stored', async (t) => {
  const o = await signup(app.url);
  const expect422 = async (doc: unknown, loc: Array<string | number>, type?: string) => {
    const r = await call(app.url, 'PUT', '/v1/policies/hostile', o, doc);
    t.equal(r.status, 422, JSON.stringify(loc));
    t.ok(
      r.body.detail.some(
        (d: any) => JSON.stringify(d.loc) === JSON.stringify(loc) && (type === undefined || d.type === type),
      ),
      `${JSON.stringify(loc)} in ${JSON.stringify(r.body.detail).slice(0, 300)}`,
    );
  };
  await expect422(
    {
      address_sets: { a: [A] },
      rules: [
        { id: 'r', effect: 'allow', match: { to: [A] } },
        { id: 'r2', effect: 'allow', match: { to: [A, '$a', '$nope'] } },
      ],
    },
    ['body', 'rules', 1, 'match', 'to', 2],
    'unknown_set',
  );
  await expect422(
    {
      rules: [
        { id: 'r', effect: 'allow' },
        { id: 'r', effect: 'block' },
      ],
    },
    ['body', 'rules', 1, 'id'],
  );
  await expect422({ default: 'maybe' }, ['body', 'default'], 'enum');
  await expect422({ chains: 'base' }, ['body', 'chains'], 'list_type');
  await expect422({ limits: [{ id: 'l', window: 'day', max_usd: -1 }] }, ['body', 'limits', 0, 'max_usd']);
  await expect422({ limits: [{ id: 'l', window: 'day', max_usd: 1e16 }] }, ['body', 'limits', 0, 'max_usd']);
  await expect422({ limits: [{ id: 'l', window: 'day' }] }, ['body', 'limits', 0], 'missing');
  await expect422({ limits: [{ id: 'l', window: { rolling_s: 10 }, max_count: 1 }] }, [
    'body',
    'limits',
    0,
    'window',
    'rolling_s',
  ]);
  await expect422({ rules: [{ id: 'r', effect: 'allow', match: { to: ['0x12'] } }] }, [
    'body',
    'rules',
    0,
    'match',
    'to',
    0,
  ]);
  await expect422({ extra: 1 }, ['body']);
  const many = Array.from({ length: 10_000 }, (_, i) => ({ id: `r${i}`, effect: 'allow', match: { to: [A] } }));
  await expect422({ rules: many }, ['body', 'rules'], 'too_long');
  await expect422(
    { address_sets: { big: Array.from({ length: 1001 }, () => A) } },
    ['body', 'address_sets', 'big'],
    'too_long',
  );
  let deep: unknown = {};
  for (let i = 0; i < 200; i++) deep = { match: deep };
  const deepRes = await call(app.url, 'PUT', '/v1/policies/hostile', o, {
    rules: [{ id: 'r', effect: 'allow', match: deep }],
  });
  t.equal(deepRes.status, 422);
  t.equal(deepRes.body.detail[0].type, 'too_deep');
  const huge = `{"address_sets":{"x":[${Array.from({ length: 60_000 }, () => `"${A}"`).join(',')}]}}`;
  const big = await call(app.url, 'PUT', '/v1/policies/hostile', o, huge);
  t.equal(big.status, 413, 'over 2 MiB');
  t.match(big.body.detail, /2 MiB/);
  t.equal((await call(app.url, 'GET', '/v1/policies/hostile', o)).status, 404, 'nothing was stored');
  t.same((await call(app.url, 'GET', '/v1/policies', o)).body.policies, []);

  // The documented maxima fit: 32 sets of 1,000 addresses, about 1.4 MB.
  const sets: Record<string, string[]> = {};
  for (let s = 0; s < 32; s++)
    sets[`s${s}`] = Array.from(
      { length: 1000 },
      (_, i) => `0x${s.toString(16).padStart(2, '0')}${i.toString(16).padStart(38, '0')}`,
    );
  const max = await call(app.url, 'PUT', '/v1/policies/hostile', o, { address_sets: sets });
  t.equal(max.status, 201);
  t.equal((await call(app.url, 'PUT', '/v1/policies/other', o, JSON.stringify({ address_sets: sets }))).status, 201);
  // Other endpoints keep their 256 KiB cap.
  const guardBig = await call(
    app.url,
    'POST',
    '/v1/guard',
    o,
    JSON.stringify({ action: 'swap', context: { pad: 'x'.repeat(300_000) } }),
  );
  t.equal(guardBig.status, 413);
});

t.test('other methods on a management path answer 405 with the methods it has', async (t) => {
  const r = await call(app.url, 'POST', '/v1/policies/pay', owner, {});
  t.equal(r.status, 405);
  t.same(r.headers.get('allow')?.split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'PUT']);
  const k = await call(app.url, 'PUT', '/v1/keys', owner, {});
  t.equal(k.status, 405);
  t.same(k.headers.get('allow')?.split(', ').sort(), ['GET', 'HEAD', 'POST']);
});
