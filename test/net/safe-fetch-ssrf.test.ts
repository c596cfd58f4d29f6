import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { safeFetch } from '../../src/net/safe-fetch.js';
import { staticResolver, type Resolver } from '../../src/net/resolver.js';
import { startStatusPage } from '../emulators/statuspage.js';
import { loopbackInternet } from './internet.js';

/** An HTTP listener that counts TCP connections, so "sees nothing" means no connect at all. */
async function listener(
  host: string,
): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server = http.createServer((_req, res) => res.end('internal secret'));
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, host, r));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

t.test('loopback in every spelling is refused before any connection', async (t) => {
  const v4 = await listener('127.0.0.1');
  const v6 = await listener('::1');
  t.teardown(async () => {
    await v4.close();
    await v6.close();
  });
  const p = v4.port;
  const urls = [
    `http://127.0.0.1:${p}/`,
    `http://localhost:${p}/`,
    `http://LOCALHOST.:${p}/`,
    `http://api.localhost:${p}/`,
    `http://0x7f000001:${p}/`,
    `http://2130706433:${p}/`,
    `http://0177.0.0.1:${p}/`,
    `http://127.1:${p}/`,
    `http://0x7f.1:${p}/`,
    `http://good@127.0.0.1:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://0.0.0.0:${p}/`,
    `http://0:${p}/`,
    `https://127.0.0.1:${p}/`,
    `http://[::1]:${v6.port}/`,
    `http://[0:0:0:0:0:0:0:1]:${v6.port}/`,
  ];
  for (const u of urls) {
    const r = await safeFetch(u, { allowPrivate: false });
    t.equal(r.ok ? 'ok' : r.reason, 'target_forbidden', u);
  }
  t.equal(v4.connections(), 0, 'the IPv4 loopback listener saw no connection');
  t.equal(v6.connections(), 0, 'the IPv6 loopback listener saw no connection');

  // The same listeners are reachable when the operator allows private targets: the refusal above is the rule, not a broken socket.
  const ok4 = await safeFetch(`http://127.0.0.1:${p}/`, { allowPrivate: true });
  const ok6 = await safeFetch(`http://[::1]:${v6.port}/`, { allowPrivate: true });
  t.equal(ok4.ok && ok4.data.body, 'internal secret');
  t.equal(ok6.ok && ok6.data.status, 200);
  t.equal(v4.connections(), 1);
  t.equal(v6.connections(), 1);
});

t.test('names resolving to private, metadata, ULA or link-local addresses are refused without a dial', async (t) => {
  const net = loopbackInternet();
  t.teardown(() => net.close());
  const resolver = staticResolver({
    'internal.test': ['10.0.0.5'],
    'metadata.test': ['169.254.169.254'],
    'ula.test': ['fd00::1'],
    'linklocal.test': ['fe80::1'],
    'cgnat.test': ['100.64.1.1'],
    'rebind.test': ['127.0.0.1'],
    'mapped.test': ['::ffff:192.168.0.1'],
    'mixed.test': ['93.184.216.34', '10.1.1.1'], // one bad address taints the name
    'octal.test': ['0177.0.0.1'],
  });
  const expect: Record<string, RegExp> = {
    'internal.test': /private/,
    'metadata.test': /link-local/,
    'ula.test': /unique-local/,
    'linklocal.test': /link-local/,
    'cgnat.test': /cgnat/,
    'rebind.test': /loopback/,
    'mapped.test': /private/,
    'mixed.test': /private/,
    'octal.test': /loopback/,
  };
  for (const [host, msg] of Object.entries(expect)) {
    const r = await safeFetch(`http://${host}/latest/meta-data/`, { resolver, dispatcher: net.agent });
    t.equal(r.ok ? 'ok' : r.reason, 'target_forbidden', host);
    t.match(!r.ok && r.message, msg, `${host}: message names the range`);
  }
  t.same(net.dials, [], 'no connection was attempted');
  const literal = await safeFetch('http://169.254.169.254/latest/meta-data/', { dispatcher: net.agent });
  t.equal(!literal.ok && literal.reason, 'target_forbidden');
  t.same(net.dials, []);
});

t.test('the connection goes to the checked address; the name travels only in Host', async (t) => {
  const net = loopbackInternet();
  const site = await startStatusPage();
  t.teardown(async () => {
    await net.close();
    await site.close();
  });
  site.setPage('/hello', 'hi');
  net.host('93.184.216.34', 80, Number(new URL(site.url).port));
  const r = await safeFetch('http://public.test/hello', {
    resolver: staticResolver({ 'public.test': ['93.184.216.34'] }),
    dispatcher: net.agent,
  });
  t.equal(r.ok && r.data.body, 'hi');
  t.equal(r.ok && r.data.finalUrl, 'http://public.test/hello');
  t.equal(r.ok && r.source, 'public.test');
  t.same(net.dials, ['93.184.216.34:80']);
  t.equal(site.received[0].headers.host, 'public.test');
});

t.test('every redirect hop is checked again', async (t) => {
  const net = loopbackInternet();
  const site = await startStatusPage();
  t.teardown(async () => {
    await net.close();
    await site.close();
  });
  net.host('93.184.216.34', 80, Number(new URL(site.url).port));
  let calls = 0;
  const rebinding: Resolver = async (h) => {
    if (h === 'rebind.test') return ++calls === 1 ? ['93.184.216.34'] : ['127.0.0.1'];
    return staticResolver({ 'public.test': ['93.184.216.34'], 'internal.test': ['10.0.0.5'] })(h);
  };
  site.setRedirect('/to-metadata', 'http://169.254.169.254/latest/meta-data/iam/');
  site.setRedirect('/to-internal', 'http://internal.test/admin');
  site.setRedirect('/to-file', 'file:///etc/passwd');
  site.setRedirect('/to-smtp', 'http://public.test:25/');
  site.setRedirect('/to-loopback-decimal', 'http://2130706433/');
  site.setRedirect('/same-host', '/next');
  const cases: [string, string, RegExp][] = [
    ['http://public.test/to-metadata', 'target_forbidden', /link-local/],
    ['http://public.test/to-internal', 'target_forbidden', /private/],
    ['http://public.test/to-file', 'target_forbidden', /scheme file/],
    ['http://public.test/to-smtp', 'target_forbidden', /port 25/],
    ['http://public.test/to-loopback-decimal', 'target_forbidden', /loopback/],
    ['http://rebind.test/same-host', 'target_forbidden', /loopback/], // DNS answer changed between hops
  ];
  for (const [url, reason, msg] of cases) {
    const r = await safeFetch(url, { resolver: rebinding, dispatcher: net.agent });
    t.equal(r.ok ? 'ok' : r.reason, reason, url);
    t.match(!r.ok && r.message, msg);
  }
  t.ok(
    net.dials.every((d) => d === '93.184.216.34:80'),
    'only the public address was ever dialled',
  );
  t.equal(site.stats.requests, cases.length, 'one request per case: the forbidden hop never left');
});
