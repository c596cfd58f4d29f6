/** POST /v1/api-keys/signup through the real app. */
import t from 'tap';
import Database from 'better-sqlite3';
import { post } from '../helpers/app.js';
import { addressBucket, clientAddress } from '../../src/http/routes/signup.js';
import { DECIDE, startBilledApp } from './harness.js';

t.test('a signup issues a working Basic key, shown once, stored hashed', async (t) => {
  const b = await startBilledApp();
  t.teardown(() => b.close());
  const r = await post(`${b.url}/v1/api-keys/signup`, {
    email: 'Dev@Example.com',
    company: 'Acme',
    full_name: 'Dee Dev',
    use_case: 'swap guard',
    website: 'https://acme.test',
    requested_plan: 'DeFi',
  });
  t.equal(r.status, 200);
  t.match(r.body, {
    ok: true,
    message: /Basic plan: 100 calls a month.*DeFi plan is recorded/,
    api_key: /^pvk_[A-Za-z0-9_-]{43}$/,
    docs_url: `${b.url}/openapi.json`,
    base_url: b.url,
  });
  t.equal(r.headers.get('cache-control'), 'no-store');
  const key = r.body.api_key as string;

  const used = await post(`${b.url}/v1/decide`, DECIDE, { authorization: `Bearer ${key}` });
  t.equal(used.status, 200, 'the key works at once');
  t.equal(used.headers.get('ratelimit-limit'), '100');

  const [rec] = await b.store.listApiKeys();
  t.match(rec, {
    email: 'dev@example.com',
    plan: 'Basic',
    requestedPlan: 'DeFi',
    company: 'Acme',
    fullName: 'Dee Dev',
    useCase: 'swap guard',
    website: 'https://acme.test',
    prefix: key.slice(0, 12),
  });

  const db = new Database(b.databaseUrl.slice('sqlite:'.length), { readonly: true });
  const tables = (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>
  ).map((x) => x.name);
  const dump = JSON.stringify(tables.map((name) => db.prepare(`SELECT * FROM "${name}"`).all()));
  db.close();
  t.ok(dump.includes(rec.keyHash));
  t.notOk(dump.includes(key.slice(4)), 'the raw key is in no table');
  t.notOk(JSON.stringify([...b.logs, ...b.app.logs]).includes(key.slice(4)), 'nor in any log line');
});

t.test('one active key per e-mail: a second signup is refused with ok false', async (t) => {
  const b = await startBilledApp({ PUBLIC_BASE_URL: 'https://verify.example.com/' });
  t.teardown(() => b.close());
  const first = await post(`${b.url}/v1/api-keys/signup`, { email: 'same@example.com' });
  t.match(first.body, {
    ok: true,
    docs_url: 'https://verify.example.com/openapi.json',
    base_url: 'https://verify.example.com',
  });
  const again = await post(`${b.url}/v1/api-keys/signup`, { email: 'SAME@Example.COM' });
  t.equal(again.status, 200);
  t.match(again.body, {
    ok: false,
    api_key: null,
    message: /already exists for this e-mail/,
    base_url: 'https://verify.example.com',
  });
  t.equal((await b.store.listApiKeys()).length, 1);

  await b.store.revokeApiKey((await b.store.listApiKeys())[0].id);
  const after = await post(`${b.url}/v1/api-keys/signup`, { email: 'same@example.com' });
  t.match(after.body, { ok: true, api_key: /^pvk_/ }, 'a new key once the old one is revoked');
});

t.test('a bad e-mail or plan is 422 and not counted', async (t) => {
  const b = await startBilledApp({ SIGNUPS_PER_HOUR: '1' });
  t.teardown(() => b.close());
  t.equal((await post(`${b.url}/v1/api-keys/signup`, { email: 'not-an-email' })).status, 422);
  t.equal((await post(`${b.url}/v1/api-keys/signup`, { email: 'ok@example.com', requested_plan: 'Gold' })).status, 422);
  t.equal(
    (await post(`${b.url}/v1/api-keys/signup`, { email: 'ok@example.com' })).status,
    200,
    'the one allowed attempt is still there',
  );
});

t.test('signups are limited per client address and hour, duplicates included', async (t) => {
  const b = await startBilledApp({ SIGNUPS_PER_HOUR: '3' });
  t.teardown(() => b.close());
  const codes = [];
  for (const email of ['s1@example.com', 's1@example.com', 's2@example.com', 's3@example.com'])
    codes.push((await post(`${b.url}/v1/api-keys/signup`, { email })).status);
  t.same(codes, [200, 200, 200, 429]);
  const r = await post(
    `${b.url}/v1/api-keys/signup`,
    { email: 's4@example.com' },
    { 'x-forwarded-for': '198.51.100.7' },
  );
  t.equal(r.status, 429, 'X-Forwarded-For is ignored without TRUST_PROXY');
  t.match(r.body, { detail: /at most 3 an hour/, limit: 3, retry_after_s: Number });
  t.ok(r.body.retry_after_s >= 1 && r.body.retry_after_s <= 3600);
  t.equal(r.headers.get('retry-after'), String(r.body.retry_after_s));
  t.equal((await b.store.listApiKeys()).length, 2);
});

t.test('with TRUST_PROXY the address our proxy appended decides', async (t) => {
  const b = await startBilledApp({ SIGNUPS_PER_HOUR: '1', TRUST_PROXY: 'true' });
  t.teardown(() => b.close());
  const via = (xff: string, email: string) =>
    post(`${b.url}/v1/api-keys/signup`, { email }, { 'x-forwarded-for': xff });
  t.equal((await via('203.0.113.1', 'p1@example.com')).status, 200);
  t.equal((await via('203.0.113.2', 'p2@example.com')).status, 200, 'another client');
  t.equal((await via('1.1.1.1, 203.0.113.1', 'p3@example.com')).status, 429, 'a forged leading entry does not help');
  t.equal((await via('2001:db8:1:2::10', 'p4@example.com')).status, 200);
  t.equal((await via('2001:db8:1:2:ffff::20', 'p5@example.com')).status, 429, 'same IPv6 /64');
});

t.test('client addresses and buckets', async (t) => {
  const req = (xff: string | undefined, remote: string) =>
    ({ headers: xff === undefined ? {} : { 'x-forwarded-for': xff }, socket: { remoteAddress: remote } }) as never;
  t.equal(clientAddress(req('9.9.9.9', '::ffff:127.0.0.1'), false), '127.0.0.1');
  t.equal(clientAddress(req('9.9.9.9, 8.8.8.8', '127.0.0.1'), true), '8.8.8.8');
  t.equal(clientAddress(req(undefined, '127.0.0.1'), true), '127.0.0.1');
  t.equal(addressBucket('192.0.2.5'), '192.0.2.5');
  t.equal(addressBucket('2001:0db8:0000:0001:ffff::1'), '2001:db8:0:1::/64');
  t.equal(addressBucket('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(addressBucket('::1'), '0:0:0:0::/64');
});
