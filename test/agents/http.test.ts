/** The three analysis agents over HTTP with the real engine and emulated upstreams on loopback. */
import t from 'tap';
import net from 'node:net';
import {
  StablecoinIntelligenceResponse as validStablecoin,
  BridgeRiskResponse as validBridge,
  YieldRoutingResponse as validYield,
} from '../../src/generated/validators.js';
import { post, type TestApp } from '../helpers/app.js';
import { startCoinGecko, CG_RATE_LIMIT_BODY, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { startStatusPage, type StatusPageEmulator } from '../emulators/statuspage.js';
import { startGuardApp } from '../guard/harness.js';
import { timersOf } from '../helpers/timers.js';

let cg: CoinGeckoEmulator;
let pages: StatusPageEmulator;
let app: TestApp;
const now = Math.floor(Date.now() / 1000);

/** A loopback port with nothing listening: connecting is refused. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

t.before(async () => {
  [cg, pages] = await Promise.all([startCoinGecko(), startStatusPage()]);
  cg.setPrice('usd-coin', 'usd', 0.9998, now - 20)
    .setPrice('tether', 'usd', 1.0004, now - 30)
    .setPrice('dai', 'usd', 0.9991, now - 40)
    .setPrice('ethena-usde', 'usd', 0.993, now - 50)
    .setPrice('paypal-usd', 'usd', 0.9712, now - 60)
    .setPrice('broken-usd', 'usd', 0.9, now - 10)
    .setPrice('usd-coin', 'eur', 0.92, now - 20);
  app = await startGuardApp({ PRICE_API_URL: cg.url, ALLOW_PRIVATE_TARGETS: 'true', REQUEST_DEADLINE_MS: '3000' });
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([cg?.close(), pages?.close()]);
});

t.test('an answered stablecoin call leaves no timer of its deadline running', async (t) => {
  const res = await post(`${app.url}/v1/agents/stablecoin-intelligence/analyze`, {
    asset_ids: ['usd-coin', 'dai'],
    quote: 'usd',
    context: { deadline_ms: 4321 },
  });
  t.equal(res.status, 200);
  t.equal(await timersOf(4321), 0, 'nothing fires later in another request');
});

t.test('stablecoin intelligence: six assets, one upstream request', async (t) => {
  cg.resetStats();
  const body = { asset_ids: ['usd-coin', 'tether', 'dai', 'ethena-usde', 'paypal-usd', 'not-a-coin'] };
  const res = await post(`${app.url}/v1/agents/stablecoin-intelligence/analyze`, body);
  t.equal(res.status, 200);
  t.ok(validStablecoin(res.body), 'matches StablecoinIntelligenceResponse');
  t.equal(cg.stats.byPath['/simple/price'], 1, 'one upstream call for all six');
  t.equal(cg.received[0].query.get('ids'), 'usd-coin,tether,dai,ethena-usde,paypal-usd,not-a-coin');
  const by = Object.fromEntries(res.body.assets.map((a: any) => [a.asset_id, a]));
  t.same(Object.fromEntries(Object.entries(by).map(([k, a]: [string, any]) => [k, a.status])), {
    'usd-coin': 'pegged',
    tether: 'pegged',
    dai: 'pegged',
    'ethena-usde': 'warning',
    'paypal-usd': 'depegged',
    'not-a-coin': 'unknown',
  });
  t.match(by['paypal-usd'], { price: 0.9712, deviation_pct: 0.0288, reason: 'depegged', age_s: Number });
  t.match(by['paypal-usd'].message, /paypal-usd at 0\.9712 usd is 2\.88% off peg; block limit 2%/);
  t.equal(by['usd-coin'].last_updated_at, new Date((now - 20) * 1000).toISOString());
  t.match(res.body.summary, {
    worst_asset: 'paypal-usd',
    worst_status: 'depegged',
    worst_deviation_pct: 0.0288,
    counts: { pegged: 3, warning: 1, depegged: 1, unknown: 1 },
  });
  t.equal(res.body.verdict, 'block');
  t.equal(res.body.risk, 'high');
  t.same(res.body.failure_modes, [
    'stablecoin_depeg[ethena-usde]:depeg_warning',
    'stablecoin_depeg[paypal-usd]:depegged',
    'stablecoin_depeg[not-a-coin]:unknown_asset',
  ]);

  const again = await post(`${app.url}/v1/agents/stablecoin-intelligence/analyze`, body);
  t.equal(again.body.cached, true, 'the snapshot is reused within its lifetime');
  t.equal(cg.stats.byPath['/simple/price'], 1, 'still one upstream call');
});

t.test('stablecoin intelligence: defaults, thresholds and quote', async (t) => {
  cg.resetStats();
  const res = await post(`${app.url}/v1/agents/stablecoin-intelligence/analyze`, {
    warn_deviation_pct: 0.01,
    block_deviation_pct: 0.05,
  });
  t.ok(validStablecoin(res.body));
  t.same(
    res.body.assets.map((a: any) => a.asset_id),
    ['usd-coin', 'tether', 'dai', 'ethena-usde', 'paypal-usd'],
  );
  t.same(
    res.body.assets.map((a: any) => a.status),
    ['pegged', 'pegged', 'pegged', 'pegged', 'warning'],
  );
  t.equal(res.body.verdict, 'wait');
  t.type(res.body.retry_after_s, 'number');
  t.equal(cg.stats.requests, 1);
  const eur = await post(`${app.url}/v1/agents/stablecoin-intelligence/analyze`, {
    asset_ids: ['USD-Coin'],
    quote: 'EUR',
  });
  t.match(
    eur.body.assets[0],
    { asset_id: 'usd-coin', status: 'depegged', price: 0.92 },
    'judged against 1 unit of the quote',
  );
});

t.test('stablecoin intelligence: a rate-limited provider leaves every peg unknown and waits', async (t) => {
  cg.faultOn('/simple/price', { status: 429, retryAfter: 7, body: CG_RATE_LIMIT_BODY, times: 1 });
  const res = await post(`${app.url}/v1/agents/stablecoin-intelligence/analyze`, { asset_ids: ['tether', 'dai'] });
  t.ok(validStablecoin(res.body));
  t.same(
    res.body.assets.map((a: any) => [a.status, a.reason]),
    [
      ['unknown', 'upstream_rate_limited'],
      ['unknown', 'upstream_rate_limited'],
    ],
  );
  t.equal(res.body.verdict, 'wait');
  t.equal(res.body.retry_after_s, 7);
  const next = await post(`${app.url}/v1/agents/stablecoin-intelligence/analyze`, { asset_ids: ['tether', 'dai'] });
  t.equal(next.body.verdict, 'proceed', 'a failure is not kept: the next call asks again');
});

t.test('bridge risk: one result per URL, checked concurrently', async (t) => {
  pages.setPage(
    '/notice',
    '<html><body><h1>Deposits are paused</h1><p>We are investigating an exploit.</p></body></html>',
  );
  pages.setPage('/slow-a', '<p>All systems normal</p>');
  pages.setPage('/slow-b', '<p>All systems normal</p>');
  pages.faultOn('/slow-', { delayMs: 300 });
  const urls = [`${pages.url}/api/v2/status.json`, `${pages.url}/notice`, `${pages.url}/slow-a`, `${pages.url}/slow-b`];
  pages.resetStats();
  const res = await post(`${app.url}/v1/agents/bridge-risk/analyze`, { bridge_status_urls: urls });
  t.ok(pages.stats.maxInFlight >= 2, 'the slow pages were fetched at the same time');
  pages.faultOn('/slow-', null);
  t.ok(validBridge(res.body), 'matches BridgeRiskResponse');
  t.same(
    res.body.bridges.map((b: any) => [b.status_url, b.status, b.http_status]),
    [
      [urls[0], 'pass', 200],
      [urls[1], 'fail', 200],
      [urls[2], 'pass', 200],
      [urls[3], 'pass', 200],
    ],
  );
  t.equal(res.body.bridges[0].indicator, 'none');
  t.same(res.body.bridges[1].keywords_found.sort(), ['exploit', 'paused']);
  t.equal(res.body.verdict, 'block');
  t.same(res.body.failure_modes, ['bridge_exploit_monitor[1]:danger_keyword']);
  t.equal(res.body.evidence.length, 4);
});

t.test('bridge risk: strict mode waits on an unreachable page; non-strict proceeds', async (t) => {
  const dead = `http://127.0.0.1:${await closedPort()}/status`;
  const urls = [`${pages.url}/api/v2/status.json`, dead];
  const strict = await post(`${app.url}/v1/agents/bridge-risk/analyze`, { bridge_status_urls: urls });
  t.ok(validBridge(strict.body));
  t.same(
    strict.body.bridges.map((b: any) => b.status),
    ['pass', 'error'],
  );
  t.equal(strict.body.bridges[1].http_status, null);
  t.equal(strict.body.verdict, 'wait');
  t.equal(strict.body.risk, 'medium');
  const lenient = await post(`${app.url}/v1/agents/bridge-risk/analyze`, {
    bridge_status_urls: urls,
    strict_mode: false,
  });
  t.equal(lenient.body.verdict, 'proceed');
  t.equal(lenient.body.risk, 'medium');
  t.equal(lenient.body.strict_mode, false);
  pages.setIndicator('minor');
  t.teardown(() => void pages.setIndicator('none'));
  const minor = await post(`${app.url}/v1/agents/bridge-risk/analyze`, {
    bridge_status_urls: [`${pages.url}/api/v2/status.json?fresh=1`],
    strict_mode: false,
  });
  t.equal(minor.body.bridges[0].indicator, 'minor');
  t.equal(minor.body.verdict, 'proceed', 'non-strict: a warning proceeds');
  t.equal(minor.body.risk, 'medium');
});

t.test('yield routing: exclusions with reasons, one peg check per distinct stablecoin', async (t) => {
  cg.resetStats();
  const res = await post(`${app.url}/v1/agents/yield-routing/recommend`, {
    options: [
      { name: 'thin-vault', apy: 40, risk_score: 10, liquidity_usd: 20_000, stablecoin_asset_id: 'tether' },
      { name: 'risky-vault', apy: 25, risk_score: 85, liquidity_usd: 5_000_000, stablecoin_asset_id: 'tether' },
      { name: 'depeg-vault', apy: 20, risk_score: 10, liquidity_usd: 5_000_000, stablecoin_asset_id: 'broken-usd' },
      {
        name: 'base-vault',
        chain: 'base',
        apy: 10,
        risk_score: 50,
        liquidity_usd: 2_000_000,
        stablecoin_asset_id: 'tether',
      },
      {
        name: 'arb-vault',
        chain: 'arbitrum',
        apy: 5,
        risk_score: 0,
        liquidity_usd: 2_000_000,
        stablecoin_asset_id: 'tether',
      },
    ],
    prefer_chain: 'arbitrum',
  });
  t.equal(res.status, 200);
  t.ok(validYield(res.body), 'matches YieldRoutingResponse');
  t.same(
    res.body.excluded.map((e: any) => [e.name, e.reasons.map((r: any) => r.code)]),
    [
      ['thin-vault', ['liquidity_below_min']],
      ['risky-vault', ['risk_above_max']],
      ['depeg-vault', ['stablecoin_depegged']],
    ],
  );
  t.match(res.body.excluded[2].reasons[0].message, /broken-usd at 0\.9 usd is 10% off peg/);
  t.same(
    res.body.ranked.map((r: any) => [r.rank, r.name, r.score, r.preferred_chain]),
    [
      [1, 'arb-vault', 5, true],
      [2, 'base-vault', 5, false],
    ],
  );
  t.equal(res.body.recommended.name, 'arb-vault', 'prefer_chain breaks the tie');
  t.match(
    res.body.summary,
    /^Recommended arb-vault on arbitrum: 5% APY at risk 0 scores 5, preferred chain breaking a tie; 2 of 5 option\(s\) qualify, 3 excluded\.$/,
  );
  t.same(
    res.body.stablecoins.map((s: any) => [s.asset_id, s.status]),
    [
      ['tether', 'pegged'],
      ['broken-usd', 'depegged'],
    ],
  );
  t.equal(cg.stats.byPath['/simple/price'], 2, 'tether checked once for four options, broken-usd once');

  const other = await post(`${app.url}/v1/agents/yield-routing/recommend`, {
    options: [
      {
        name: 'base-vault',
        chain: 'base',
        apy: 10,
        risk_score: 50,
        liquidity_usd: 2_000_000,
        stablecoin_asset_id: 'tether',
      },
      {
        name: 'arb-vault',
        chain: 'arbitrum',
        apy: 5,
        risk_score: 0,
        liquidity_usd: 2_000_000,
        stablecoin_asset_id: 'tether',
      },
    ],
    prefer_chain: 'base',
  });
  t.equal(other.body.recommended.name, 'base-vault');
  t.equal(cg.stats.byPath['/simple/price'], 2, 'the peg answer came from the engine cache');
});

t.test('yield routing: nothing qualifies', async (t) => {
  const res = await post(`${app.url}/v1/agents/yield-routing/recommend`, {
    options: [{ name: 'tiny', apy: 12, liquidity_usd: 10 }],
  });
  t.ok(validYield(res.body));
  t.equal(res.body.recommended, null);
  t.same(res.body.ranked, []);
  t.match(res.body.summary, /No option qualifies/);
});
