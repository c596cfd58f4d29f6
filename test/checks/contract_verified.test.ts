import t from 'tap';
import { contractVerified, evaluateVerified, type VerificationEvidence } from '../../src/checks/contract_verified.js';
import type { ContractVerifiedCheck } from '../../src/generated/types.js';
import type { UpstreamResult } from '../../src/net/result.js';
import { startSourcify, SOURCIFY_429_BODY, SOURCIFY_500_BODY } from '../emulators/sourcify.js';
import { startEtherscan, ETHERSCAN_RATE_LIMIT_BODY } from '../emulators/etherscan.js';
import { startJsonRpc } from '../emulators/jsonrpc.js';
import { closePools, ctx, testConfig } from './helpers.js';

t.teardown(closePools);

const ADDR = '0xDFEBAd708F803af22e81044aD228Ff77C83C935c';
const check = (extra: Partial<ContractVerifiedCheck> = {}): ContractVerifiedCheck => ({
  type: 'contract_verified',
  chain: 'base',
  contract_address: ADDR,
  ...extra,
});
const ok = <T>(data: T, source: string): UpstreamResult<T> => ({ ok: true, data, source, latencyMs: 1 });
const down = (
  source: string,
  reason: 'upstream_timeout' | 'upstream_rate_limited' = 'upstream_timeout',
): UpstreamResult<never> => ({ ok: false, reason, message: `${source}: request timed out`, source, latencyMs: 1 });
const yes = (s: string) => ok({ verified: true, match: s === 'sourcify' ? 'exact_match' : 'verified' }, s);
const no = (s: string) => ok({ verified: false, match: null }, s);
const code = (c: string) => ok([{ result: c }], 'rpc.example');

t.test('evaluateVerified table', async (t) => {
  const rows: Array<[string, VerificationEvidence, string, string | null, string | null, number]> = [
    ['Sourcify verified', { sourcify: yes('sourcify') }, 'pass', null, 'sourcify', 3600],
    ['Sourcify no, no key', { sourcify: no('sourcify') }, 'fail', 'not_verified', 'sourcify', 300],
    [
      'Sourcify no, explorer yes',
      { sourcify: no('sourcify'), etherscan: yes('etherscan') },
      'pass',
      null,
      'etherscan',
      3600,
    ],
    ['neither', { sourcify: no('sourcify'), etherscan: no('etherscan') }, 'fail', 'not_verified', 'etherscan', 300],
    [
      'no code fails first',
      { code: code('0x'), sourcify: yes('sourcify') },
      'fail',
      'not_a_contract',
      'rpc.example',
      300,
    ],
    ['code present, verified', { code: code('0x6080'), sourcify: yes('sourcify') }, 'pass', null, 'sourcify', 3600],
    [
      'code lookup failed: verification still decides',
      { code: down('rpc.example'), sourcify: yes('sourcify') },
      'pass',
      null,
      'sourcify',
      3600,
    ],
    ['Sourcify down, no key', { sourcify: down('sourcify') }, 'error', 'upstream_timeout', 'sourcify', 0],
    [
      'Sourcify down, explorer yes',
      { sourcify: down('sourcify'), etherscan: yes('etherscan') },
      'pass',
      null,
      'etherscan',
      3600,
    ],
    [
      'Sourcify down, explorer no: unproven',
      { sourcify: down('sourcify'), etherscan: no('etherscan') },
      'error',
      'upstream_timeout',
      'sourcify',
      0,
    ],
    [
      'Sourcify no, explorer rate-limited',
      { sourcify: no('sourcify'), etherscan: down('etherscan', 'upstream_rate_limited') },
      'error',
      'upstream_rate_limited',
      'etherscan',
      60,
    ],
  ];
  for (const [name, ev, status, reason, source, ttl] of rows) {
    const out = evaluateVerified(check(), ev);
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    t.equal(out.source, source, name);
    t.equal(out.ttl_s, ttl, name);
  }
  const out = evaluateVerified(check(), { code: code('0x6080'), sourcify: no('sourcify'), etherscan: no('etherscan') });
  t.same(out.observed, { chain_id: 8453, has_code: true, sourcify: 'not_verified', etherscan: 'not_verified' });
  t.equal(out.message, `${ADDR} on base (8453) is not verified: neither Sourcify nor the explorer has its source.`);
});

t.test('against the Sourcify, Etherscan and JSON-RPC emulators', async (t) => {
  const sourcify = await startSourcify();
  const etherscan = await startEtherscan();
  const node = await startJsonRpc();
  t.teardown(async () => {
    await Promise.all([sourcify.close(), etherscan.close(), node.close()]);
  });
  const OTHER = '0x1111111111111111111111111111111111111111';
  const EOA = '0x2222222222222222222222222222222222222222';
  sourcify.setVerified(8453, ADDR);
  etherscan.setVerified(8453, OTHER);
  node.setHandler('eth_getCode', ([addr]) => ({ result: String(addr).toLowerCase() === EOA ? '0x' : '0x6080604052' }));
  const keyless = testConfig({ SOURCIFY_URL: sourcify.url, ETHERSCAN_API_URL: etherscan.apiUrl });
  const keyed = testConfig({
    SOURCIFY_URL: sourcify.url,
    ETHERSCAN_API_URL: etherscan.apiUrl,
    ETHERSCAN_API_KEY: etherscan.apiKey,
    RPC_URLS: `base=${node.url}`,
  });

  t.test('verified on Sourcify', async (t) => {
    const out = await contractVerified.run(check(), ctx(keyless));
    t.equal(out.status, 'pass');
    t.equal(out.source, 'sourcify');
    t.equal(out.ttl_s, 3600);
    t.equal(etherscan.stats.requests, 0, 'the explorer is not asked');
  });
  t.test('not on Sourcify and no key: not_verified', async (t) => {
    const out = await contractVerified.run(check({ contract_address: OTHER }), ctx(keyless));
    t.equal(out.status, 'fail');
    t.equal(out.reason, 'not_verified');
  });
  t.test('not on Sourcify, verified on the explorer with a key', async (t) => {
    const out = await contractVerified.run(check({ contract_address: OTHER }), ctx(keyed));
    t.equal(out.status, 'pass');
    t.equal(out.source, 'etherscan');
    t.equal(etherscan.received.at(-1)?.query.get('chainid'), '8453');
  });
  t.test('no code at the address: not_a_contract, explorer not asked', async (t) => {
    etherscan.resetStats();
    const out = await contractVerified.run(check({ contract_address: EOA }), ctx(keyed));
    t.equal(out.status, 'fail');
    t.equal(out.reason, 'not_a_contract');
    t.equal(out.source, '127.0.0.1');
    t.equal(etherscan.stats.requests, 0);
  });
  t.test('chain names map to chain ids', async (t) => {
    sourcify.setVerified(42161, OTHER);
    const out = await contractVerified.run(check({ chain: 'arbitrum', contract_address: OTHER }), ctx(keyless));
    t.equal(out.status, 'pass');
    t.match(sourcify.received.at(-1)?.path, '/v2/contract/42161/');
  });
  t.test('Sourcify 429 with no key: rate-limited error with retry_after_s', async (t) => {
    sourcify.fault = { status: 429, retryAfter: 7, body: SOURCIFY_429_BODY, times: 1 };
    const out = await contractVerified.run(check(), ctx(keyless));
    t.equal(out.status, 'error');
    t.equal(out.reason, 'upstream_rate_limited');
    t.equal(out.retry_after_s, 7);
  });
  t.test('Sourcify 500 and explorer says not verified: error, not a verdict', async (t) => {
    sourcify.fault = { status: 500, body: SOURCIFY_500_BODY, times: 1 };
    const out = await contractVerified.run(
      check({ contract_address: '0x3333333333333333333333333333333333333333' }),
      ctx(keyed),
    );
    t.equal(out.status, 'error');
    t.equal(out.reason, 'upstream_http_error');
  });
  t.test('explorer rate limit in a 200 body', async (t) => {
    etherscan.fault = { status: 200, body: ETHERSCAN_RATE_LIMIT_BODY, times: 1 };
    const out = await contractVerified.run(
      check({ contract_address: '0x3333333333333333333333333333333333333333' }),
      ctx(keyed),
    );
    t.equal(out.status, 'error');
    t.equal(out.reason, 'upstream_rate_limited');
  });
  t.test('Sourcify hangs: the deadline answers', async (t) => {
    sourcify.fault = { hang: true, times: 1 };
    const started = Date.now();
    const out = await contractVerified.run(check(), ctx(keyless, 150));
    t.equal(out.reason, 'upstream_timeout');
    t.ok(Date.now() - started < 1000);
  });
  t.test('Sourcify resets the connection / sends garbage', async (t) => {
    sourcify.fault = { reset: true, times: 2 };
    const a = await contractVerified.run(check(), ctx(keyless));
    t.equal(a.reason, 'upstream_unreachable');
    sourcify.fault = { garbage: true, times: 1 };
    const b = await contractVerified.run(check(), ctx(keyless));
    t.equal(b.reason, 'upstream_bad_response');
  });
});
