import t from 'tap';
import { getSimplePrices } from '../../src/upstreams/price.js';
import {
  CG_PRO_KEY_ON_PUBLIC_HOST_BODY,
  CG_RATE_LIMIT_BODY,
  startCoinGecko,
  type CoinGeckoEmulator,
} from '../emulators/coingecko.js';
import { configWith } from './config.js';

let cg: CoinGeckoEmulator;
t.before(async () => {
  cg = await startCoinGecko();
});
t.teardown(() => cg.close());
t.beforeEach(() => {
  cg.fault = null;
  cg.resetStats();
});
const config = () => configWith({ PRICE_API_URL: cg.url });

t.test('prices for several assets in one call; unknown ids are absent', async (t) => {
  cg.setPrice('usd-coin', 'usd', 0.9998, 1779092258).setPrice('tether', 'usd', 1.0004, 1779092200);
  const r = await getSimplePrices(config(), ['usd-coin', 'tether', 'no-such-coin'], 'USD');
  t.ok(r.ok);
  t.same(r.ok && r.data, {
    'usd-coin': { price: 0.9998, lastUpdatedAt: 1779092258 },
    tether: { price: 1.0004, lastUpdatedAt: 1779092200 },
  });
  t.equal(r.ok && r.source, 'price_provider');
  t.equal(cg.stats.requests, 1);
  const q = cg.received[0].query;
  t.equal(q.get('ids'), 'usd-coin,tether,no-such-coin');
  t.equal(q.get('vs_currencies'), 'usd');
  t.equal(q.get('include_last_updated_at'), 'true');
  t.equal(cg.received[0].headers['x-cg-demo-api-key'], undefined, 'no key configured, none sent');
});

t.test('an asset nobody knows gives an empty map', async (t) => {
  const r = await getSimplePrices(config(), ['definitely-not-listed'], 'usd');
  t.same(r.ok && r.data, {});
});

t.test('string prices are numbers, nulls stay null', async (t) => {
  cg.setPrice('usd-coin', 'usd', '0.9712', 1779000000).setPrice('dai', 'usd', null, null);
  const r = await getSimplePrices(config(), ['usd-coin', 'dai'], 'usd');
  t.same(r.ok && r.data, {
    'usd-coin': { price: 0.9712, lastUpdatedAt: 1779000000 },
    dai: { price: null, lastUpdatedAt: null },
  });
});

t.test('the API key travels in the demo or pro header, never in a message', async (t) => {
  cg.setPrice('usd-coin', 'usd', 1);
  await getSimplePrices(configWith({ PRICE_API_URL: cg.url, PRICE_API_KEY: 'CG-secret123' }), ['usd-coin'], 'usd');
  t.equal(cg.received[0].headers['x-cg-demo-api-key'], 'CG-secret123');
  cg.fault = { status: 400, body: CG_PRO_KEY_ON_PUBLIC_HOST_BODY };
  const r = await getSimplePrices(
    configWith({ PRICE_API_URL: cg.url, PRICE_API_KEY: 'CG-secret123' }),
    ['usd-coin'],
    'usd',
  );
  t.equal(!r.ok && r.reason, 'upstream_error');
  t.match(!r.ok && r.message, /10010/);
  t.notMatch(!r.ok && r.message, /secret123/);
  t.equal(!r.ok && r.status, 400);
});

t.test('rate limiting: 429 with retry-after and the error envelope', async (t) => {
  cg.fault = { status: 429, retryAfter: 119, body: CG_RATE_LIMIT_BODY };
  const r = await getSimplePrices(config(), ['usd-coin'], 'usd');
  t.equal(!r.ok && r.reason, 'upstream_rate_limited');
  t.equal(!r.ok && r.retryAfterS, 119);
  t.equal(!r.ok && r.status, 429);
  // The envelope alone (some gateways answer it with another status) still means rate limited.
  cg.fault = { status: 403, body: CG_RATE_LIMIT_BODY };
  const env = await getSimplePrices(config(), ['usd-coin'], 'usd');
  t.equal(!env.ok && env.reason, 'upstream_rate_limited');
});

t.test('server errors, garbage, truncation, resets and hangs', async (t) => {
  cg.setPrice('usd-coin', 'usd', 1);
  cg.fault = { status: 500, body: '<html>oops</html>' };
  let r = await getSimplePrices(config(), ['usd-coin'], 'usd');
  t.equal(!r.ok && r.reason, 'upstream_http_error');
  t.equal(!r.ok && r.status, 500);

  cg.fault = { garbage: true };
  r = await getSimplePrices(config(), ['usd-coin'], 'usd');
  t.equal(!r.ok && r.reason, 'upstream_bad_response');

  cg.fault = { status: 200, body: '[1,2,3]' };
  r = await getSimplePrices(config(), ['usd-coin'], 'usd');
  t.equal(!r.ok && r.reason, 'upstream_bad_response', 'a JSON array is the wrong shape');

  cg.fault = { truncate: true };
  r = await getSimplePrices(config(), ['usd-coin'], 'usd');
  t.equal(!r.ok && r.reason, 'upstream_bad_response');

  cg.fault = { reset: true, times: 1 };
  r = await getSimplePrices(config(), ['usd-coin'], 'usd');
  t.ok(r.ok, 'one reset is retried');

  cg.fault = { reset: true };
  r = await getSimplePrices(config(), ['usd-coin'], 'usd');
  t.equal(!r.ok && r.reason, 'upstream_unreachable');

  cg.fault = { hang: true };
  const started = Date.now();
  r = await getSimplePrices(config(), ['usd-coin'], 'usd', AbortSignal.timeout(150));
  t.equal(!r.ok && r.reason, 'upstream_timeout');
  t.ok(Date.now() - started < 1000, 'the signal ends the wait');

  r = await getSimplePrices(configWith({ PRICE_API_URL: cg.url, CHECK_HARD_TIMEOUT_MS: '100' }), ['usd-coin'], 'usd');
  t.equal(!r.ok && r.reason, 'upstream_timeout', 'CHECK_HARD_TIMEOUT_MS bounds a call without a signal');
});

t.test('concurrent calls share the pool and are all in flight at once', async (t) => {
  cg.setPrice('usd-coin', 'usd', 1);
  cg.fault = { delayMs: 150 };
  const rs = await Promise.all([1, 2, 3, 4].map(() => getSimplePrices(config(), ['usd-coin'], 'usd')));
  t.ok(rs.every((r) => r.ok));
  t.ok(cg.stats.maxInFlight >= 4, 'all four requests were in flight together');
});
