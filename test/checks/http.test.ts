import t from 'tap';
import { http, evaluateHttp } from '../../src/checks/http.js';
import type { HttpCheck } from '../../src/generated/types.js';
import { closePools, ctx, serve, testConfig } from './helpers.js';

t.teardown(closePools);

const check = (url: string, extra: Partial<HttpCheck> = {}): HttpCheck => ({
  type: 'http',
  url,
  method: 'GET',
  expect_status: 200,
  ...extra,
});

t.test('evaluateHttp table', async (t) => {
  const page = (status: number, body: string, truncated = false) => ({
    status,
    body,
    truncated,
    finalUrl: 'https://x.example/',
  });
  const rows: Array<[string, Partial<HttpCheck>, ReturnType<typeof page>, string, string | null]> = [
    ['status matches', {}, page(200, 'ok'), 'pass', null],
    ['status differs', {}, page(503, 'down'), 'fail', 'unexpected_status'],
    ['expected non-200 matches', { expect_status: 404 }, page(404, ''), 'pass', null],
    ['must_contain present', { must_contain: 'healthy' }, page(200, 'all healthy'), 'pass', null],
    ['must_contain absent', { must_contain: 'healthy' }, page(200, 'degraded'), 'fail', 'body_mismatch'],
    ['must_contain is case-sensitive', { must_contain: 'OK' }, page(200, 'ok'), 'fail', 'body_mismatch'],
    ['status is judged before the body', { must_contain: 'x' }, page(500, 'x'), 'fail', 'unexpected_status'],
  ];
  for (const [name, extra, p, status, reason] of rows) {
    const out = evaluateHttp(check('https://x.example/', extra), p, 'x.example');
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    t.equal(out.ttl_s, 30, name);
  }
  const out = evaluateHttp(check('https://x.example/'), page(503, ''), 'x.example');
  t.match(out.message, /503.*200/);
  t.same(out.observed, { status: 503, final_url: 'https://x.example/', body_bytes: 0, truncated: false });
  t.same(out.expected, { status: 200, must_contain: null });
});

t.test('against a loopback target', async (t) => {
  const big = 'a'.repeat(1024 * 1024) + 'NEEDLE';
  const target = await serve((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/ok') return void res.end('service healthy');
    if (u.pathname === '/500') return void res.writeHead(500).end('boom');
    if (u.pathname === '/echo') return void res.end(`token=${req.headers['x-token']} host=${req.headers.host}`);
    if (u.pathname === '/big') return void res.end(big);
    if (u.pathname === '/head') return void res.writeHead(204).end();
    if (u.pathname === '/slow') return void setTimeout(() => res.end('late'), 1500);
    if (u.pathname === '/reset') return void req.socket.destroy();
    const hop = /^\/r(\d+)$/.exec(u.pathname);
    if (hop) return void res.writeHead(302, { location: Number(hop[1]) > 0 ? `/r${Number(hop[1]) - 1}` : '/ok' }).end();
    res.writeHead(404).end();
  });
  t.teardown(() => target.close());
  const config = testConfig();

  t.test('pass with must_contain', async (t) => {
    const out = await http.run(check(`${target.url}/ok`, { must_contain: 'healthy' }), ctx(config));
    t.equal(out.status, 'pass');
    t.equal(out.source, '127.0.0.1');
    t.match(out.observed, { status: 200, truncated: false });
  });
  t.test('a 5xx of the target is a fail, not an error', async (t) => {
    const out = await http.run(check(`${target.url}/500`), ctx(config));
    t.equal(out.status, 'fail');
    t.equal(out.reason, 'unexpected_status');
    t.match(out.observed, { status: 500 });
  });
  t.test('caller headers reach the target; Host cannot be overridden', async (t) => {
    const out = await http.run(
      check(`${target.url}/echo`, {
        must_contain: 'token=abc host=127.0.0.1',
        headers: { 'X-Token': 'abc', Host: 'evil.example' },
      }),
      ctx(config),
    );
    t.equal(out.status, 'pass', out.message);
  });
  t.test('body over 1 MiB is searched up to the cap and marked truncated', async (t) => {
    const out = await http.run(check(`${target.url}/big`, { must_contain: 'NEEDLE' }), ctx(config));
    t.equal(out.status, 'fail');
    t.equal(out.reason, 'body_mismatch');
    t.match(out.observed, { truncated: true, body_bytes: 1024 * 1024 });
    t.match(out.message, /first 1 MiB/);
    const inCap = await http.run(check(`${target.url}/big`, { must_contain: 'aaaa' }), ctx(config));
    t.equal(inCap.status, 'pass');
  });
  t.test('HEAD', async (t) => {
    const out = await http.run(check(`${target.url}/head`, { method: 'HEAD', expect_status: 204 }), ctx(config));
    t.equal(out.status, 'pass');
  });
  t.test('3 redirects are followed, a 4th fails too_many_redirects', async (t) => {
    const three = await http.run(check(`${target.url}/r2`, { must_contain: 'healthy' }), ctx(config));
    t.equal(three.status, 'pass', three.message);
    t.match(three.observed, { final_url: `${target.url}/ok` });
    const four = await http.run(check(`${target.url}/r3`), ctx(config));
    t.equal(four.status, 'fail');
    t.equal(four.reason, 'too_many_redirects');
  });
  t.test('loopback target without ALLOW_PRIVATE_TARGETS fails target_forbidden', async (t) => {
    const out = await http.run(check(`${target.url}/ok`), ctx(testConfig({ ALLOW_PRIVATE_TARGETS: 'false' })));
    t.equal(out.status, 'fail');
    t.equal(out.reason, 'target_forbidden');
    t.equal(out.ttl_s, 30);
  });
  t.test('deadline: a slow target is an upstream_timeout error', async (t) => {
    const started = Date.now();
    const out = await http.run(check(`${target.url}/slow`), ctx(config, 200));
    t.equal(out.status, 'error');
    t.equal(out.reason, 'upstream_timeout');
    t.ok(Date.now() - started < 1000, 'answers at the deadline, not when the target does');
    t.equal(out.ttl_s, 0, 'a timeout is never reused as an answer');
    t.ok((out.retry_after_s ?? 0) > 0);
  });
  t.test('connection reset is an upstream_unreachable error', async (t) => {
    const out = await http.run(check(`${target.url}/reset`), ctx(config));
    t.equal(out.status, 'error');
    t.equal(out.reason, 'upstream_unreachable');
    t.match(out.message, /^GET to 127\.0\.0\.1 failed: /);
  });
  t.test('connection refused is an upstream_unreachable error', async (t) => {
    const closed = await serve(() => {});
    await closed.close();
    const out = await http.run(check(`${closed.url}/`), ctx(config));
    t.equal(out.status, 'error');
    t.equal(out.reason, 'upstream_unreachable');
  });
});
