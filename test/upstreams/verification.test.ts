import t from 'tap';
import { getEtherscanStatus, getSourcifyStatus } from '../../src/upstreams/verification.js';
import { SOURCIFY_429_BODY, SOURCIFY_500_BODY, startSourcify, type SourcifyEmulator } from '../emulators/sourcify.js';
import { ETHERSCAN_RATE_LIMIT_BODY, startEtherscan, type EtherscanEmulator } from '../emulators/etherscan.js';
import { configWith } from './config.js';

const ADDR = '0xDFEBAd708F803af22e81044aD228Ff77C83C935c';
let sf: SourcifyEmulator;
let es: EtherscanEmulator;
t.before(async () => {
  sf = await startSourcify();
  es = await startEtherscan();
});
t.teardown(async () => {
  await sf.close();
  await es.close();
});
t.beforeEach(() => {
  sf.fault = es.fault = null;
  sf.resetStats();
  es.resetStats();
});
const config = (env: Record<string, string> = {}) =>
  configWith({ SOURCIFY_URL: sf.url, ETHERSCAN_API_URL: es.apiUrl, ETHERSCAN_API_KEY: es.apiKey, ...env });

t.test('sourcify: verified, partially verified and not verified', async (t) => {
  sf.setVerified(8453, ADDR, 'exact_match').setVerified(1, ADDR, 'match');
  t.same(await getSourcifyStatus(config(), 8453, ADDR).then((r) => r.ok && r.data), {
    verified: true,
    match: 'exact_match',
  });
  t.same(await getSourcifyStatus(config(), 1, ADDR.toLowerCase()).then((r) => r.ok && r.data), {
    verified: true,
    match: 'match',
  });
  const not = await getSourcifyStatus(config(), 10, ADDR);
  t.same(not.ok && not.data, { verified: false, match: null }, '404 with match null is an answer');
  t.equal(not.ok && not.source, 'sourcify');
  t.equal(sf.received[0].path, `/v2/contract/8453/${ADDR}`);
});

t.test('sourcify errors', async (t) => {
  sf.unsupportedChains.add(9429413);
  const unsupported = await getSourcifyStatus(config(), 9429413, ADDR);
  t.equal(!unsupported.ok && unsupported.reason, 'upstream_error');
  t.match(!unsupported.ok && unsupported.message, /unsupported_chain/);

  sf.fault = { status: 429, retryAfter: 5, body: SOURCIFY_429_BODY };
  const limited = await getSourcifyStatus(config(), 8453, ADDR);
  t.equal(!limited.ok && limited.reason, 'upstream_rate_limited');
  t.equal(!limited.ok && limited.retryAfterS, 5);

  sf.fault = { status: 500, body: SOURCIFY_500_BODY };
  const broken = await getSourcifyStatus(config(), 8453, ADDR);
  t.equal(!broken.ok && broken.reason, 'upstream_http_error');

  sf.fault = null;
  const wrongBase = await getSourcifyStatus(config({ SOURCIFY_URL: `${sf.url}/not-here` }), 8453, ADDR);
  t.equal(
    !wrongBase.ok && wrongBase.reason,
    'upstream_http_error',
    'a 404 without a lookup body is not "not verified"',
  );

  sf.fault = { garbage: true };
  const garbage = await getSourcifyStatus(config(), 8453, ADDR);
  t.equal(!garbage.ok && garbage.reason, 'upstream_bad_response');
});

t.test('etherscan: verified and not verified (status "1" both)', async (t) => {
  es.setVerified(8453, ADDR);
  t.same(await getEtherscanStatus(config(), 8453, ADDR).then((r) => r.ok && r.data), {
    verified: true,
    match: 'verified',
  });
  const not = await getEtherscanStatus(config(), 8453, '0x0000000000000000000000000000000000000bad');
  t.same(not.ok && not.data, { verified: false, match: null });
  const q = es.received[0].query;
  t.same(
    [q.get('chainid'), q.get('module'), q.get('action'), q.get('address')],
    ['8453', 'contract', 'getsourcecode', ADDR],
  );
});

t.test('etherscan errors arrive as HTTP 200 with status "0"; the key never leaks', async (t) => {
  const key = 'SECRETKEY123';
  const wrongKey = await getEtherscanStatus(config({ ETHERSCAN_API_KEY: key }), 8453, ADDR);
  t.equal(!wrongKey.ok && wrongKey.reason, 'upstream_error');
  t.match(!wrongKey.ok && wrongKey.message, /Invalid API Key/);
  t.notMatch(!wrongKey.ok && wrongKey.message, new RegExp(key));

  es.fault = { status: 200, body: ETHERSCAN_RATE_LIMIT_BODY };
  const limited = await getEtherscanStatus(config(), 8453, ADDR);
  t.equal(!limited.ok && limited.reason, 'upstream_rate_limited');

  es.fault = {
    status: 200,
    body: JSON.stringify({ status: '0', message: 'NOTOK', result: `Invalid key ${es.apiKey} for this endpoint` }),
  };
  const echoed = await getEtherscanStatus(config(), 8453, ADDR);
  t.notMatch(!echoed.ok && echoed.message, new RegExp(es.apiKey), 'a key echoed by the provider is masked');

  es.fault = { status: 503 };
  const down = await getEtherscanStatus(config(), 8453, ADDR);
  t.equal(!down.ok && down.reason, 'upstream_http_error');

  es.fault = { status: 200, body: '{"status":"1","message":"OK","result":[]}' };
  const empty = await getEtherscanStatus(config(), 8453, ADDR);
  t.equal(!empty.ok && empty.reason, 'upstream_bad_response');

  es.fault = null;
  es.resetStats();
  const noKey = await getEtherscanStatus(configWith({ ETHERSCAN_API_URL: es.apiUrl }), 8453, ADDR);
  t.equal(!noKey.ok && noKey.reason, 'upstream_error');
  t.equal(es.stats.requests, 0, 'no call without a key');
});
