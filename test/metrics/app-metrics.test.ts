/**
 * GET /metrics on the real app: the scrape reflects the traffic the app served, labels carry route
 * patterns and never a URL, address or key, METRICS_TOKEN guards the endpoint, and promtool
 * accepts the exposition.
 */
import t from 'tap';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.js';
import { compose } from '../../src/compose.js';
import { buildApp } from '../../src/app.js';
import { OFFLINE_UPSTREAMS } from '../helpers/offline.js';
import { captureLogger, post } from '../helpers/app.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { promtool, promtoolGate } from '../ops/promtool.js';

const TOKEN = 'scrape-secret-7f3a';

/** The production wiring (compose) with billing off, a SQLite file and an emulated price provider. */
async function startApp(env: Record<string, string>) {
  const cg = await startCoinGecko();
  cg.setPrice('ethereum', 'usd', 3120.55);
  const dir = mkdtempSync(join(tmpdir(), 'metrics-app-'));
  const config = loadConfig({
    BILLING: 'off',
    POOL_THREADS: '0',
    ...OFFLINE_UPSTREAMS,
    PRICE_API_URL: cg.url,
    DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
    ...env,
  });
  const { logger } = captureLogger('silent');
  const service = await compose(config, logger);
  const server = http.createServer(buildApp(service.deps));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.close();
      await cg.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const scrape = (url: string, auth?: string) =>
  fetch(`${url}/metrics`, { headers: auth === undefined ? {} : { authorization: auth } });

t.test('the scrape shows the traffic, by route pattern, without URLs or addresses', async (t) => {
  const app = await startApp({ METRICS_TOKEN: TOKEN });
  t.teardown(() => app.close());

  const ok = await post(`${app.url}/v1/decide`, {
    goal: 'check eth',
    checks: [{ type: 'price', asset_id: 'ethereum', min_price: 1000 }],
  });
  t.equal(ok.status, 200);
  t.equal(ok.body.verdict, 'proceed');
  const again = await post(`${app.url}/v1/decide`, {
    goal: 'check eth',
    checks: [{ type: 'price', asset_id: 'ethereum', min_price: 1000 }],
  });
  t.equal(again.status, 200);
  const bad = await post(`${app.url}/v1/decide`, { goal: 'x', checks: [{ type: 'price' }] });
  t.equal(bad.status, 422);
  const lost = await fetch(`${app.url}/v1/contracts/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913?key=abc`);
  t.equal(lost.status, 404);

  const res = await scrape(app.url, `Bearer ${TOKEN}`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  t.match(text, /preflight_http_request_duration_seconds_count\{route="\/v1\/decide",method="POST",status="200"\} 2\n/);
  t.match(text, /preflight_http_request_duration_seconds_count\{route="\/v1\/decide",method="POST",status="422"\} 1\n/);
  t.match(
    text,
    /preflight_http_request_duration_seconds_count\{route="unmatched",method="GET",status="404"\} 1\n/,
    'an unknown path is one series, not its URL',
  );
  t.match(text, /preflight_verdicts_total\{endpoint="\/v1\/decide",verdict="proceed"\} 2\n/);
  t.match(text, /preflight_checks_total\{type="price",status="pass"\} 2\n/);
  t.match(text, /preflight_cache_lookups_total\{result="miss"\} 1\n/);
  t.match(text, /preflight_cache_lookups_total\{result="hit"\} 1\n/);
  t.match(text, /preflight_upstream_requests_total\{upstream="price_provider",outcome="ok"\} 1\n/);
  t.match(text, /preflight_pool_threads 0\n/, 'inline mode reports zero threads');
  t.match(
    text,
    /preflight_payment_ledger_entries\{state="settled"\} 0\n/,
    'the ledger gauge reads the store at scrape time',
  );

  const labelValues = [...text.matchAll(/="([^"]*)"/g)].map((m) => m[1]);
  t.ok(labelValues.length > 20);
  for (const v of labelValues) {
    if (/:\/\/|0x[0-9a-fA-F]{8,}|127\.0\.0\.1|\?|ethereum|abc/.test(v)) t.fail(`label value leaks request data: ${v}`);
  }
});

t.test('METRICS_TOKEN guards the endpoint with a Bearer token', async (t) => {
  const app = await startApp({ METRICS_TOKEN: TOKEN });
  t.teardown(() => app.close());
  for (const auth of [
    undefined,
    'Bearer wrong-token',
    `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`,
    TOKEN,
  ]) {
    const res = await scrape(app.url, auth);
    t.equal(res.status, 401, `refused: ${auth ?? 'no header'}`);
    t.match(res.headers.get('www-authenticate'), /^Bearer/);
    const body = (await res.json()) as { detail: string };
    t.match(body.detail, /METRICS_TOKEN/);
    t.notMatch(body.detail, TOKEN, 'the answer never echoes the token');
  }
  t.equal((await scrape(app.url, `bearer ${TOKEN}`)).status, 200, 'the scheme is case-insensitive');
});

t.test('without METRICS_TOKEN the endpoint is open', async (t) => {
  const app = await startApp({});
  t.teardown(() => app.close());
  const res = await scrape(app.url);
  t.equal(res.status, 200);
  t.match(await res.text(), /# TYPE preflight_http_request_duration_seconds histogram/);
});

const gate = promtoolGate();
t.test('promtool accepts a scrape of the real app', { skip: gate.skip }, async (t) => {
  if (gate.fail !== null) return t.fail(gate.fail);
  const app = await startApp({});
  t.teardown(() => app.close());
  await post(`${app.url}/v1/decide`, { goal: 'check eth', checks: [{ type: 'price', asset_id: 'ethereum' }] });
  const text = await (await scrape(app.url)).text();
  const r = promtool(['check', 'metrics'], { input: text });
  t.equal(r.status, 0, r.output);
  t.equal(r.output.trim(), '', 'no lint findings');
});
