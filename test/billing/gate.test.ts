/** The billing gate through the real app: keys, quotas and their headers, refunds, BILLING=off. */
import t from 'tap';
import { hashApiKey } from '../../src/billing/keys.js';
import { nextPeriodStart, usagePeriod } from '../../src/billing/quota.js';
import { post } from '../helpers/app.js';
import { DECIDE, signup, startBilledApp } from './harness.js';

const b = await startBilledApp(
  { FREE_TIER_MONTHLY_LIMIT: '3', PLAN_LIMITS: 'DeFi=10,Execution=100000' },
  {
    handlers: {
      yield: () => {
        throw new Error('handler crashed');
      },
    },
  },
);
t.teardown(() => b.close());
const period = () => usagePeriod(new Date());
const keyId = async (key: string) => (await b.store.findApiKeyByHash(hashApiKey(key)))!.id;

t.test('no key, no payment configured: 401 saying how to get a key', async (t) => {
  const r = await post(`${b.url}/v1/decide`, DECIDE);
  t.equal(r.status, 401);
  t.match(r.body.detail, /POST \/v1\/api-keys\/signup/);
  t.match(r.body.detail, /x-api-key/);
  t.equal(r.body.signup, '/v1/api-keys/signup');
  t.match(r.headers.get('www-authenticate'), /^Bearer/);
  t.equal(r.headers.get('ratelimit-limit'), null);
});

t.test('malformed, unknown and revoked keys: 401', async (t) => {
  const key = await signup(b.url, 'revoked@example.com');
  t.equal((await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key })).status, 200);
  await b.store.revokeApiKey(await keyId(key));
  for (const k of ['nonsense', 'pvk_' + 'A'.repeat(43), key]) {
    const r = await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': k });
    t.equal(r.status, 401, k.slice(0, 8));
    t.match(r.body, { detail: /Unknown or revoked API key/ });
    t.match(r.headers.get('www-authenticate'), /invalid_token/);
  }
});

t.test('a key counts calls across endpoints, with RateLimit headers, then 429', async (t) => {
  const key = await signup(b.url, 'counted@example.com');
  const resetS = Math.ceil((nextPeriodStart(new Date()).getTime() - Date.now()) / 1000);
  const calls = [
    await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key }),
    await post(`${b.url}/v1/agents/decision-verification/decide`, DECIDE, { authorization: `Bearer ${key}` }),
    await post(`${b.url}/v1/agents/defi-risk/verify`, DECIDE, { 'x-api-key': key }),
  ];
  t.same(
    calls.map((c) => c.status),
    [200, 200, 200],
  );
  t.same(
    calls.map((c) => c.headers.get('ratelimit-remaining')),
    ['2', '1', '0'],
  );
  t.same(
    calls.map((c) => c.headers.get('ratelimit-limit')),
    ['3', '3', '3'],
  );
  t.ok(
    Math.abs(Number(calls[0].headers.get('ratelimit-reset')) - resetS) <= 2,
    'RateLimit-Reset counts seconds to the next UTC month',
  );
  t.equal(calls[0].body.verdict, 'proceed', 'served for real');

  const over = await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key });
  t.equal(over.status, 429);
  t.match(over.body, { detail: /monthly quota .* used up/, limit: 3, used: 3, plan: 'Basic', pay_per_call: null });
  t.equal(over.body.resets_at, nextPeriodStart(new Date()).toISOString().replace('.000Z', 'Z'));
  t.equal(over.headers.get('ratelimit-remaining'), '0');
  t.equal(over.headers.get('ratelimit-limit'), '3');
  t.ok(Number(over.headers.get('retry-after')) > 0);
  t.equal(await b.store.getUsage(await keyId(key), period()), 3, 'a refused call is not counted');
});

t.test('an invalid body is 422 first and costs nothing', async (t) => {
  const key = await signup(b.url, 'invalid-body@example.com');
  const r = await post(`${b.url}/v1/decide`, { checks: 'nope' }, { 'x-api-key': key });
  t.equal(r.status, 422);
  t.ok(Array.isArray(r.body.detail));
  t.equal((await post(`${b.url}/v1/decide`, { checks: 'nope' })).status, 422, 'also without any key');
  t.equal(await b.store.getUsage(await keyId(key), period()), 0);
});

t.test('50 concurrent requests on a key with 5 calls left: exactly 5 served', async (t) => {
  const key = await signup(b.url, 'burst@example.com');
  const id = await keyId(key);
  await b.store.setPlan(id, 'DeFi');
  for (let i = 0; i < 5; i++) await b.store.consumeQuota(id, period(), 10);
  const all = await Promise.all(
    Array.from({ length: 50 }, () => post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key })),
  );
  t.equal(all.filter((r) => r.status === 200).length, 5);
  t.equal(all.filter((r) => r.status === 429).length, 45);
  t.equal(await b.store.getUsage(id, period()), 10);
});

t.test('a plan change raises the limit on the next request', async (t) => {
  const key = await signup(b.url, 'upgraded@example.com');
  await b.store.setPlan(await keyId(key), 'DeFi');
  const r = await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key });
  t.equal(r.headers.get('ratelimit-limit'), '10');
  t.equal(r.headers.get('ratelimit-remaining'), '9');
});

t.test('a call that ends in a 5xx is given back', async (t) => {
  const key = await signup(b.url, 'refund@example.com');
  const id = await keyId(key);
  const r = await post(
    `${b.url}/v1/agents/yield-routing/recommend`,
    { options: [{ name: 'a', apy: 5 }] },
    { 'x-api-key': key },
  );
  t.equal(r.status, 500);
  t.equal(r.headers.get('ratelimit-remaining'), '2', 'counted while it ran');
  for (let i = 0; i < 50 && (await b.store.getUsage(id, period())) !== 0; i++)
    await new Promise((res) => setTimeout(res, 10));
  t.equal(await b.store.getUsage(id, period()), 0, 'refunded after the response');
});

t.test('x402-only endpoints ignore keys; without x402 configured they point at the keyed path', async (t) => {
  const key = await signup(b.url, 'x402-only@example.com');
  const r = await post(`${b.url}/v1/x402/decide`, DECIDE, { 'x-api-key': key });
  t.equal(r.status, 401);
  t.match(
    r.body.detail,
    /\/v1\/x402\/decide is paid per call with x402, which this server has not configured.*\/v1\/decide with an API key/,
  );
  t.equal(await b.store.getUsage(await keyId(key), period()), 0);
});

t.test('the access log says who paid, and no log line carries a raw key', async (t) => {
  const key = await signup(b.url, 'logged@example.com');
  await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key });
  await new Promise((res) => setTimeout(res, 20));
  const line = b.app.logs.filter((l) => l.msg === 'request' && l.route === '/v1/decide').at(-1);
  t.match(line, { status: 200, auth: 'key' });
  const all = JSON.stringify([...b.app.logs, ...b.logs]);
  t.ok(all.includes('pvk_'), 'prefixes are logged, so the search is real');
  t.notOk(all.includes(key.slice(4)), 'the secret part never is');
});

t.test('BILLING=off: every endpoint serves without a key and without counting', async (t) => {
  const off = await startBilledApp({ BILLING: 'off' });
  t.teardown(() => off.close());
  for (const path of ['/v1/decide', '/v1/x402/decide', '/v1/acp/decide']) {
    const r = await post(`${off.url}${path}`, DECIDE);
    t.equal(r.status, 200, path);
    t.equal(r.headers.get('ratelimit-limit'), null);
  }
  await new Promise((res) => setTimeout(res, 20));
  t.match(off.app.logs.filter((l) => l.msg === 'request').at(-1), { auth: 'free' });
});

t.test('a store that stops answering gives 503 with Retry-After, never a free call', async (t) => {
  const down = await startBilledApp();
  t.teardown(() => down.close());
  const key = await signup(down.url, 'outage@example.com');
  await down.store.close();
  const r = await post(`${down.url}/v1/decide`, DECIDE, { 'x-api-key': key });
  t.same([r.status, r.headers.get('retry-after')], [503, '5']);
  t.match(r.body.detail, /billing store is unavailable.*nothing was counted/);
  const s = await post(`${down.url}/v1/api-keys/signup`, { email: 'later@example.com' });
  t.same([s.status, s.body.detail], [503, 'The key store is unavailable right now; no key was issued. Retry shortly.']);
});
