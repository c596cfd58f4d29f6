/**
 * The SSRF matrix, with ALLOW_PRIVATE_TARGETS off. Loopback targets go through the real app in
 * every request-supplied URL field (decide http/rpc/tx/bridge, guard rpc_url/bridge_status_url,
 * the bridge-risk agent), each answered `target_forbidden`, while a listener on that port on
 * 127.0.0.1, 127.0.0.2 and ::1 sees no connection at all. Private, metadata, ULA, link-local and
 * multicast ranges are proven through the address classifier and safeFetch with a stubbed
 * resolver and a recording connector, so nothing is ever dialled off loopback.
 */
import t from 'tap';
import { startTestApp, post, type TestApp } from '../helpers/app.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { startStatusPage } from '../emulators/statuspage.js';
import { loopbackInternet } from '../net/internet.js';
import { classifyAddress, type AddressClass } from '../../src/net/address.js';
import { safeFetch } from '../../src/net/safe-fetch.js';
import { staticResolver } from '../../src/net/resolver.js';
import { rpcBatch } from '../../src/net/rpc.js';
import { startSink, SINK_SECRET } from './sink.js';

const HASH = `0x${'ab'.repeat(32)}`;

const loopbackUrls = (p: number): string[] => [
  `http://127.0.0.1:${p}/`,
  `http://127.0.0.2:${p}/`,
  `http://127.0.0.1.:${p}/`,
  `http://localhost:${p}/`,
  `http://LOCALHOST.:${p}/`,
  `http://api.localhost:${p}/`,
  `http://[::1]:${p}/`,
  `http://[0:0:0:0:0:0:0:1]:${p}/`,
  `http://0.0.0.0:${p}/`,
  `http://0:${p}/`,
  `http://[::ffff:127.0.0.1]:${p}/`,
  `http://[::ffff:7f00:1]:${p}/`,
  `http://2130706433:${p}/`,
  `http://0x7f000001:${p}/`,
  `http://0177.0.0.1:${p}/`,
  `http://127.1:${p}/`,
  `http://0x7f.1:${p}/`,
  `http://good@127.0.0.1:${p}/`,
  `http://user:pass@localhost:${p}/path?q=1#frag`,
  `https://127.0.0.1:${p}/`,
];

type Evidence = { name: string; status: string; reason: string | null; message: string };

async function evidenceOf(app: TestApp, path: string, body: unknown): Promise<Evidence[]> {
  const r = await post(`${app.url}${path}`, body);
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  if (JSON.stringify(r.body).includes(SINK_SECRET))
    throw new Error(`${path}: the sink's answer leaked into the response`);
  return r.body.evidence as Evidence[];
}

t.test('loopback in every spelling and every URL field: target_forbidden, zero connections', async (t) => {
  const sink = await startSink(['127.0.0.2']);
  const cg = await startCoinGecko();
  cg.setPrice('usd-coin', 'usd', 1);
  const app = await startTestApp({ ALLOW_PRIVATE_TARGETS: 'false', PRICE_API_URL: cg.url });
  t.teardown(async () => {
    await app.close();
    await cg.close();
    await sink.close();
  });
  const urls = loopbackUrls(sink.port);
  let judged = 0;
  for (const url of urls) {
    const decided = await evidenceOf(app, '/v1/decide', {
      goal: 'reach loopback',
      checks: [
        { type: 'http', url },
        { type: 'rpc', rpc_url: url, method_name: 'eth_blockNumber' },
        { type: 'tx', rpc_url: url, tx_hash: HASH },
        { type: 'bridge_exploit_monitor', status_url: url },
      ],
    });
    const guarded = await evidenceOf(app, '/v1/guard', {
      action: 'bridge',
      rpc_url: url,
      bridge_status_url: url,
      tx_hash: HASH,
    });
    const bridges = await evidenceOf(app, '/v1/agents/bridge-risk/analyze', { bridge_status_urls: [url] });
    const named = [
      ...decided,
      ...guarded.filter((e) => ['rpc_health', 'bridge_exploit_monitor', 'tx_confirmation'].includes(e.name)),
      ...bridges,
    ];
    t.equal(named.length, 8, `${url}: eight URL fields judged`);
    for (const e of named) {
      t.match(e, { status: 'fail', reason: 'target_forbidden' }, `${url} as ${e.name}`);
      judged++;
    }
  }
  t.ok(
    urls.length >= 20 && judged === urls.length * 8,
    `${urls.length} loopback spellings × 8 fields = ${judged} refusals`,
  );
  t.equal(sink.connections(), 0, 'the loopback listener saw no connection');

  // The control: with private targets allowed the same listener is reached, so zero above is the rule at work.
  const open = await startTestApp({ ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => open.close());
  const reached = await post(`${open.url}/v1/decide`, {
    goal: 'g',
    checks: [{ type: 'http', url: `http://127.0.0.2:${sink.port}/` }],
  });
  t.equal(reached.body.evidence[0].status, 'pass', 'with ALLOW_PRIVATE_TARGETS the same URL is fetched');
  t.ok(sink.connections() >= 1, 'and the listener counts that connection');
});

t.test('non-http schemes are refused as target_forbidden and nothing is fetched', async (t) => {
  const sink = await startSink();
  const app = await startTestApp({ ALLOW_PRIVATE_TARGETS: 'false' });
  t.teardown(async () => {
    await app.close();
    await sink.close();
  });
  const p = sink.port;
  const cases: Array<[string, string]> = [
    [`ftp://127.0.0.1:${p}/pub`, 'ftp'],
    ['file:///etc/passwd', 'file'],
    [`gopher://127.0.0.1:${p}/_GET%20/`, 'gopher'],
    ['data:text/plain,hello-from-data', 'data'],
    ['javascript:alert(1)', 'javascript'],
    [`ws://127.0.0.1:${p}/`, 'ws'],
  ];
  for (const [url, scheme] of cases) {
    const evidence = await evidenceOf(app, '/v1/decide', {
      goal: 'g',
      checks: [
        { type: 'http', url },
        { type: 'rpc', rpc_url: url, method_name: 'eth_chainId' },
        { type: 'bridge_exploit_monitor', status_url: url },
      ],
    });
    const guarded = await evidenceOf(app, '/v1/guard', { action: 'bridge', rpc_url: url, bridge_status_url: url });
    for (const e of [
      ...evidence,
      ...guarded.filter((g) => g.name === 'rpc_health' || g.name === 'bridge_exploit_monitor'),
    ]) {
      t.match(
        e,
        { status: 'fail', reason: 'target_forbidden', message: new RegExp(`scheme ${scheme} is not allowed`) },
        `${url} as ${e.name}: 200 with target_forbidden (a valid URI, so not a 422)`,
      );
      t.notMatch(JSON.stringify(e), /root:|hello-from-data/, 'no content of the target appears');
    }
  }
  t.equal(sink.connections(), 0, 'no connection to the listener behind the ftp/gopher/ws URLs');
});

t.test('a redirect from an allowed host to loopback is refused at the hop; nothing dials loopback', async (t) => {
  const sink = await startSink();
  const site = await startStatusPage();
  const net = loopbackInternet();
  t.teardown(async () => {
    await net.close();
    await site.close();
    await sink.close();
  });
  net.host('93.184.216.34', 80, Number(new URL(site.url).port)); // the allowed first hop, stubbed
  net.host('127.0.0.1', sink.port, sink.port); // a leaked hop would reach the sink through the connector
  const resolver = staticResolver({ 'status.bridge.test': ['93.184.216.34'], 'internal.test': ['127.0.0.1'] });
  const targets = [
    `http://127.0.0.1:${sink.port}/admin`,
    `http://localhost:${sink.port}/`,
    `http://[::1]:${sink.port}/`,
    `http://2130706433:${sink.port}/`,
    `http://internal.test:${sink.port}/`,
  ];
  targets.forEach((to, i) => {
    site.setRedirect(`/hop${i}`, to, 302);
    site.setPage(`/rpc${i}`, '', { status: 307, headers: { location: to } });
  });
  for (const [i, to] of targets.entries()) {
    const page = await safeFetch(`http://status.bridge.test/hop${i}`, { resolver, dispatcher: net.agent });
    t.equal(page.ok ? 'ok' : page.reason, 'target_forbidden', `GET redirect to ${to}`);
    const rpc = await rpcBatch(`http://status.bridge.test/rpc${i}`, [{ method: 'eth_blockNumber', params: [] }], {
      safe: true,
      resolver,
      dispatcher: net.agent,
    });
    t.equal(rpc.ok ? 'ok' : rpc.reason, 'target_forbidden', `JSON-RPC POST 307 to ${to}`);
  }
  t.equal(site.stats.requests, targets.length * 2, 'every first hop was served by the allowed host');
  t.ok(
    net.dials.length > 0 && net.dials.every((d) => d === '93.184.216.34:80'),
    `only the allowed address was dialled: ${net.dials.join(', ')}`,
  );
  t.equal(sink.connections(), 0, 'the loopback listener saw nothing');
});

t.test('private, metadata, ULA, link-local and multicast ranges: classified and refused without a dial', async (t) => {
  const net = loopbackInternet();
  t.teardown(() => net.close());
  const ranges: Array<[string, AddressClass]> = [
    ['10.0.0.1', 'private'],
    ['10.255.255.254', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.0.1', 'private'],
    ['192.168.255.254', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.254', 'cgnat'],
    ['169.254.169.254', 'link_local'],
    ['169.254.0.1', 'link_local'],
    ['fd00::1', 'unique_local'],
    ['fd12:3456:789a::1', 'unique_local'],
    ['fc00::1', 'unique_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf::1', 'link_local'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link_local'],
    ['64:ff9b::a9fe:a9fe', 'link_local'],
    ['2002:a9fe:a9fe::1', 'link_local'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['127.0.0.2', 'loopback'],
  ];
  const table: Record<string, string[]> = {};
  for (const [ip, cls] of ranges) {
    t.equal(classifyAddress(ip), cls, `${ip} is ${cls}`);
    const host = `h${Object.keys(table).length}.internal.test`;
    table[host] = [ip.replace(/%.*/, '')];
    const viaName = await safeFetch(`http://${host}/latest/meta-data/`, {
      resolver: staticResolver(table),
      dispatcher: net.agent,
    });
    t.equal(viaName.ok ? 'ok' : viaName.reason, 'target_forbidden', `a name resolving to ${ip}`);
    if (!ip.includes('%')) {
      const literal = ip.includes(':') ? `[${ip}]` : ip;
      const direct = await safeFetch(`http://${literal}/latest/meta-data/`, { dispatcher: net.agent });
      t.equal(direct.ok ? 'ok' : direct.reason, 'target_forbidden', `the literal ${literal}`);
    }
  }
  const boundary: Array<[string, AddressClass]> = [
    ['172.32.0.1', 'public'],
    ['100.128.0.1', 'public'],
    ['11.0.0.1', 'public'],
    ['2606:4700::1', 'public'],
  ];
  for (const [ip, cls] of boundary) t.equal(classifyAddress(ip), cls, `${ip} just outside the ranges is ${cls}`);
  t.same(net.dials, [], 'the connector was never called');
  // The control: a public answer is dialled through the same connector, so the empty list above means something.
  await safeFetch('http://public.test/', {
    resolver: staticResolver({ 'public.test': ['93.184.216.34'] }),
    dispatcher: net.agent,
  });
  t.same(net.dials, ['93.184.216.34:80'], 'a public address does reach the connector');
});
