/**
 * Connections opened ahead (src/net/ahead.ts, docs/outbound.md): a check thread's warm-up opens
 * CONNECT_AHEAD connections to each configured provider, and the first requests to that provider
 * go out on them instead of new ones; a connection the far end closed, or wrote to unasked, while it
 * waited is never handed out; one that waits past its keep time is closed; a provider that refuses
 * does not hold the warm-up back. Every server here is on loopback.
 */
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import t from 'tap';
import { Agent, buildConnector, request } from 'undici';
import { loadConfig } from '../../src/config.js';
import { providerUrls, warmUp } from '../../src/engine/warm-up.js';
import { AheadConnections } from '../../src/net/ahead.js';
import { aheadWaiting, closeDispatchers, operatorDispatcher } from '../../src/net/dispatchers.js';
import { OFFLINE_UPSTREAMS } from '../helpers/offline.js';

t.teardown(closeDispatchers);

/** A loopback HTTP server that counts the connections it accepted and keeps them for closing. */
async function counting(): Promise<{ url: string; server: Server; accepted: Socket[]; close(): Promise<void> }> {
  const accepted: Socket[] = [];
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  server.on('connection', (s) => accepted.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    accepted,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const settle = (ms = 50) => new Promise((r) => setTimeout(r, ms));

t.test('requests go out on the connections opened ahead, and only then on new ones', async (t) => {
  await closeDispatchers();
  const s = await counting();
  t.teardown(s.close);
  const ahead = new AheadConnections(buildConnector({ timeout: 2000 }));
  t.teardown(() => ahead.close());
  const opened = await ahead.open([`${s.url}/a/b?x=1`, `${s.url}/other`], 2, 10_000, 2000);
  t.equal(opened, 2, 'two connections to the one origin both URLs share');
  await settle();
  t.equal(s.accepted.length, 2, 'the server saw them before any request');
  t.equal(ahead.size, 2);

  const agent = new Agent({ connect: ahead.connector });
  t.teardown(() => agent.close());
  // Three at once: two on the connections opened ahead, the third on a new one.
  const answers = await Promise.all(
    [1, 2, 3].map(async (i) => {
      const r = await request(`${s.url}/q${i}`, { dispatcher: agent });
      return r.body.json();
    }),
  );
  t.same(answers, [{ ok: true }, { ok: true }, { ok: true }]);
  t.equal(s.accepted.length, 3, 'one new connection for the request beyond the two');
  t.equal(ahead.size, 0, 'none left waiting');
});

t.test('a connection closed or written to by the far end while it waits is never handed out', async (t) => {
  // A raw server: it closes the first connection at once and writes to the second unasked.
  const accepted: Socket[] = [];
  let requests = 0;
  const raw = net.createServer((sock) => {
    accepted.push(sock);
    const n = accepted.length;
    if (n === 1) sock.end();
    else if (n === 2) sock.write('HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n\r\n');
    else
      sock.on('data', () => {
        requests++;
        sock.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok');
      });
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => raw.close(() => r())));
  const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  const ahead = new AheadConnections(buildConnector({ timeout: 2000 }));
  t.teardown(() => ahead.close());
  t.equal(await ahead.open([url], 2, 10_000, 2000), 2);
  await settle(100);
  t.equal(ahead.size, 0, 'both were dropped while they waited');
  const agent = new Agent({ connect: ahead.connector });
  t.teardown(() => agent.close());
  const r = await request(`${url}/x`, { dispatcher: agent });
  t.equal(r.statusCode, 200, 'the request got an answer to itself, not the 408');
  t.equal(await r.body.text(), 'ok');
  t.equal(requests, 1);
  t.equal(accepted.length, 3, 'on a new connection');
  for (const s of accepted) s.destroy();
});

t.test('a connection unused past its keep time is closed', async (t) => {
  const s = await counting();
  t.teardown(s.close);
  const ahead = new AheadConnections(buildConnector({ timeout: 2000 }));
  t.teardown(() => ahead.close());
  t.equal(await ahead.open([s.url], 1, 150, 2000), 1);
  await settle();
  const sock = s.accepted[0];
  t.ok(sock && !sock.destroyed, 'open while it waits');
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  await closed;
  t.equal(ahead.size, 0, 'forgotten once closed');
});

t.test('a provider that refuses or is not a URL does not hold the warm-up back', async (t) => {
  // A port nothing listens on: take one, then free it.
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const ahead = new AheadConnections(buildConnector({ timeout: 2000 }));
  t.teardown(() => ahead.close());
  const started = performance.now();
  t.equal(await ahead.open([`http://127.0.0.1:${port}/`, 'not a url', 'ftp://127.0.0.1/x'], 2, 10_000, 2000), 0);
  t.ok(performance.now() - started < 1500, 'answered at once');
  t.equal(ahead.size, 0);

  // A server that accepts but whose answer never comes cannot stall it either: the wait is bounded.
  const slow = new AheadConnections((_opts, _cb) => {
    /* a connector that never calls back */
  });
  const t0 = performance.now();
  t.equal(await slow.open(['http://127.0.0.1:1/'], 1, 10_000, 200), 0);
  const took = performance.now() - t0;
  t.ok(took >= 190 && took < 1500, `held for its wait only (${Math.round(took)} ms)`);
});

t.test('a connection that connects after the pool closed is closed, not kept', async (t) => {
  const s = await counting();
  t.teardown(s.close);
  const base = buildConnector({ timeout: 2000 });
  // Connects at once but reports it 100 ms later, after the close below.
  const ahead = new AheadConnections((opts, cb) =>
    base(opts, (err, socket) =>
      setTimeout(() => (cb as (e: Error | null, s: Socket | null) => void)(err, socket), 100),
    ),
  );
  t.equal(await ahead.open([s.url], 1, 10_000, 20), 0, 'nothing had connected within the wait');
  ahead.close();
  const closedAt = performance.now();
  await settle(50);
  t.equal(s.accepted.length, 1);
  const sock = s.accepted[0];
  await new Promise<void>((r) => (sock.destroyed ? r() : sock.once('close', () => r())));
  const after = performance.now() - closedAt;
  t.ok(after < 2000, `closed by us once it reported (${Math.round(after)} ms), not after its 10 s keep time`);
  t.equal(ahead.size, 0, 'nothing waits');
});

t.test("a check thread's warm-up opens CONNECT_AHEAD connections to each provider it calls", async (t) => {
  await closeDispatchers();
  const [price, dex, rpcNode] = await Promise.all([counting(), counting(), counting()]);
  t.teardown(() => Promise.all([price.close(), dex.close(), rpcNode.close()]));
  const config = loadConfig({
    ...OFFLINE_UPSTREAMS,
    PRICE_API_URL: `${price.url}/api/v3`,
    DEX_API_URL: dex.url,
    RPC_URLS: `base=${rpcNode.url}/rpc`,
    CONNECT_AHEAD: '3',
  });
  t.same(
    providerUrls(config),
    [`${price.url}/api/v3`, dex.url, OFFLINE_UPSTREAMS.SOURCIFY_URL, `${rpcNode.url}/rpc`],
    'Etherscan only with a key for it',
  );
  t.ok(
    providerUrls(loadConfig({ ...OFFLINE_UPSTREAMS, ETHERSCAN_API_KEY: 'k' })).includes(
      OFFLINE_UPSTREAMS.ETHERSCAN_API_URL,
    ),
  );
  await warmUp(config);
  await settle();
  t.equal(price.accepted.length, 3);
  t.equal(dex.accepted.length, 3);
  t.equal(rpcNode.accepted.length, 3);
  t.equal(aheadWaiting(), 9, 'nine wait for their first request (the closed sourcify port gave none)');

  // The operator's pool takes them: a request to the price provider opens nothing new.
  const r = await operatorDispatcher().request({ origin: price.url, path: '/api/v3/ping', method: 'GET' });
  t.equal(r.statusCode, 200);
  await r.body.text();
  t.equal(price.accepted.length, 3, 'no new connection');
  t.equal(aheadWaiting(), 8);

  await closeDispatchers();
  t.equal(aheadWaiting(), 0, 'closing the pools closes them');

  const none = loadConfig({ ...OFFLINE_UPSTREAMS, PRICE_API_URL: price.url, CONNECT_AHEAD: '0' });
  await warmUp(none);
  await settle();
  t.equal(price.accepted.length, 3, 'CONNECT_AHEAD=0 opens none');
});
