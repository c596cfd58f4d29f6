/**
 * The emulators answer in the shapes of the recorded upstream bodies (test/fixtures/upstreams),
 * and the fault core does what tests rely on.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { request } from 'undici';
import { CG_PRO_KEY_ON_PUBLIC_HOST_BODY, CG_RATE_LIMIT_BODY, startCoinGecko } from './coingecko.js';
import { startDexScreener } from './dexscreener.js';
import { ETHERSCAN_INVALID_KEY_BODY, ETHERSCAN_RATE_LIMIT_BODY, startEtherscan } from './etherscan.js';
import { SOURCIFY_429_BODY, SOURCIFY_500_BODY, startSourcify } from './sourcify.js';
import { startStatusPage } from './statuspage.js';
import { startEmulator } from './core.js';

// The recorded bodies live in the repository (provenance in their PROVENANCE.md); from dist/test/emulators.
const FIXTURES =
  process.env.FIXTURES_DIR ?? fileURLToPath(new URL('../../../test/fixtures/upstreams/', import.meta.url));
const fixture = (p: string): unknown => JSON.parse(readFileSync(`${FIXTURES}${p}`, 'utf8'));
const keys = (o: unknown): string[] => Object.keys(o as object).sort();
async function get(url: string): Promise<{ status: number; json: unknown }> {
  const r = await request(url);
  return { status: r.statusCode, json: await r.body.json() };
}

t.test('shapes match the recorded upstream bodies', async (t) => {
  const cg = await startCoinGecko();
  const dex = await startDexScreener();
  const sf = await startSourcify();
  const es = await startEtherscan();
  const sp = await startStatusPage();
  t.teardown(async () => Promise.all([cg.close(), dex.close(), sf.close(), es.close(), sp.close()]));

  t.same(JSON.parse(CG_RATE_LIMIT_BODY), fixture('coingecko/error_429_rate_limit.json'));
  t.same(
    JSON.parse(CG_PRO_KEY_ON_PUBLIC_HOST_BODY),
    fixture('coingecko/error_400_pro_key_on_public_host.reconstructed.json'),
  );
  cg.setPrice('bitcoin', 'usd', 76975, 1779092258);
  const price = (await get(`${cg.url}/simple/price?ids=bitcoin&vs_currencies=usd&include_last_updated_at=true`))
    .json as Record<string, object>;
  const real = fixture('coingecko/simple_price_all_flags.oas-example.json') as Record<string, object>;
  t.same(price.bitcoin, { usd: 76975, last_updated_at: 1779092258 });
  t.ok(
    keys(price.bitcoin).every((k) => k in real.bitcoin),
    'price fields are a subset of the real ones',
  );
  // A 'live' quote is stamped with the second it is asked for, however long ago it was set.
  const seeded = Math.floor(Date.now() / 1000);
  cg.setPrice('live-asset', 'usd', 1, 'live');
  await new Promise((r) => setTimeout(r, 1100));
  const before = Math.floor(Date.now() / 1000);
  t.ok(before > seeded, 'a second has passed since the quote was set');
  const live = (await get(`${cg.url}/simple/price?ids=live-asset&vs_currencies=usd&include_last_updated_at=true`))
    .json as Record<string, { last_updated_at: number }>;
  const stamped = live['live-asset'].last_updated_at;
  t.ok(stamped >= before && stamped <= Math.floor(Date.now() / 1000), 'a live quote carries the current second');
  t.same(
    (await get(`${cg.url}/simple/price?ids=nope&vs_currencies=usd`)).json,
    fixture('coingecko/simple_price_unknown_id.json'),
  );
  // /simple/token_price/{platform}: keyed by the lower-case contract address, as upstream.
  const wbtc = '0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599';
  cg.setTokenPrice('ethereum', wbtc, 76721, 1779094527);
  const tokenPrice = (
    await get(
      `${cg.url}/simple/token_price/ethereum?contract_addresses=${wbtc}&vs_currencies=usd&include_last_updated_at=true`,
    )
  ).json as Record<string, object>;
  const realToken = fixture('coingecko/simple_token_price.oas-example.json') as Record<string, object>;
  t.same(keys(tokenPrice), keys(realToken), 'the same address key');
  const k = wbtc.toLowerCase();
  t.same(tokenPrice[k], { usd: 76721, last_updated_at: 1779094527 });
  t.ok(
    keys(tokenPrice[k]).every((f) => f in realToken[k]),
    'token price fields are a subset of the real ones',
  );

  t.same(
    (await get(`${dex.url}/latest/dex/pairs/base/0xnope`)).json,
    fixture('dexscreener/pair_not_found.latest_dex_pairs.json'),
  );
  dex.setPair('injective', 'inj17ufy5gqw33t0prwhkwa6ensv0jpj3xfvylgx8j');
  const pair = (
    (await get(`${dex.url}/latest/dex/pairs/injective/inj17ufy5gqw33t0prwhkwa6ensv0jpj3xfvylgx8j`)).json as {
      pair: object;
    }
  ).pair;
  // The 2024 capture predates fdv/marketCap; the documented schema has them.
  const realPair = (fixture('dexscreener/latest_dex_tokens_injective_2024.real.json') as { pairs: object[] }).pairs[0];
  const documented = (fixture('dexscreener/docs_reference_tokens_v1.schema-example.json') as object[])[0];
  t.ok(
    keys(pair).every((k) => k in realPair || k in documented),
    `pair fields ${keys(pair).join(',')} are real field names`,
  );

  const notVerified = await get(`${sf.url}/v2/contract/11155111/0xDFEBAd708F803af22e81044aD228Ff77C83C935c`);
  t.equal(notVerified.status, 404);
  t.same(notVerified.json, fixture('sourcify/v2_contract_not_verified_404.oas-example.json'));
  sf.setVerified(11155111, '0xDFEBAd708F803af22e81044aD228Ff77C83C935c');
  t.same(
    keys((await get(`${sf.url}/v2/contract/11155111/0xDFEBAd708F803af22e81044aD228Ff77C83C935c`)).json),
    keys(fixture('sourcify/v2_contract_minimal.oas-example.json')),
  );
  sf.unsupportedChains.add(9429413);
  t.same(
    (await get(`${sf.url}/v2/contract/9429413/0x1`)).json,
    fixture('sourcify/v2_error_400_unsupported_chain.oas-example.json'),
  );
  t.same(JSON.parse(SOURCIFY_429_BODY), fixture('sourcify/v2_error_429_too_many_requests.oas-example.json'));
  t.same(JSON.parse(SOURCIFY_500_BODY), fixture('sourcify/v2_error_500_internal.oas-example.json'));

  t.same(JSON.parse(ETHERSCAN_RATE_LIMIT_BODY), fixture('etherscan/error_rate_limit.json'));
  t.same(JSON.parse(ETHERSCAN_INVALID_KEY_BODY), fixture('etherscan/error_invalid_api_key.json'));
  t.same(
    (await get(`${es.apiUrl}?module=contract&action=getsourcecode&address=0x1&apikey=${es.apiKey}`)).json,
    fixture('etherscan/error_missing_chainid.json'),
  );
  const unverified = (
    await get(`${es.apiUrl}?chainid=1&module=contract&action=getsourcecode&address=0x1&apikey=${es.apiKey}`)
  ).json;
  t.same(unverified, fixture('etherscan/getsourcecode_unverified.reconstructed.json'));
  es.setVerified(1, '0x2');
  const verified = (
    await get(`${es.apiUrl}?chainid=1&module=contract&action=getsourcecode&address=0x2&apikey=${es.apiKey}`)
  ).json as { result: object[] };
  t.same(
    keys(verified.result[0]),
    keys((fixture('etherscan/getsourcecode_verified.docs-example.json') as { result: object[] }).result[0]),
  );

  sp.setIndicator('major');
  const status = (await get(`${sp.url}/api/v2/status.json`)).json as { status: object; page: object };
  const realStatus = fixture('statuspage/status_github_major.derived-from-real-summary.json') as {
    status: object;
    page: object;
  };
  t.same(status.status, realStatus.status);
  t.same(keys(status.page), keys(realStatus.page));
});

t.test('fault core: per-path faults win, `times` expires, stats count', async (t) => {
  const em = await startEmulator([{ method: 'GET', path: /.*/, handler: (req) => ({ body: { path: req.path } }) }]);
  t.teardown(() => em.close());
  em.fault = { status: 500 };
  em.faultOn('/special', { status: 418, times: 1 });
  t.equal((await request(`${em.url}/special/x`)).statusCode, 418);
  t.equal(
    (await request(`${em.url}/special/x`)).statusCode,
    500,
    'the per-path fault was used up; the global one applies',
  );
  em.fault = { status: 429, retryAfter: 9, times: 2 };
  const limited = await request(`${em.url}/a`);
  t.equal(limited.headers['retry-after'], '9');
  await limited.body.dump();
  t.equal((await request(`${em.url}/a`)).statusCode, 429);
  const after = await request(`${em.url}/a`);
  t.same([after.statusCode, await after.body.json()], [200, { path: '/a' }]);
  t.equal(em.stats.requests, 5);
  t.equal(em.stats.byPath['/a'], 3);
  t.equal(em.received.length, 5);

  em.fault = { dripMs: 40 };
  const started = Date.now();
  const dripped = await request(`${em.url}/abc`);
  t.same(await dripped.body.json(), { path: '/abc' });
  t.ok(Date.now() - started >= 40 * 10, 'one byte per interval');
});
