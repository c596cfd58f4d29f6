import t from 'tap';
import { safeFetch, type SafeFetchOptions } from '../../src/net/safe-fetch.js';
import { staticResolver } from '../../src/net/resolver.js';
import { startStatusPage, type StatusPageEmulator } from '../emulators/statuspage.js';
import { startEmulator } from '../emulators/core.js';

// Loopback targets need the operator's ALLOW_PRIVATE_TARGETS; everything else is the normal path.
const open: SafeFetchOptions = { allowPrivate: true, timeoutMs: 2000 };

let site: StatusPageEmulator;
t.before(async () => {
  site = await startStatusPage();
});
t.teardown(() => site.close());
t.beforeEach(() => {
  site.fault = null;
  site.resetStats();
});

t.test('redirects between allowed targets are followed, up to three', async (t) => {
  site
    .setRedirect('/r1', '/r2', 301)
    .setRedirect('/r2', `${site.url}/r3`, 307)
    .setRedirect('/r3', '/ok', 308)
    .setPage('/ok', 'landed');
  const r = await safeFetch(`${site.url}/r1`, open);
  t.equal(r.ok && r.data.body, 'landed');
  t.equal(r.ok && r.data.redirects, 3);
  t.equal(r.ok && r.data.finalUrl, `${site.url}/ok`);

  site.setRedirect('/a1', '/a2').setRedirect('/a2', '/a3').setRedirect('/a3', '/a4').setRedirect('/a4', '/ok');
  const four = await safeFetch(`${site.url}/a1`, open);
  t.equal(!four.ok && four.reason, 'too_many_redirects');
  t.equal(site.stats.byPath['/ok'], 1, 'the fifth hop was never requested');

  const none = await safeFetch(`${site.url}/r1`, { ...open, maxRedirects: 0 });
  t.equal(!none.ok && none.reason, 'too_many_redirects');

  site.setPage('/no-location', '', { status: 302 });
  const bare = await safeFetch(`${site.url}/no-location`, open);
  t.equal(bare.ok && bare.data.status, 302, 'a redirect without Location is the answer itself');
});

t.test('303 turns a POST into a GET without its body', async (t) => {
  site.setRedirect('/post', '/ok', 303).setPage('/ok', 'done');
  const r = await safeFetch(`${site.url}/post`, {
    ...open,
    method: 'POST',
    body: '{"a":1}',
    headers: { 'content-type': 'application/json' },
  });
  t.equal(r.ok && r.data.body, 'done');
  t.same(
    site.received.map((x) => [x.method, x.path, x.body]),
    [
      ['POST', '/post', '{"a":1}'],
      ['GET', '/ok', ''],
    ],
  );
});

t.test('caller headers cannot set Host, hop-by-hop or framing headers', async (t) => {
  site.setPage('/h', 'ok');
  const r = await safeFetch(`${site.url}/h`, {
    ...open,
    headers: {
      Host: 'evil.example',
      Connection: 'close, x-custom',
      'Keep-Alive': 'timeout=999',
      'Transfer-Encoding': 'chunked',
      TE: 'trailers',
      Trailer: 'x-t',
      Upgrade: 'websocket',
      'Proxy-Authorization': 'Basic eA==',
      'Proxy-Connection': 'keep-alive',
      'Content-Length': '999',
      Expect: '100-continue',
      'X-Custom': 'kept',
      'X-Split': 'a\r\nX-Injected: 1',
      'Bad Name': 'x',
      Authorization: 'Bearer t0k',
    },
  });
  t.equal(r.ok && r.data.status, 200);
  const h = site.received[0].headers;
  t.equal(h.host, new URL(site.url).host, 'Host is the URL host');
  t.equal(h['x-custom'], 'kept');
  t.equal(h.authorization, 'Bearer t0k');
  t.equal(h.connection, 'keep-alive', "the pool's own connection header");
  for (const gone of [
    'keep-alive',
    'transfer-encoding',
    'te',
    'trailer',
    'upgrade',
    'proxy-authorization',
    'proxy-connection',
    'content-length',
    'expect',
    'x-split',
    'x-injected',
  ]) {
    t.equal(h[gone], undefined, `${gone} dropped`);
  }
});

t.test('credentials stay with their origin across redirects', async (t) => {
  const other = await startStatusPage();
  t.teardown(() => other.close());
  other.setPage('/landing', 'x');
  site.setRedirect('/away', `${other.url}/landing`);
  const r = await safeFetch(`${site.url.replace('http://', 'http://user:pa%20ss@')}/away`, {
    ...open,
    headers: { Cookie: 'sid=1', 'X-Keep': '1' },
  });
  t.equal(r.ok && r.data.status, 200);
  t.equal(r.ok && r.data.finalUrl, `${other.url}/landing`);
  const own = await safeFetch(`${site.url.replace('http://', 'http://user:secret@')}/landing-here`, open);
  t.equal(own.ok && own.data.finalUrl, `${site.url}/landing-here`, 'no credentials in finalUrl');
  const odd = await safeFetch(`${site.url.replace('http://', 'http://us%zzer:x@')}/landing-here`, open);
  t.equal(odd.ok && odd.data.status, 404, 'a malformed escape in userinfo is sent as written, not thrown');
  t.equal(
    site.received[0].headers.authorization,
    `Basic ${Buffer.from('user:pa ss').toString('base64')}`,
    'URL userinfo becomes Basic auth',
  );
  t.equal(site.received[0].headers.cookie, 'sid=1');
  t.equal(other.received[0].headers.authorization, undefined);
  t.equal(other.received[0].headers.cookie, undefined);
  t.equal(other.received[0].headers['x-keep'], '1');
});

t.test('the body is read up to 1 MiB and flagged as truncated beyond it', async (t) => {
  const mib = 1024 * 1024;
  site.setPage('/big', 'a'.repeat(mib + 4096) + 'NEEDLE');
  site.setPage('/exact', 'b'.repeat(mib));
  const big = await safeFetch(`${site.url}/big`, open);
  t.equal(big.ok && big.data.truncated, true);
  t.equal(big.ok && big.data.body.length, mib);
  t.notMatch(big.ok && big.data.body, /NEEDLE/);
  const exact = await safeFetch(`${site.url}/exact`, open);
  t.equal(exact.ok && exact.data.truncated, false);
  t.equal(exact.ok && exact.data.body.length, mib);
});

t.test('HEAD answers status and headers', async (t) => {
  site.setPage('/head', 'body not sent');
  const r = await safeFetch(`${site.url}/head`, { ...open, method: 'HEAD' });
  t.equal(r.ok && r.data.status, 200);
  t.equal(r.ok && r.data.body, '');
  t.equal(site.received[0].method, 'HEAD');
});

t.test('transport failures come back as reasons', async (t) => {
  site.setPage('/p', '{"ok":true}');

  site.fault = { reset: true, times: 1 };
  const once = await safeFetch(`${site.url}/p`, open);
  t.equal(once.ok && once.data.body, '{"ok":true}', 'one reset is retried');
  t.equal(site.stats.requests, 2);

  site.resetStats();
  site.fault = { reset: true };
  const always = await safeFetch(`${site.url}/p`, open);
  t.equal(!always.ok && always.reason, 'upstream_unreachable');
  t.equal(site.stats.requests, 2, 'exactly one retry');

  site.fault = { hang: true };
  let started = Date.now();
  const hung = await safeFetch(`${site.url}/p`, { ...open, timeoutMs: 200 });
  t.equal(!hung.ok && hung.reason, 'upstream_timeout');
  t.ok(Date.now() - started < 1500, 'answered at the time limit');

  const ctl = new AbortController();
  setTimeout(() => ctl.abort(), 100);
  started = Date.now();
  const aborted = await safeFetch(`${site.url}/p`, { allowPrivate: true, signal: ctl.signal });
  t.equal(!aborted.ok && aborted.reason, 'upstream_timeout', "the caller's signal ends the request");
  t.ok(Date.now() - started < 1500);

  site.fault = { dripMs: 100 };
  const drip = await safeFetch(`${site.url}/p`, { ...open, timeoutMs: 300 });
  t.equal(!drip.ok && drip.reason, 'upstream_timeout', 'a dripping body cannot outlast the time limit');

  site.fault = { truncate: true };
  const cut = await safeFetch(`${site.url}/p`, open);
  t.equal(!cut.ok && cut.reason, 'upstream_bad_response');

  site.fault = { status: 503, retryAfter: 7 };
  const unavailable = await safeFetch(`${site.url}/p`, open);
  t.equal(unavailable.ok && unavailable.data.status, 503, 'HTTP statuses are data for the caller');
  t.equal(unavailable.ok && unavailable.data.headers['retry-after'], '7');
});

t.test('unreachable and unresolvable hosts', async (t) => {
  const gone = await startEmulator();
  const url = gone.url;
  await gone.close();
  const refused = await safeFetch(`${url}/`, open);
  t.equal(!refused.ok && refused.reason, 'upstream_unreachable');
  const unknown = await safeFetch('http://no-such-host.test/', { ...open, resolver: staticResolver({}) });
  t.equal(!unknown.ok && unknown.reason, 'upstream_unreachable');
  t.match(!unknown.ok && unknown.message, /could not resolve no-such-host\.test/);
  for (const bad of [
    'ftp://example.com/',
    'gopher://127.0.0.1:70/',
    'file:///etc/passwd',
    'not a url',
    'javascript:alert(1)',
  ]) {
    const r = await safeFetch(bad, open);
    t.equal(!r.ok && r.reason, 'target_forbidden', bad);
  }
});

t.test('a shared pool: many concurrent requests, all in flight at once', async (t) => {
  site.setPage('/slow', 'ok');
  site.fault = { delayMs: 150 };
  const rs = await Promise.all(Array.from({ length: 8 }, () => safeFetch(`${site.url}/slow`, open)));
  t.ok(rs.every((r) => r.ok));
  t.equal(site.stats.maxInFlight, 8);
});
