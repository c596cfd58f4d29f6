/**
 * Upstream faults through POST /v1/decide: every configured upstream and every kind of
 * request-supplied target, each fault of the emulators' repertoire. Every answer is a 200 within
 * the deadline (plus a margin for a loaded machine), the check an `error` with the reason an
 * operator would look for, and the verdict `wait`; the healthy call after each fault is served
 * normally again. For the http and bridge checks the status and body of the caller's page are
 * what the check judges (docs/rules.md §2), so a 500, a 429 or a non-JSON body there are answers.
 */
import t from 'tap';
import { startTestApp, post, type TestApp } from '../helpers/app.js';
import type { Fault, Emulator } from '../emulators/core.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { startDexScreener } from '../emulators/dexscreener.js';
import { startSourcify } from '../emulators/sourcify.js';
import { startEtherscan } from '../emulators/etherscan.js';
import { startJsonRpc } from '../emulators/jsonrpc.js';
import { startStatusPage } from '../emulators/statuspage.js';

const HARD_TIMEOUT_MS = 1200;
const LONG_DEADLINE_MS = 3000;
const DEFAULT_DEADLINE_MS = 250;
/** Scheduling slack on a 2-core machine running other suites. */
const MARGIN_MS = 800;

interface Expect {
  status: string;
  reason: string | null;
  verdict: string;
  retryAfterS?: number;
}
const error = (reason: string, retryAfterS?: number): Expect => ({
  status: 'error',
  reason,
  verdict: 'wait',
  ...(retryAfterS === undefined ? {} : { retryAfterS }),
});

/** [name, fault, deadline the request asks for, expected result for a configured provider or node]. */
const FAULTS: Array<[string, Fault, number, Expect]> = [
  ['HTTP 500', { status: 500 }, LONG_DEADLINE_MS, error('upstream_http_error')],
  ['HTTP 429 with retry-after', { status: 429, retryAfter: 7 }, LONG_DEADLINE_MS, error('upstream_rate_limited', 7)],
  ['garbage instead of JSON', { garbage: true }, LONG_DEADLINE_MS, error('upstream_bad_response')],
  ['truncated body', { truncate: true }, LONG_DEADLINE_MS, error('upstream_bad_response')],
  [
    'connection reset (and on the one retry)',
    { reset: true, times: 2 },
    LONG_DEADLINE_MS,
    error('upstream_unreachable'),
  ],
  ['hang, check timeout first', { hang: true }, LONG_DEADLINE_MS, error('upstream_timeout')],
  ['one byte a second, check timeout first', { dripMs: 1000 }, LONG_DEADLINE_MS, error('upstream_timeout')],
  ['hang, request deadline first', { hang: true }, DEFAULT_DEADLINE_MS, error('deadline_exceeded', 1)],
  ['one byte a second, request deadline first', { dripMs: 1000 }, DEFAULT_DEADLINE_MS, error('deadline_exceeded', 1)],
];

/** What the caller's page checks make of faults that are answers. */
const PAGE_ANSWERS: Record<string, Expect> = {
  'HTTP 500': { status: 'fail', reason: 'unexpected_status', verdict: 'block' },
  'HTTP 429 with retry-after': { status: 'fail', reason: 'unexpected_status', verdict: 'block' },
  'garbage instead of JSON': { status: 'pass', reason: null, verdict: 'proceed' },
};

interface Upstream {
  name: string;
  em: Emulator;
  /** Path prefix the fault is set on, for row i (emulators shared by two upstreams). */
  faultPath: (i: number) => string;
  check: (i: number) => Record<string, unknown>;
  /** A fresh check that the healthy upstream answers with a pass. */
  healthy: (i: number) => Record<string, unknown>;
  answers?: Record<string, Expect>;
}

const addr = (tag: number, i: number): string =>
  `0x${tag.toString(16).padStart(8, '0')}${i.toString(16).padStart(32, '0')}`;

async function decide(app: TestApp, check: Record<string, unknown>, deadlineMs: number) {
  const t0 = performance.now();
  const body = {
    goal: 'fault table',
    checks: [check],
    ...(deadlineMs === DEFAULT_DEADLINE_MS ? {} : { context: { deadline_ms: deadlineMs } }),
  };
  const r = await post(`${app.url}/v1/decide`, body);
  return { status: r.status, body: r.body, ms: performance.now() - t0 };
}

t.test('every upstream, every fault: a timely 200 with an error result', async (t) => {
  const [cg, ds, sf, es, node, web, bridge, callerNode] = await Promise.all([
    startCoinGecko(),
    startDexScreener(),
    startSourcify(),
    startEtherscan(),
    startJsonRpc(),
    startStatusPage(),
    startStatusPage(),
    startJsonRpc(),
  ]);
  t.teardown(() => Promise.all([cg, ds, sf, es, node, web, bridge, callerNode].map((e) => e.close())));
  const app = await startTestApp({
    PRICE_API_URL: cg.url,
    DEX_API_URL: ds.url,
    SOURCIFY_URL: sf.url,
    ETHERSCAN_API_URL: es.apiUrl,
    ETHERSCAN_API_KEY: es.apiKey,
    RPC_URLS: `base=${node.url}`,
    ALLOW_PRIVATE_TARGETS: 'true',
    CHECK_HARD_TIMEOUT_MS: String(HARD_TIMEOUT_MS),
    REQUEST_DEADLINE_MS: String(DEFAULT_DEADLINE_MS),
  });
  t.teardown(() => app.close());

  for (let i = 0; i < 2 * FAULTS.length; i++) {
    cg.setPrice(`ok-${i}`, 'usd', 1);
    ds.setPair('base', addr(2, i));
    sf.setVerified(1, addr(3, i));
    es.setVerified(1, addr(4, i));
    web.setPage(`/ok-${i}`, '<p>fine</p>');
  }
  node.setResult('eth_getBalance', '0x1');
  callerNode.setResult('eth_getBalance', '0x1');
  const balance = (url: string, tag: number, i: number) => ({
    type: 'rpc',
    rpc_url: url,
    method_name: 'eth_getBalance',
    params: [addr(tag, i), 'latest'],
  });
  const verified = (tag: number, i: number) => ({
    type: 'contract_verified',
    chain: 'ethereum',
    contract_address: addr(tag, i),
  });
  const anyPath = () => '/';

  const upstreams: Upstream[] = [
    {
      name: 'price provider',
      em: cg,
      faultPath: anyPath,
      check: (i) => ({ type: 'price', asset_id: `fault-${i}` }),
      healthy: (i) => ({ type: 'price', asset_id: `ok-${i}` }),
    },
    {
      name: 'DEX provider',
      em: ds,
      faultPath: anyPath,
      check: (i) => ({ type: 'dex_price', chain: 'base', pair_address: addr(1, i) }),
      healthy: (i) => ({ type: 'dex_price', chain: 'base', pair_address: addr(2, i) }),
    },
    // Sourcify is asked first; the explorer only when Sourcify has no match (here: it failed).
    {
      name: 'Sourcify',
      em: sf,
      faultPath: (i) => `/v2/contract/1/${addr(5, i)}`,
      check: (i) => verified(5, i),
      healthy: (i) => verified(3, i),
    },
    {
      name: 'Etherscan (with a key)',
      em: es,
      faultPath: anyPath,
      check: (i) => verified(6, i),
      healthy: (i) => verified(4, i),
    },
    {
      name: 'operator RPC (RPC_URLS)',
      em: node,
      faultPath: anyPath,
      check: (i) => balance(node.url, 7, i),
      healthy: (i) => balance(node.url, 8, i),
    },
    {
      name: 'caller rpc_url',
      em: callerNode,
      faultPath: anyPath,
      check: (i) => balance(callerNode.url, 7, i),
      healthy: (i) => balance(callerNode.url, 8, i),
    },
    {
      name: 'http check target',
      em: web,
      faultPath: anyPath,
      check: (i) => ({ type: 'http', url: `${web.url}/fault-${i}` }),
      healthy: (i) => ({ type: 'http', url: `${web.url}/ok-${i}` }),
      answers: PAGE_ANSWERS,
    },
    {
      name: 'bridge status page',
      em: bridge,
      faultPath: anyPath,
      check: (i) => ({ type: 'bridge_exploit_monitor', status_url: `${bridge.url}/api/v2/status.json?fault=${i}` }),
      healthy: (i) => ({ type: 'bridge_exploit_monitor', status_url: `${bridge.url}/api/v2/status.json?ok=${i}` }),
      answers: PAGE_ANSWERS,
    },
  ];

  async function run(u: Upstream): Promise<void> {
    for (const [i, [name, fault, deadlineMs, providerExpect]] of FAULTS.entries()) {
      const label = `${u.name}, ${name}`;
      const want = u.answers?.[name] ?? providerExpect;
      u.em.faultOn(u.faultPath(i), { times: 1, ...fault });
      const before = u.em.stats.requests;
      const r = await decide(app, u.check(i), deadlineMs);
      u.em.faultOn(u.faultPath(i), null);
      t.equal(r.status, 200, `${label}: HTTP 200`);
      t.ok(r.ms < deadlineMs + MARGIN_MS, `${label}: answered in ${r.ms.toFixed(0)} ms (deadline ${deadlineMs} ms)`);
      t.ok(u.em.stats.requests > before, `${label}: the upstream was called`);
      const ev = r.body.evidence?.[0] ?? {};
      t.match(
        { status: ev.status, reason: ev.reason, verdict: r.body.verdict },
        { status: want.status, reason: want.reason, verdict: want.verdict },
        label,
      );
      if (want.retryAfterS !== undefined) t.equal(ev.retry_after_s, want.retryAfterS, `${label}: retry_after_s`);
      if (want.status === 'error') {
        t.ok(typeof ev.message === 'string' && ev.message.length > 15, `${label}: says what happened (${ev.message})`);
        t.ok(r.body.decision.retry_after_s >= 1, `${label}: the wait says when to retry`);
      }
      // After every fault the upstream is used again; this also keeps each breaker closed.
      const ok = await decide(app, u.healthy(i), LONG_DEADLINE_MS);
      t.match(ok.body.evidence?.[0], { status: 'pass' }, `${u.name}: healthy again after ${name}`, {
        evidence: ok.body.evidence,
      });
    }
  }
  // Sourcify and Etherscan share the contract_verified path, so they take turns; the rest run side by side.
  const [price, dex, sourcify, etherscan, ...rest] = upstreams;
  await Promise.all([run(sourcify).then(() => run(etherscan)), run(price), run(dex), ...rest.map(run)]);
});
