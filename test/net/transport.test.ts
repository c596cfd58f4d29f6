/**
 * send() (src/net/transport.ts) over the operator's wrappers and a loopback node:http server: the
 * answer as the server wrote it, informational answers skipped, and the caller's signal honoured
 * before the request, before the headers and in the middle of the body.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Agent } from 'undici';
import { operatorOver } from '../../src/net/dispatchers.js';
import { send } from '../../src/net/transport.js';

let requests: string[] = [];
const server = http.createServer((req, res) => {
  requests.push(req.url ?? '');
  if (req.url === '/hints') {
    res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
    res.writeHead(200, { 'content-type': 'application/json', 'x-final': 'yes' });
    res.end('{"final":true}');
  } else if (req.url === '/hints-then-reset') {
    res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
    setTimeout(() => req.socket.destroy(), 10);
  } else if (req.url === '/chunks') {
    // "é" and "€" split across writes: the body is decoded once, whole.
    const bytes = Buffer.from('{"name":"café €5"}', 'utf8');
    const at = bytes.indexOf(0xc3) + 1;
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
    res.write(bytes.subarray(0, at));
    setTimeout(() => {
      res.write(bytes.subarray(at, at + 5));
      setTimeout(() => res.end(bytes.subarray(at + 5)), 10);
    }, 10);
  } else if (req.url === '/stall-body') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"partial":');
  } else if (req.url === '/stall-headers') {
    // never answers
  } else {
    res.writeHead(404).end();
  }
});
const agent = new Agent({ keepAliveTimeout: 1000 });
const dispatcher = operatorOver(agent);
let base: URL;

t.before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
t.teardown(async () => {
  server.closeAllConnections();
  server.close();
  await agent.close();
});
t.beforeEach(() => {
  requests = [];
});

const get = (path: string, signal = AbortSignal.timeout(2000)) =>
  send(dispatcher, new URL(path, base), { method: 'GET', headers: { accept: 'application/json' }, signal });

t.test('an informational answer is skipped: the status, headers and body are the final ones', async (t) => {
  const r = await get('/hints');
  t.ok(r.ok);
  if (!r.ok) return;
  t.equal(r.res.status, 200);
  t.equal(r.res.headers['x-final'], 'yes');
  t.equal(r.res.headers.link, undefined, 'the 103 headers are not mixed into the answer');
  t.equal(r.res.body, '{"final":true}');
  t.equal(r.res.truncated, false);
});

t.test('a connection lost after an informational answer failed before an answer, not in a body', async (t) => {
  const r = await get('/hints-then-reset');
  t.equal(r.ok, false);
  if (r.ok) return;
  t.equal(r.reason, 'upstream_unreachable');
  t.match(r.message, /before an answer/);
  t.equal(r.status, undefined, "a 103 is not the answer's status");
});

t.test('a body written in pieces that split characters arrives whole; repeated headers are joined', async (t) => {
  const r = await get('/chunks');
  t.ok(r.ok);
  if (!r.ok) return;
  t.same(JSON.parse(r.res.body), { name: 'café €5' });
  t.equal(r.res.headers['set-cookie'], 'a=1, b=2');
});

t.test('an aborted signal sends nothing', async (t) => {
  const ctl = new AbortController();
  ctl.abort();
  const r = await get('/hints', ctl.signal);
  t.equal(!r.ok && r.reason, 'upstream_timeout');
  t.equal(!r.ok && r.status, undefined);
  t.same(requests, [], 'the server saw no request');
});

t.test('the signal ends a call that has no headers yet, and one in the middle of its body', async (t) => {
  const started = performance.now();
  const before = await get('/stall-headers', AbortSignal.timeout(150));
  t.equal(!before.ok && before.reason, 'upstream_timeout');
  t.match(!before.ok && before.message, /before an answer/);
  t.equal(!before.ok && before.status, undefined);

  const during = await get('/stall-body', AbortSignal.timeout(150));
  t.equal(!during.ok && during.reason, 'upstream_timeout');
  t.match(!during.ok && during.message, /while reading the body/);
  t.equal(!during.ok && during.status, 200, 'the status that had arrived is kept');
  t.ok(performance.now() - started < 1500, 'both ended at their time limit, not the server');
});
