import t from 'tap';
import { getDexPair } from '../../src/upstreams/dex.js';
import { startDexScreener, type DexScreenerEmulator } from '../emulators/dexscreener.js';
import type { Fault } from '../emulators/core.js';
import { configWith } from './config.js';

const PAIR = '0x88A43bbDF9D098eEC7bCEda4e2494615dfD9bB9C';
let dex: DexScreenerEmulator;
t.before(async () => {
  dex = await startDexScreener();
});
t.teardown(() => dex.close());
t.beforeEach(() => {
  dex.fault = null;
  dex.resetStats();
});
const config = () => configWith({ DEX_API_URL: dex.url });

t.test('a pair, normalised: string prices become numbers', async (t) => {
  dex.setPair('base', PAIR, {
    priceUsd: '3120.55',
    priceNative: '3120.55',
    liquidityUsd: 1_234_567.5,
    volumeH24: 999,
    buysH24: 40,
    sellsH24: 38,
    fdv: 5e9,
    marketCap: 4e9,
    pairCreatedAt: 1710685033000,
  });
  const r = await getDexPair(config(), 'base', PAIR);
  t.same(r.ok && r.data, {
    chainId: 'base',
    pairAddress: PAIR,
    dexId: 'uniswap',
    url: `https://dexscreener.com/base/${PAIR.toLowerCase()}`,
    baseSymbol: 'WETH',
    quoteSymbol: 'USDC',
    priceUsd: 3120.55,
    priceNative: 3120.55,
    liquidityUsd: 1_234_567.5,
    volumeH24: 999,
    buysH24: 40,
    sellsH24: 38,
    fdv: 5e9,
    marketCap: 4e9,
    pairCreatedAt: 1710685033000,
  });
  t.equal(r.ok && r.source, 'dex_provider');
  t.equal(dex.received[0].path, `/latest/dex/pairs/base/${PAIR}`);
});

t.test('fields the provider leaves out stay null, never 0', async (t) => {
  dex.setPair('base', PAIR, {
    pairCreatedAt: null,
    fdv: null,
    marketCap: null,
    liquidityUsd: null,
    buysH24: null,
    sellsH24: null,
    volumeH24: null,
    priceUsd: null,
  });
  const r = await getDexPair(config(), 'base', PAIR);
  const d = r.ok ? r.data : null;
  for (const k of [
    'pairCreatedAt',
    'fdv',
    'marketCap',
    'liquidityUsd',
    'buysH24',
    'sellsH24',
    'volumeH24',
    'priceUsd',
  ] as const)
    t.equal(d?.[k], null, k);
  t.equal(d?.priceNative, 3120.55);
});

t.test('odd values: unparsable strings are null, numeric strings anywhere are numbers', async (t) => {
  dex.setRawPair('base', PAIR, {
    chainId: 'base',
    pairAddress: PAIR,
    priceUsd: 'n/a',
    liquidity: { usd: '1500.25' },
    txns: { h24: { buys: '12', sells: null } },
    volume: {},
    fdv: 'Infinity',
  });
  const r = await getDexPair(config(), 'base', PAIR);
  const d = r.ok ? r.data : null;
  t.equal(d?.priceUsd, null);
  t.equal(d?.liquidityUsd, 1500.25);
  t.equal(d?.buysH24, 12);
  t.equal(d?.sellsH24, null);
  t.equal(d?.volumeH24, null);
  t.equal(d?.fdv, null);
  t.equal(d?.dexId, null);
});

t.test('an unknown pair is null, not an error', async (t) => {
  const r = await getDexPair(config(), 'base', '0x0000000000000000000000000000000000000001');
  t.equal(r.ok, true);
  t.equal(r.ok && r.data, null);
  // The older shape without `pair`: pairs null or empty.
  dex.fault = { status: 200, body: '{"schemaVersion":"1.0.0","pairs":null}' };
  const legacy = await getDexPair(config(), 'base', PAIR);
  t.equal(legacy.ok && legacy.data, null);
  dex.fault = { status: 200, body: '{"schemaVersion":"1.0.0","pairs":[]}' };
  const empty = await getDexPair(config(), 'base', PAIR);
  t.equal(empty.ok && empty.data, null);
});

t.test('a pairs list answers with the requested pair, never another pool', async (t) => {
  const other = { chainId: 'base', pairAddress: '0xother', liquidity: { usd: 1 } };
  const mine = { chainId: 'base', pairAddress: PAIR.toLowerCase(), liquidity: { usd: 777 } };
  dex.fault = { status: 200, body: JSON.stringify({ schemaVersion: '1.0.0', pairs: [other, mine] }) };
  const r = await getDexPair(config(), 'base', PAIR);
  t.equal(r.ok && r.data?.liquidityUsd, 777);
  dex.fault = {
    status: 200,
    body: JSON.stringify({ schemaVersion: '1.0.0', pairs: [other, { ...other, pairAddress: '0xthird' }] }),
  };
  const none = await getDexPair(config(), 'base', PAIR);
  t.equal(none.ok && none.data, null);
});

t.test('errors: 429, 5xx, 404, garbage, wrong shape, hang', async (t) => {
  dex.setPair('base', PAIR);
  const cases: [Fault, string][] = [
    [{ status: 429, retryAfter: 60 }, 'upstream_rate_limited'],
    [{ status: 502, body: '<html>bad gateway</html>' }, 'upstream_http_error'],
    [{ status: 404, body: '{"error":"not found"}' }, 'upstream_http_error'],
    [{ garbage: true }, 'upstream_bad_response'],
    [{ status: 200, body: '{"unexpected":true}' }, 'upstream_bad_response'],
  ];
  for (const [fault, reason] of cases) {
    dex.fault = fault;
    const r = await getDexPair(config(), 'base', PAIR);
    t.equal(!r.ok && r.reason, reason, JSON.stringify(fault));
  }
  dex.fault = { status: 429, retryAfter: 60 };
  const limited = await getDexPair(config(), 'base', PAIR);
  t.equal(!limited.ok && limited.retryAfterS, 60);
  dex.fault = { hang: true };
  const hung = await getDexPair(config(), 'base', PAIR, AbortSignal.timeout(100));
  t.equal(!hung.ok && hung.reason, 'upstream_timeout');
});
