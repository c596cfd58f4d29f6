/**
 * The warm-up a thread runs before it is ready (src/engine/warm-up.ts, src/http/warm-up.ts): its
 * stand-in answers make every warm-up check take its passing path (the one a real answer takes,
 * with its number formats), its bodies pass the request rules, and a check leaves no timer behind
 * once it has answered, while one that hangs is still cut at its hard timeout.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { runTimedCheck } from '../../src/engine/timed-check.js';
import { WARM_TIMEOUT_MS, standInBody, warmUp, warmUpItems } from '../../src/engine/warm-up.js';
import { warmEngine, warmEventLoop, warmUpBodies, warmValidators } from '../../src/http/warm-up.js';
import { closeDispatchers } from '../../src/net/dispatchers.js';
import { OFFLINE_UPSTREAMS } from '../helpers/offline.js';
import { timersOf } from '../helpers/timers.js';

// Providers on a closed loopback port: the warm-up's connections opened ahead go nowhere else.
const config = loadConfig({ ...OFFLINE_UPSTREAMS });

async function standIn(handler: (url: string) => string | null) {
  const server = createServer((req, res) => {
    req.resume();
    const body = handler(req.url ?? '/');
    if (body === null) return; // never answers
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const local = {
    ...config,
    priceApiUrl: base,
    dexApiUrl: base,
    sourcifyUrl: base,
    rpcUrls: { ...config.rpcUrls, base },
    allowPrivateTargets: true,
  };
  return {
    base,
    local,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

t.teardown(closeDispatchers);

t.test('every warm-up check passes on the stand-in: the passing path is what gets compiled', async (t) => {
  const s = await standIn((url) => standInBody(url, Math.floor(Date.now() / 1000)));
  t.teardown(s.close);
  const items = warmUpItems(s.base);
  t.same(
    items.map((i) => i.type).sort(),
    ['bridge_exploit_monitor', 'contract_verified', 'dex_price', 'price', 'stablecoin_depeg'],
    'one of each kind a decide and a bridge-risk call run',
  );
  const results = await Promise.all(items.map((i) => runTimedCheck(i, s.local, 5000)));
  for (const r of results) {
    const item = items.find((i) => i.id === r.id);
    t.equal(r.outcome.status, 'pass', `${item?.type}: ${r.outcome.message}`);
    t.notMatch(r.outcome.message, /undefined|NaN/, `${item?.type}: the message is whole`);
  }
  t.match(results.map((r) => r.outcome.message).join(' '), /\$10,000,000 liquidity/, 'USD amounts were formatted');
});

t.test('the warm-up bodies pass the request rules as they stand', async (t) => {
  t.same(warmValidators(), [], 'no problem in any warm-up body');
  t.ok(
    warmUpBodies().some(([id]) => id === 'DecideRequest') && warmUpBodies().some(([id]) => id === 'GuardRequest'),
    'the decide and guard rules are both warmed',
  );
});

t.test("the event loop's warm-up runs the engine to a proceed on the stand-in, and the key lookup", async (t) => {
  t.equal(await warmEngine(config), 'proceed', 'the passing path of the engine, judge and answer');
  const looked: string[] = [];
  const problems = await warmEventLoop(config, {
    findApiKeyByHash: async (h) => {
      looked.push(h);
      return null;
    },
  });
  t.same(problems, [], 'nothing left undone');
  t.equal(looked.length, 1, 'one key lookup');
  t.match(looked[0], /^[0-9a-f]{64}$/, 'for a random hash no key has');
  t.equal(await timersOf(WARM_TIMEOUT_MS), 0, 'no timer left behind');
});

t.test('the whole warm-up finishes on its own stand-in and leaves no timer running', async (t) => {
  await warmUp(config);
  t.equal(await timersOf(WARM_TIMEOUT_MS), 0, 'no timer left for a later request to run');
});

t.test('a check that answered leaves no timer; one that hangs is cut at its hard timeout', async (t) => {
  const s = await standIn((url) => (url.includes('hang') ? null : standInBody(url, Math.floor(Date.now() / 1000))));
  t.teardown(s.close);
  const ok = await runTimedCheck(
    {
      id: 1,
      type: 'price',
      check: { type: 'price', source: 'price_provider', asset_id: 'a', quote: 'usd', min_price: 0.5 },
    },
    s.local,
    9_876,
  );
  t.equal(ok.outcome.status, 'pass');
  t.equal(await timersOf(9_876), 0, 'the hard timeout went with the answer');

  const started = performance.now();
  const hung = await runTimedCheck(
    {
      id: 2,
      type: 'bridge_exploit_monitor',
      check: { type: 'bridge_exploit_monitor', status_url: `${s.base}/hang/status.json`, expect_status: 200 },
    },
    s.local,
    300,
  );
  const took = performance.now() - started;
  t.equal(hung.outcome.status, 'error', hung.outcome.message);
  t.equal(hung.outcome.reason, 'upstream_timeout');
  t.ok(took >= 290 && took < 3000, `cut at its hard timeout (${Math.round(took)} ms)`);
});
