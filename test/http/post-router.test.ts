/**
 * The POST router (src/http/post-router.ts) against express's router: the exact path takes the POST
 * router, the same path with a trailing slash takes express's, and every kind of body gets the same
 * answer from both. Also what only the POST router does itself: reading plain bodies, a client that
 * leaves mid-body, and a handler that throws or rejects.
 */
import t from 'tap';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { startTestApp } from '../helpers/app.js';
import { HttpError } from '../../src/http/errors.js';
import type { ApiHandler } from '../../src/http/api.js';

const boom: ApiHandler = () => {
  throw new Error('boom from a handler');
};
const rejects: ApiHandler = async () => {
  await Promise.resolve();
  throw new HttpError(409, 'a refusal from an async handler');
};
const app = await startTestApp({}, { handlers: { bridge: boom, yield: rejects } });
t.teardown(() => app.close());

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request with exactly these headers and bytes (fetch would add or fix some). */
function raw(
  path: string,
  headers: Record<string, string>,
  body: Buffer | string | Array<Buffer | string>,
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}${path}`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    for (const part of Array.isArray(body) ? body : [body]) req.write(part);
    req.end();
  });
}

/** Fields that differ per answer; the signature's requestHash (the body bytes) stays compared. */
const PER_ANSWER = new Set([
  'request_id',
  'evaluated_at',
  'latency_ms',
  'cached',
  'age_s',
  'id',
  'signature',
  'issuedAt',
  'expiresAt',
]);

/** The answer without what differs per request. */
function comparable(r: Raw): unknown {
  let body: unknown = r.body;
  try {
    body = JSON.parse(r.body);
  } catch {
    // compared as text
  }
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (PER_ANSWER.has(k)) continue;
      out[k] = strip(x);
    }
    return out;
  };
  return { status: r.status, type: r.headers['content-type'], body: strip(body) };
}

const decide = JSON.stringify({ goal: 'g', checks: [{ type: 'approval_amount', amount: '1000' }] });
const cases: Array<[string, Record<string, string>, Buffer | string | Array<Buffer | string>, number]> = [
  [
    'plain JSON',
    { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(decide)) },
    decide,
    200,
  ],
  ['no content-type at all', { 'content-length': String(Buffer.byteLength(decide)) }, decide, 200],
  [
    'a UTF-8 byte order mark',
    { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(decide) + 3) },
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(decide)]),
    200,
  ],
  [
    'chunked, in pieces',
    { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    [decide.slice(0, 10), decide.slice(10)],
    200,
  ],
  ['gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, gzipSync(decide), 200],
  ['charset=utf-8', { 'content-type': 'application/json; charset=utf-8' }, decide, 200],
  ['charset=latin1', { 'content-type': 'application/json; charset=latin1' }, decide, 415],
  ['broken JSON', { 'content-type': 'application/json' }, '{"goal": "g", ', 422],
  ['JSON that is a number', { 'content-type': 'application/json' }, '42', 422],
  ['an empty body', { 'content-type': 'application/json', 'content-length': '0' }, '', 422],
  ['corrupt gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, 'not gzip at all', 400],
  [
    'a schema violation',
    { 'content-type': 'application/json' },
    JSON.stringify({ goal: 'g', checks: [{ type: 'price' }] }),
    422,
  ],
  [
    'over the 256 KiB limit',
    { 'content-type': 'application/json' },
    JSON.stringify({ goal: 'x'.repeat(300 * 1024), checks: [] }),
    413,
  ],
];

t.test('the POST router and the router answer every kind of body alike', async (t) => {
  for (const [name, headers, body, status] of cases) {
    const front = await raw('/v1/decide', headers, body);
    const router = await raw('/v1/decide/', headers, body);
    t.equal(front.status, status, `${name}: ${front.body.slice(0, 200)}`);
    t.same(comparable(front), comparable(router), `${name}: same answer through both doors`);
    t.match(front.headers['x-request-id'], /\S/, `${name}: carries a request id`);
  }
});

t.test("JSON decode errors carry the parser's sentence, as body-parser gives it", async (t) => {
  const r = await raw('/v1/decide', { 'content-type': 'application/json' }, '{"goal": tru');
  t.equal(r.status, 422);
  t.match(JSON.parse(r.body), { detail: [{ loc: ['body', 0], type: 'json_invalid', msg: /^JSON decode error: / }] });
});

t.test('a query string still takes the POST router and is answered', async (t) => {
  const r = await raw('/v1/decide?source=agent-7', { 'content-type': 'application/json' }, decide);
  t.equal(r.status, 200);
  t.match(JSON.parse(r.body), { verdict: String });
});

t.test('a client that leaves mid-body costs nothing and the server keeps serving', async (t) => {
  await new Promise<void>((resolve) => {
    const req = http.request(`${app.url}/v1/decide`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '5000' },
    });
    req.on('error', () => resolve());
    req.write('{"goal": "half');
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 50);
  });
  const after = await raw('/v1/decide', { 'content-type': 'application/json' }, decide);
  t.equal(after.status, 200);
});

t.test('a handler that throws gives a 500 in the error shape; a rejected HttpError keeps its status', async (t) => {
  const thrown = await raw(
    '/v1/agents/bridge-risk/analyze',
    { 'content-type': 'application/json' },
    JSON.stringify({ bridge_status_urls: ['https://status.example.com/'] }),
  );
  t.equal(thrown.status, 500);
  t.same(JSON.parse(thrown.body), { detail: 'Internal Server Error' });
  t.ok(
    app.logs.some(
      (l) =>
        l.msg === 'unhandled error' && String((l.err as { message?: string } | undefined)?.message).includes('boom'),
    ),
    'logged with its cause',
  );
  const rejected = await raw(
    '/v1/agents/yield-routing/recommend',
    { 'content-type': 'application/json' },
    JSON.stringify({ options: [{ name: 'vault', apy: 4.2 }] }),
  );
  t.equal(rejected.status, 409, rejected.body);
  t.same(JSON.parse(rejected.body), { detail: 'a refusal from an async handler' });
  const after = await raw('/v1/decide', { 'content-type': 'application/json' }, decide);
  t.equal(after.status, 200, 'still serving');
});

t.test('every answer through the POST router is counted and logged under its route', async (t) => {
  const before = app.logs.length;
  await raw('/v1/decide', { 'content-type': 'application/json' }, decide);
  const line = app.logs.slice(before).find((l) => l.msg === 'request');
  t.match(line, { method: 'POST', route: '/v1/decide', status: 200, reqId: String });
  const scrape = await (await fetch(`${app.url}/metrics`)).text();
  t.match(scrape, /preflight_http_request_duration_seconds_count\{[^}]*route="\/v1\/decide"[^}]*\} [1-9]/);
});
