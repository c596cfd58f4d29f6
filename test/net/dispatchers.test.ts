/**
 * The outbound layer (src/net/dispatchers.ts) end to end on loopback: URL userinfo reaches an
 * operator's node (RPC_URLS) and a caller's URL alike as Basic auth and stays behind on a
 * cross-origin redirect; the caller dispatcher itself re-runs the SSRF guard on every redirect hop
 * (public → loopback refused at the hop, the public address being a stub carried to loopback by
 * test/net/internet.ts, so no packet leaves 127.0.0.1); the body cap and the retry on a reset
 * belong to both dispatchers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import t from 'tap';
import { rpc } from '../../src/checks/rpc.js';
import { loadConfig } from '../../src/config.js';
import { classifyAddress } from '../../src/net/address.js';
import { callerOver, closeDispatchers, operatorDispatcher } from '../../src/net/dispatchers.js';
import { staticResolver } from '../../src/net/resolver.js';
import { rpcBatch, rpcCall } from '../../src/net/rpc.js';
import { safeFetch } from '../../src/net/safe-fetch.js';
import { send } from '../../src/net/transport.js';
import { startJsonRpc } from '../emulators/jsonrpc.js';
import { loopbackInternet } from './internet.js';

t.teardown(closeDispatchers);

const basic = (user: string, pass: string): string => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
const withUserinfo = (url: string, info: string): string => url.replace('http://', `http://${info}@`);

interface Seen {
  path: string;
  authorization?: string;
}

/** A loopback server answering from `route`; records the path and authorization of each request. */
async function server(route: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const s = createServer((req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    route(req, res);
  });
  s.on('connection', (c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    close: () =>
      new Promise<void>((r) => {
        for (const c of sockets) c.destroy();
        s.close(() => r());
      }),
  };
}

t.test('userinfo in an operator RPC_URLS entry reaches the node as Basic auth', async (t) => {
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  // No ALLOW_PRIVATE_TARGETS: the loopback node is reachable only because the operator configured it.
  const config = loadConfig({ RPC_URLS: `base=${withUserinfo(node.url, 'alice:s%3Acret')}/v2/key` });
  const url = config.rpcUrls.base;
  const out = await rpc.run(
    { type: 'rpc', rpc_url: url, method_name: 'eth_blockNumber', expect_hex_result: true },
    { config, signal: AbortSignal.timeout(5000), timeoutMs: 5000 },
  );
  t.equal(out.status, 'pass', 'the check went through the operator dispatcher');
  t.equal(node.received.length, 1);
  t.equal(node.received[0].path, '/v2/key');
  t.equal(node.received[0].headers.authorization, basic('alice', 's:cret'), 'percent-decoded, as curl sends them');
  t.notMatch(JSON.stringify(out), /alice|cret/, 'the credentials appear nowhere in the result');

  const direct = await rpcCall(url, 'eth_chainId', [], { safe: false });
  t.equal(direct.ok && direct.data.result, '0x2105');
  t.equal(node.received[1].headers.authorization, basic('alice', 's:cret'), 'rpcCall alike');
});

t.test('userinfo in a caller URL is Basic auth too, and stays behind on a cross-origin redirect', async (t) => {
  const other = await server((_req, res) => res.end('other origin'));
  const site = await server((req, res) => {
    if (req.url === '/same') res.writeHead(302, { location: '/landed' }).end();
    else if (req.url === '/cross') res.writeHead(307, { location: `${other.url}/landed` }).end();
    else res.end('here');
  });
  t.teardown(async () => {
    await site.close();
    await other.close();
  });
  const open = { allowPrivate: true, timeoutMs: 3000 };
  const auth = basic('bob', 'pw');

  const plain = await safeFetch(`${withUserinfo(site.url, 'bob:pw')}/page`, open);
  t.equal(plain.ok && plain.data.body, 'here');
  t.equal(site.seen.at(-1)?.authorization, auth, 'a caller URL with userinfo is sent with Basic auth');
  t.equal(plain.ok && plain.data.finalUrl, `${site.url}/page`, 'the evidence URL carries no credentials');

  const same = await safeFetch(`${withUserinfo(site.url, 'bob:pw')}/same`, open);
  t.equal(same.ok && same.data.body, 'here');
  t.same(
    site.seen.slice(-2).map((s) => s.authorization),
    [auth, auth],
    'a same-origin hop keeps the credentials',
  );

  const cross = await safeFetch(`${withUserinfo(site.url, 'bob:pw')}/cross`, open);
  t.equal(cross.ok && cross.data.body, 'other origin');
  t.equal(site.seen.at(-1)?.authorization, auth, 'the first origin got them');
  t.equal(other.seen.length, 1);
  t.equal(other.seen[0].authorization, undefined, 'the other origin did not');

  // A caller's JSON-RPC URL (rpc_url in a request) takes the same path.
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  const r = await rpcCall(withUserinfo(node.url, 'carol:k%40y'), 'eth_blockNumber', [], {
    safe: true,
    allowPrivate: true,
  });
  t.equal(r.ok && r.data.result, '0x1234');
  t.equal(node.received[0].headers.authorization, basic('carol', 'k@y'));
  t.equal(r.source, '127.0.0.1', 'the source is the host name alone');
});

t.test('the caller dispatcher checks every hop: public → loopback is refused at the hop', async (t) => {
  const sink = await server((_req, res) => res.end('should never be reached'));
  const site = await server((req, res) => {
    const to = decodeURIComponent((req.url ?? '').slice('/go?to='.length));
    res.writeHead(302, { location: to }).end();
  });
  const net = loopbackInternet();
  t.teardown(async () => {
    await net.close();
    await site.close();
    await sink.close();
  });
  const sinkPort = Number(new URL(sink.url).port);
  // 93.184.216.34 stands for a public host; the connector carries it to the loopback site.
  const publicIp = '93.184.216.34';
  t.equal(classifyAddress(publicIp), 'public', 'the first hop is a public address');
  t.equal(classifyAddress('127.0.0.1'), 'loopback', 'the second is loopback');
  net.host(publicIp, 80, Number(new URL(site.url).port));
  net.host('127.0.0.1', sinkPort, sinkPort); // a hop that slipped through would reach the sink
  const resolver = staticResolver({ 'public.test': [publicIp], 'inside.test': ['127.0.0.1'] });
  const caller = callerOver(net.agent);

  for (const to of [`http://127.0.0.1:${sinkPort}/`, `http://inside.test:${sinkPort}/`]) {
    // The dispatcher itself, with no safeFetch around it.
    const r = await send(caller, new URL(`http://public.test/go?to=${encodeURIComponent(to)}`), {
      method: 'GET',
      headers: {},
      signal: AbortSignal.timeout(3000),
      resolver,
    });
    t.match(r, { ok: false, reason: 'target_forbidden' }, `redirect to ${to} refused`);
    t.match(!r.ok && r.message, /loopback/, 'the refusal names the class of the address');
    await t.rejects(
      caller.request({
        origin: 'http://public.test',
        path: `/go?to=${encodeURIComponent(to)}`,
        method: 'GET',
        resolver,
      } as never),
      { reason: 'target_forbidden', code: 'PREFLIGHT_NET_REFUSAL' },
      'undici request() on the dispatcher rejects with the refusal',
    );
  }
  t.equal(site.seen.length, 4, 'every first hop reached the public host');
  t.ok(
    net.dials.every((d) => d === `${publicIp}:80`),
    `only the public address was dialled: ${net.dials.join(', ')}`,
  );
  t.equal(sink.seen.length, 0, 'the loopback server saw nothing');

  // JSON-RPC to a caller's URL rides the same dispatcher (POST 307 → loopback).
  const rpcR = await rpcBatch(
    `http://public.test/go?to=${encodeURIComponent(`http://127.0.0.1:${sinkPort}/`)}`,
    [{ method: 'eth_blockNumber', params: [] }],
    { safe: true, resolver, dispatcher: net.agent },
  );
  t.equal(!rpcR.ok && rpcR.reason, 'target_forbidden');
  t.equal(sink.seen.length, 0);
});

t.test('both dispatchers cap bodies and retry once on a reset', async (t) => {
  let resets = 1;
  const big = 'x'.repeat(64 * 1024);
  const site = await server((req, res) => {
    if (req.url === '/reset' && resets-- > 0) {
      req.socket.destroy();
      return;
    }
    res.end(req.url === '/big' ? big : 'fine');
  });
  t.teardown(() => site.close());
  const signal = AbortSignal.timeout(3000);

  const capped = await send(operatorDispatcher(), new URL(`${site.url}/big`), {
    method: 'GET',
    headers: {},
    signal,
    maxBodyBytes: 1000,
  });
  t.equal(capped.ok && capped.res.body.length, 1000, 'operator: cut at the cap');
  t.equal(capped.ok && capped.res.truncated, true, 'and flagged');
  const whole = await send(operatorDispatcher(), new URL(`${site.url}/big`), { method: 'GET', headers: {}, signal });
  t.equal(whole.ok && whole.res.body.length, big.length, 'under the default 1 MiB cap it is whole');
  t.equal(whole.ok && whole.res.truncated, false);

  const retried = await send(operatorDispatcher(), new URL(`${site.url}/reset`), {
    method: 'GET',
    headers: {},
    signal,
  });
  t.equal(retried.ok && retried.res.body, 'fine', 'operator: a reset before the answer is retried once');
  resets = 2;
  const twice = await send(operatorDispatcher(), new URL(`${site.url}/reset`), { method: 'GET', headers: {}, signal });
  t.match(twice, { ok: false, reason: 'upstream_unreachable' }, 'but only once');

  resets = 1;
  const viaCaller = await safeFetch(`${site.url}/reset`, { allowPrivate: true, timeoutMs: 3000 });
  t.equal(viaCaller.ok && viaCaller.data.body, 'fine', 'caller: the same retry');
  const cappedCaller = await safeFetch(`${site.url}/big`, { allowPrivate: true, maxBodyBytes: 10, timeoutMs: 3000 });
  t.equal(cappedCaller.ok && cappedCaller.data.body, 'xxxxxxxxxx', 'caller: the same cap');
  t.equal(cappedCaller.ok && cappedCaller.data.truncated, true);
});
