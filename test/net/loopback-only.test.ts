/**
 * The refusal the AgentKit tests install before AgentKit is imported (test/helpers/loopback-only.ts):
 * decided by the address classifier and a stubbed resolver, proved on each hook without a packet
 * leaving the machine (a refused host is never resolved or connected to; an allowed one is a local
 * server).
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { getGlobalDispatcher, request } from 'undici';
import { installLoopbackOnly, isLoopbackHost, RefusedError, type StubResolver } from '../helpers/loopback-only.js';

const REFUSED = { code: 'ERR_NON_LOOPBACK_REFUSED' };
const STUB: StubResolver = (h) =>
  ({
    localhost: ['127.0.0.1', '::1'],
    'node.local.test': ['127.0.0.9'],
    'cca-lite.coinbase.com': ['104.18.0.1'],
    'split.test': ['127.0.0.1', '203.0.113.9'],
    'metadata.test': ['169.254.169.254'],
  })[h];

t.test('the decision: loopback by the classifier, in every spelling, and nothing else', async (t) => {
  for (const host of ['127.0.0.1', '127.1', '2130706433', '0x7f.1', '[::1]', '::1', 'localhost', 'node.local.test'])
    t.ok(isLoopbackHost(host, STUB), `${host} is loopback`);
  for (const host of [
    'cca-lite.coinbase.com', // resolves (in the stub) to a public address
    'split.test', // one address loopback, one not
    'metadata.test',
    'unknown.test', // the stub does not know it: refused, never looked up
    '10.0.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '[::ffff:8.8.8.8]',
    '203.0.113.9',
  ])
    t.notOk(isLoopbackHost(host, STUB), `${host} is refused`);
});

t.test('each hook refuses a non-loopback target and lets loopback through', async (t) => {
  const server = http.createServer((_req, res) => res.end('local'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const guard = installLoopbackOnly(STUB);
  t.teardown(async () => {
    await guard.restore();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const answered = await fetch('https://cca-lite.coinbase.com/amp', { method: 'POST', body: '{}' });
  t.equal(answered.status, 204, 'global fetch: answered locally, not sent');
  t.equal(answered.headers.get('x-refused-in-test'), '1');
  t.throws(() => http.request('http://split.test/'), REFUSED, 'http.request');
  t.throws(() => https.request({ hostname: 'metadata.test', path: '/' }), REFUSED, 'https.request with options');
  t.throws(() => https.get(new URL('https://unknown.test/')), REFUSED, 'https.get');
  t.equal(getGlobalDispatcher(), guard.dispatcher, 'the refusing agent is the global dispatcher');
  // The dispatcher's connector, asked directly: it answers with an error and opens nothing.
  const err = await new Promise<Error | null>((resolve) =>
    guard.connector(
      {
        hostname: 'cca-lite.coinbase.com',
        host: 'cca-lite.coinbase.com',
        protocol: 'https:',
        port: '443',
        servername: '',
      },
      (...args) => resolve(args[0]),
    ),
  );
  t.ok(err instanceof RefusedError, 'the connector refuses before any lookup or connection');
  t.same(guard.refused.slice(0, 4), [
    'https://cca-lite.coinbase.com/amp',
    'http://split.test/',
    'metadata.test:',
    'https://unknown.test/',
  ]);

  t.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), 'local', 'fetch to loopback');
  t.equal(await (await request(`http://localhost:${port}/`)).body.text(), 'local', 'undici to loopback');
  const viaHttp = await new Promise<string>((resolve, reject) =>
    http
      .get(`http://127.0.0.1:${port}/`, (res) => {
        let body = '';
        res.on('data', (d) => (body += String(d)));
        res.on('end', () => resolve(body));
      })
      .on('error', reject),
  );
  t.equal(viaHttp, 'local', 'http.get to loopback');
});
