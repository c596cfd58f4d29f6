/**
 * The Origin check (docs/browser.md §1): which browser origins ALLOWED_ORIGINS admits, and POST /mcp
 * refusing a foreign one with 403 before it reads a key or a body, serving its own and loopback
 * ones, and serving a request without Origin as before. Billing on: a refused call costs nothing.
 */
import t from 'tap';
import { request } from 'undici';
import { loadConfig } from '../../src/config.js';
import { originAdmitted } from '../../src/http/origin.js';
import { post, startTestApp, type TestApp } from '../helpers/app.js';

t.test('ALLOWED_ORIGINS and its default', async (t) => {
  const plain = loadConfig({});
  t.same(plain.allowedOrigins, [], 'no PUBLIC_BASE_URL: no named origin');
  t.equal(plain.allowLoopbackOrigins, true, 'loopback by default');
  for (const o of [
    'http://localhost:8080',
    'http://localhost',
    'https://app.localhost:3000',
    'http://127.0.0.1:8080',
    'http://127.3.4.5',
    'http://[::1]:8080',
  ])
    t.ok(originAdmitted(plain, o), `${o} is loopback`);
  for (const o of [
    'http://evil.example.com',
    'http://evil.example.com:8080',
    'http://localhost.evil.example.com',
    'http://10.0.0.1:8080',
    'http://192.168.1.10',
    'http://[fe80::1]',
    'null',
    'file://',
    'chrome-extension://abcdef',
    '',
    'not a url',
  ])
    t.notOk(originAdmitted(plain, o), `${JSON.stringify(o)} is refused`);

  const published = loadConfig({ PUBLIC_BASE_URL: 'https://preflight.example.org/api/' });
  t.same(published.allowedOrigins, ['https://preflight.example.org'], "PUBLIC_BASE_URL's origin, without its path");
  t.ok(originAdmitted(published, 'https://preflight.example.org'));
  t.ok(originAdmitted(published, 'https://PREFLIGHT.example.org'), 'host names compare without case');
  t.notOk(originAdmitted(published, 'http://preflight.example.org'), 'another scheme is another origin');
  t.notOk(originAdmitted(published, 'https://preflight.example.org:8443'), 'another port is another origin');

  const listed = loadConfig({ ALLOWED_ORIGINS: 'https://ops.example.com, http://10.1.2.3:8080' });
  t.same(listed.allowedOrigins, ['https://ops.example.com', 'http://10.1.2.3:8080']);
  t.equal(listed.allowLoopbackOrigins, false, 'a list replaces the default: loopback only when named');
  t.notOk(originAdmitted(listed, 'http://localhost:8080'));
  t.ok(originAdmitted(listed, 'http://10.1.2.3:8080'));
  t.ok(originAdmitted(loadConfig({ ALLOWED_ORIGINS: 'loopback' }), 'http://127.0.0.1:1234'));

  for (const bad of ['ops.example.com', 'https://ops.example.com/console', 'ftp://ops.example.com', '*'])
    t.throws(
      () => loadConfig({ ALLOWED_ORIGINS: bad }),
      /^ALLOWED_ORIGINS must list origins/,
      `${bad} is refused at start`,
    );
});

t.test('POST /mcp', async (t) => {
  const app: TestApp = await startTestApp({ BILLING: 'on', FREE_TIER_MONTHLY_LIMIT: '3' });
  t.teardown(() => app.close());
  const signup = await post(`${app.url}/v1/api-keys/signup`, { email: 'origin@example.com' });
  const key = signup.body.api_key as string;
  const port = new URL(app.url).port;
  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'origin-test', version: '1' } },
  });
  const mcp = (headers: Record<string, string>, body = initialize) =>
    request(`${app.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'x-api-key': key,
        ...headers,
      },
      body,
    }).then(async (r) => ({ status: r.statusCode, headers: r.headers, text: await r.body.text() }));

  // What the DNS-rebinding attack sends: a page on a name that resolves to this host.
  const rebound = await mcp({ host: `evil.example.com:${port}`, origin: `http://evil.example.com:${port}` });
  t.equal(rebound.status, 403);
  t.match(rebound.headers['content-type'], /^application\/json/);
  t.same(Object.keys(JSON.parse(rebound.text)), ['detail'], 'the error body of every other refusal');
  t.match(JSON.parse(rebound.text).detail, /ALLOWED_ORIGINS/);

  const toolCall = JSON.stringify({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'preflight_guard', arguments: { action: 'swap', chain: 'base', amount_usd: 10 } },
  });
  t.equal((await mcp({ origin: 'https://evil.example.com' }, toolCall)).status, 403, 'a tool call too');
  const foreignBadBody = await mcp({ origin: 'https://evil.example.com' }, '{not json');
  t.equal(foreignBadBody.status, 403, 'refused before the body is read: 403, not 422');
  const foreignNoKey = await mcp({ origin: 'https://evil.example.com', 'x-api-key': 'pvk_unknown' });
  t.equal(foreignNoKey.status, 403, 'refused before the key is looked at: 403, not 401');

  const own = await mcp({ origin: `http://127.0.0.1:${port}` });
  t.equal(own.status, 200, 'its own loopback origin is served');
  t.match(JSON.parse(own.text), { result: { serverInfo: { name: String } } });
  t.equal((await mcp({ origin: `http://localhost:${port}` })).status, 200, 'localhost too');
  const none = await mcp({});
  t.equal(none.status, 200, 'no Origin (not a browser): served as before');

  const guard = { action: 'swap', chain: 'base', amount_usd: 10 };
  const keyed = await post(`${app.url}/v1/guard`, guard, { 'x-api-key': key });
  t.equal(keyed.status, 200);
  t.equal(
    keyed.headers.get('ratelimit-remaining'),
    '2',
    'the refused tool call used none of the quota: this is the first call counted',
  );

  const refusals = app.logs.filter((l) => l.msg === 'request' && l.route === '/mcp' && l.status === 403);
  t.equal(refusals.length, 4, 'each refusal is in the access log under its route');
});

t.test('the management endpoints', async (t) => {
  const app: TestApp = await startTestApp({ BILLING: 'on', FREE_TIER_MONTHLY_LIMIT: '10' });
  t.teardown(() => app.close());
  const owner = (await post(`${app.url}/v1/api-keys/signup`, { email: 'owner@example.com' })).body.api_key as string;
  const port = new URL(app.url).port;
  const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    request(`${app.url}${path}`, {
      method: method as 'GET',
      headers: {
        'x-api-key': owner,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.statusCode, headers: r.headers, body: await r.body.json().catch(() => null) }));
  const evil = { origin: 'https://evil.example.com' };

  const refused = await call('GET', '/v1/keys', evil);
  t.equal(refused.status, 403, 'GET /v1/keys from a foreign page');
  t.match(refused.body, { detail: /ALLOWED_ORIGINS/ });
  t.equal((await call('PUT', '/v1/policies/fleet', evil, { default: 'allow' })).status, 403, 'a PUT too');
  t.equal((await call('GET', '/v1/policies/fleet', {})).status, 404, 'and it wrote nothing');
  t.equal((await call('POST', '/v1/keys', evil, { name: 'sneaky' })).status, 403);
  const own = await call('GET', '/v1/keys', { origin: `http://127.0.0.1:${port}` });
  t.equal(own.status, 200, 'its own origin is served');
  t.same(
    (own.body as { keys: Array<{ role: string }> }).keys.map((k) => k.role),
    ['owner'],
    'no key was made by the refused POST',
  );
  t.equal((await call('GET', '/v1/keys', {})).status, 200, 'no Origin: served');

  // Their answers carry the account's quota, read and not counted (docs/console.md §3).
  await post(`${app.url}/v1/guard`, { action: 'swap', chain: 'base', amount_usd: 10 }, { 'x-api-key': owner });
  for (let i = 0; i < 2; i++) {
    const a = await call('GET', '/v1/policies', {});
    t.equal(a.headers['ratelimit-limit'], '10');
    t.equal(a.headers['ratelimit-remaining'], '9', 'one counted call; management answers count none');
    t.ok(Number(a.headers['ratelimit-reset']) > 0);
  }
});
