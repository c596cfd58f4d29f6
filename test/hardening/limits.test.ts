/**
 * Every row of the README's Limits table, at the limit and one past it: the value at the limit is
 * served, one more is refused with the documented status and, for 422s, the exact loc and type.
 */
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startTestApp, post } from '../helpers/app.js';
import { spawnService, untilReady } from '../helpers/spawn.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { MAX_REQUEST_BODY_BYTES } from '../../src/pricing.js';

type Loc = Array<string | number>;
const KiB = 1024;
const HOLD = `http://127.0.0.1:1/`; // loopback and a refused port: judged, never fetched
const urlOf = (length: number): string => HOLD + 'a'.repeat(length - HOLD.length);
const approvals = (n: number) => Array.from({ length: n }, () => ({ type: 'approval_amount', amount: '1' }));
const headersOf = (n: number, value = 'v') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, value]));
const statusUrls = (n: number) => Array.from({ length: n }, (_, i) => `http://127.0.0.1:1/status/${i}`);
const options = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ name: `vault-${i}`, apy: 4 + (i % 7), liquidity_usd: 1e6, risk_score: 20 }));

t.test('the Limits table, one under and one over', async (t) => {
  const cg = await startCoinGecko();
  const assets = Array.from({ length: 51 }, (_, i) => `stable-${i}`);
  for (const id of [...assets, 'usd-coin']) cg.setPrice(id, 'usd', 1);
  const app = await startTestApp({ PRICE_API_URL: cg.url, LOG_LEVEL: 'warn' });
  t.teardown(async () => {
    await app.close();
    await cg.close();
  });

  /** The body is served (2xx) or refused with exactly one detail at `loc` of `type`. */
  async function limit(name: string, path: string, ok: unknown, over: unknown, loc: Loc, type: string): Promise<void> {
    const served = await post(`${app.url}${path}`, ok);
    t.equal(served.status, 200, `${name}: at the limit it is served`);
    const refused = await post(`${app.url}${path}`, over);
    t.equal(refused.status, 422, `${name}: past the limit it is a 422`);
    t.same(
      Array.isArray(refused.body.detail)
        ? refused.body.detail.map((d: { loc: Loc; type: string }) => [d.loc, d.type])
        : refused.body,
      [[loc, type]],
      `${name}: ${loc.join('.')} ${type}`,
    );
  }

  t.test('body size: 256 KiB served, one byte more is a 413', async (t) => {
    t.equal(MAX_REQUEST_BODY_BYTES, 256 * KiB);
    const padded = (size: number): string => {
      const shell = '{"goal":"g","constraints":{"pad":""}}';
      return shell.replace('""', `"${'x'.repeat(size - shell.length)}"`);
    };
    t.equal(Buffer.byteLength(padded(MAX_REQUEST_BODY_BYTES)), MAX_REQUEST_BODY_BYTES);
    t.equal(
      (await post(`${app.url}/v1/decide`, padded(MAX_REQUEST_BODY_BYTES))).status,
      200,
      'exactly 256 KiB is served',
    );
    const over = await post(`${app.url}/v1/decide`, padded(MAX_REQUEST_BODY_BYTES + 1));
    t.equal(over.status, 413, '256 KiB + 1 byte is a 413');
    t.same(over.body, { detail: 'Request body too large: the limit is 256 KiB' });
    // Without a Content-Length the limit holds on the bytes as they arrive.
    const chunks = (async function* () {
      for (let i = 0; i < 40; i++)
        yield new TextEncoder().encode(i === 0 ? '{"goal":"g","constraints":{"pad":"' : 'x'.repeat(8 * KiB));
    })();
    const streamed = await fetch(`${app.url}/v1/decide`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chunks,
      duplex: 'half',
    } as unknown as RequestInit);
    t.equal(streamed.status, 413, 'a chunked body past the limit is a 413 too');
  });

  t.test('checks per decide: 20', () =>
    limit(
      'checks',
      '/v1/decide',
      { goal: 'g', checks: approvals(20) },
      { goal: 'g', checks: approvals(21) },
      ['body', 'checks'],
      'too_long',
    ),
  );

  t.test('goal: 2,000 characters (code points, not UTF-16 units)', async () => {
    await limit(
      'goal',
      '/v1/decide',
      { goal: 'g'.repeat(2000) },
      { goal: 'g'.repeat(2001) },
      ['body', 'goal'],
      'string_too_long',
    );
    await limit(
      'astral goal',
      '/v1/decide',
      { goal: '\ud83e\udd84'.repeat(2000) },
      { goal: '\ud83e\udd84'.repeat(2001) },
      ['body', 'goal'],
      'string_too_long',
    );
  });

  t.test('URLs: 2,048 characters in every URL field', async () => {
    const [ok, over] = [urlOf(2048), urlOf(2049)];
    const check = (c: Record<string, unknown>) => ({ goal: 'g', checks: [c] });
    await limit(
      'http url',
      '/v1/decide',
      check({ type: 'http', url: ok }),
      check({ type: 'http', url: over }),
      ['body', 'checks', 0, 'url'],
      'string_too_long',
    );
    await limit(
      'rpc rpc_url',
      '/v1/decide',
      check({ type: 'rpc', rpc_url: ok, method_name: 'm' }),
      check({ type: 'rpc', rpc_url: over, method_name: 'm' }),
      ['body', 'checks', 0, 'rpc_url'],
      'string_too_long',
    );
    const tx = (u: string) => check({ type: 'tx', rpc_url: u, tx_hash: `0x${'ab'.repeat(32)}` });
    await limit('tx rpc_url', '/v1/decide', tx(ok), tx(over), ['body', 'checks', 0, 'rpc_url'], 'string_too_long');
    await limit(
      'bridge status_url',
      '/v1/decide',
      check({ type: 'bridge_exploit_monitor', status_url: ok }),
      check({ type: 'bridge_exploit_monitor', status_url: over }),
      ['body', 'checks', 0, 'status_url'],
      'string_too_long',
    );
    await limit(
      'guard rpc_url',
      '/v1/guard',
      { action: 'approve', approval_amount: '1', rpc_url: ok },
      { action: 'approve', approval_amount: '1', rpc_url: over },
      ['body', 'rpc_url'],
      'string_too_long',
    );
    await limit(
      'guard bridge_status_url',
      '/v1/guard',
      { action: 'bridge', bridge_status_url: ok },
      { action: 'bridge', bridge_status_url: over },
      ['body', 'bridge_status_url'],
      'string_too_long',
    );
    await limit(
      'bridge_status_urls item',
      '/v1/agents/bridge-risk/analyze',
      { bridge_status_urls: [ok] },
      { bridge_status_urls: [HOLD, over] },
      ['body', 'bridge_status_urls', 1],
      'string_too_long',
    );
    await limit(
      'signup website',
      '/v1/api-keys/signup',
      { email: 'limits@example.com', website: `https://example.com/${'a'.repeat(2048 - 20)}` },
      { email: 'limits2@example.com', website: `https://example.com/${'a'.repeat(2049 - 20)}` },
      ['body', 'website'],
      'string_too_long',
    );
  });

  t.test('headers on http and bridge checks: 32 entries, values of 4,096 characters', async () => {
    for (const [type, field] of [
      ['http', 'url'],
      ['bridge_exploit_monitor', 'status_url'],
    ]) {
      const c = (headers: Record<string, string>) => ({ goal: 'g', checks: [{ type, [field]: HOLD, headers }] });
      await limit(
        `${type} 32 headers`,
        '/v1/decide',
        c(headersOf(32)),
        c(headersOf(33)),
        ['body', 'checks', 0, 'headers'],
        'too_long',
      );
      await limit(
        `${type} header value`,
        '/v1/decide',
        c({ 'x-token': 'v'.repeat(4096) }),
        c({ 'x-token': 'v'.repeat(4097) }),
        ['body', 'checks', 0, 'headers', 'x-token'],
        'string_too_long',
      );
    }
  });

  t.test('asset_ids: 50', async () => {
    await limit(
      'asset_ids',
      '/v1/agents/stablecoin-intelligence/analyze',
      { asset_ids: assets.slice(0, 50) },
      { asset_ids: assets },
      ['body', 'asset_ids'],
      'too_long',
    );
  });

  t.test('bridge_status_urls: 1 to 20', async () => {
    await limit(
      '20 urls',
      '/v1/agents/bridge-risk/analyze',
      { bridge_status_urls: statusUrls(20) },
      { bridge_status_urls: statusUrls(21) },
      ['body', 'bridge_status_urls'],
      'too_long',
    );
    await limit(
      '1 url',
      '/v1/agents/bridge-risk/analyze',
      { bridge_status_urls: statusUrls(1) },
      { bridge_status_urls: [] },
      ['body', 'bridge_status_urls'],
      'too_short',
    );
  });

  t.test('yield options: 1 to 100', async () => {
    await limit(
      '100 options',
      '/v1/agents/yield-routing/recommend',
      { options: options(100) },
      { options: options(101) },
      ['body', 'options'],
      'too_long',
    );
    await limit(
      '1 option',
      '/v1/agents/yield-routing/recommend',
      { options: options(1) },
      { options: [] },
      ['body', 'options'],
      'too_short',
    );
  });

  t.test('context.deadline_ms: 50 to 10,000, an integer', async () => {
    for (const [path, base] of [
      ['/v1/decide', { goal: 'g' }],
      ['/v1/guard', { action: 'approve', approval_amount: '1' }],
    ] as const) {
      await limit(
        `${path} 10000`,
        path,
        { ...base, context: { deadline_ms: 10_000 } },
        { ...base, context: { deadline_ms: 10_001 } },
        ['body', 'context', 'deadline_ms'],
        'less_than_equal',
      );
      await limit(
        `${path} 50`,
        path,
        { ...base, context: { deadline_ms: 50 } },
        { ...base, context: { deadline_ms: 49 } },
        ['body', 'context', 'deadline_ms'],
        'greater_than_equal',
      );
      await limit(
        `${path} fraction`,
        path,
        { ...base, context: { deadline_ms: 50.0 } },
        { ...base, context: { deadline_ms: 50.5 } },
        ['body', 'context', 'deadline_ms'],
        'int_type',
      );
    }
  });
});

t.test('signups: SIGNUPS_PER_HOUR per client address, then a 429', async (t) => {
  const app = await startTestApp({ BILLING: 'on', SIGNUPS_PER_HOUR: '3' });
  t.teardown(() => app.close());
  for (let i = 0; i < 3; i++)
    t.equal(
      (await post(`${app.url}/v1/api-keys/signup`, { email: `s${i}@example.com` })).status,
      200,
      `signup ${i + 1} of 3`,
    );
  const r = await post(`${app.url}/v1/api-keys/signup`, { email: 's3@example.com' });
  t.equal(r.status, 429, 'the fourth in the hour is a 429');
  t.match(r.body, { detail: /at most 3 an hour/, limit: 3, retry_after_s: Number });
  t.equal(r.headers.get('retry-after'), String(r.body.retry_after_s), 'Retry-After says when');
  t.equal((await app.store.listApiKeys()).length, 3, 'no fourth key');
});

/** One raw HTTP/1.1 exchange over a fresh socket; the whole answer as text. */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => (data += d));
    s.on('close', () => resolve(data));
    s.on('error', reject);
    s.end(request);
  });
}

t.test('request headers: past 16 KiB a 431 from the real process, which keeps serving', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'preflight-limits-'));
  const svc = await spawnService({
    BILLING: 'off',
    POOL_THREADS: '0',
    DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
  });
  t.teardown(async () => {
    svc.child.kill('SIGTERM');
    await svc.exited;
    rmSync(dir, { recursive: true, force: true });
  });
  // /health answers 503 while the service warms up; the limits are about a ready process.
  await untilReady(svc.url);
  const port = Number(new URL(svc.url).port);
  // Node counts the header section; a little slack either side keeps this about the limit, not llhttp's bookkeeping.
  const request = (headerBytes: number): string => {
    const fixed = 'Host: 127.0.0.1\r\nConnection: close\r\nX-Pad: \r\n';
    return `GET /health HTTP/1.1\r\n${fixed.replace('X-Pad: ', `X-Pad: ${'a'.repeat(headerBytes - fixed.length)}`)}\r\n`;
  };
  const under = await raw(port, request(16 * KiB - 128));
  t.match(under, /^HTTP\/1\.1 200 /, 'headers just under 16 KiB are served');
  const over = await raw(port, request(16 * KiB + 128));
  t.match(over, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/, 'just over 16 KiB is a 431');
  t.match(over, /\r\n\r\n\{"detail":"Request headers too large: the limit is 16 KiB"\}$/, 'with a JSON detail');
  const garbled = await raw(port, 'NOT AN HTTP REQUEST\r\n\r\n');
  t.match(
    garbled,
    /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*\{"detail":"Malformed HTTP request"\}$/,
    'a malformed request is a 400 with a JSON detail',
  );
  const many = await raw(
    port,
    `GET /health HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 400 }, (_, i) => `X-${i}: ${'b'.repeat(40)}\r\n`).join('')}\r\n`,
  );
  t.match(many, /^HTTP\/1\.1 431 /, 'many small headers past 16 KiB are a 431 too');
  const health = await fetch(`${svc.url}/health`);
  t.equal(health.status, 200, 'the process is still serving');
});
