/**
 * The runner end to end through POST /v1/decide, against emulated upstreams on loopback:
 * concurrency, deadline, cache, single-flight and a worker dying mid-check.
 */
import t from 'tap';
import { startTestApp, post, type TestApp } from '../helpers/app.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { startDexScreener } from '../emulators/dexscreener.js';
import { startSourcify } from '../emulators/sourcify.js';
import { startStatusPage } from '../emulators/statuspage.js';
import { startJsonRpc } from '../emulators/jsonrpc.js';

const ADDR = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const PAIR = '0x88a43bbdf9d098eec7bceda4e2494615dfd9bb9c';

interface Upstreams {
  cg: Awaited<ReturnType<typeof startCoinGecko>>;
  dex: Awaited<ReturnType<typeof startDexScreener>>;
  sourcify: Awaited<ReturnType<typeof startSourcify>>;
  status: Awaited<ReturnType<typeof startStatusPage>>;
  all: Array<{ fault: unknown; stats: { requests: number; inFlight: number }; close(): Promise<void> }>;
}

/** Fresh emulators and a fresh app per test, so no request of one test is counted in another. */
async function withApp(
  extra: Record<string, string>,
  fn: (app: TestApp, u: Upstreams) => Promise<void>,
): Promise<void> {
  const cg = await startCoinGecko();
  const dex = await startDexScreener();
  const sourcify = await startSourcify();
  const status = await startStatusPage();
  cg.setPrice('usd-coin', 'usd', 0.9998).setPrice('ethereum', 'usd', 3120.5);
  dex.setPair('base', PAIR);
  sourcify.setVerified(8453, ADDR);
  const app = await startTestApp({
    PRICE_API_URL: cg.url,
    DEX_API_URL: dex.url,
    SOURCIFY_URL: sourcify.url,
    ALLOW_PRIVATE_TARGETS: 'true',
    ...extra,
  });
  try {
    await fn(app, { cg, dex, sourcify, status, all: [cg, dex, sourcify, status] });
  } finally {
    await app.close();
    for (const e of [cg, dex, sourcify, status]) await e.close();
  }
}

const fourChecks = (u: Upstreams) => ({
  goal: 'four upstreams',
  checks: [
    { type: 'stablecoin_depeg', asset_id: 'usd-coin' },
    { type: 'dex_price', chain: 'base', pair_address: PAIR, min_liquidity_usd: 100000 },
    { type: 'contract_verified', chain: 'base', contract_address: ADDR },
    { type: 'bridge_exploit_monitor', status_url: `${u.status.url}/api/v2/status.json` },
  ],
  context: { deadline_ms: 3000 },
});

const until = async (cond: () => boolean, ms: number) => {
  const start = Date.now();
  while (!cond() && Date.now() - start < ms) await new Promise((r) => setTimeout(r, 10));
};

for (const threads of ['0', '2']) {
  t.test(`POOL_THREADS=${threads}: a request's four checks are in flight at once`, async (t) => {
    await withApp({ POOL_THREADS: threads }, async (app, u) => {
      for (const e of u.all) e.fault = { hang: true };
      const pending = post(`${app.url}/v1/decide`, { ...fourChecks(u), context: { deadline_ms: 1500 } });
      // Every emulator holds its request; if the checks ran one after another, only one would ever arrive.
      await until(() => u.all.every((e) => e.stats.inFlight >= 1), 1400);
      t.same(
        u.all.map((e) => e.stats.inFlight),
        [1, 1, 1, 1],
        'all four upstream requests held open together',
      );
      const res = await pending;
      t.equal(res.status, 200);
      t.same(
        res.body.evidence.map((r: any) => r.reason),
        Array(4).fill('deadline_exceeded'),
      );
      t.equal(res.body.verdict, 'wait');
    });
  });
}

t.test('a hanging upstream answers at the deadline; the late answer serves the retry from cache', async (t) => {
  await withApp({ REQUEST_DEADLINE_MS: '200' }, async (app, { cg }) => {
    cg.fault = { delayMs: 600, times: 1 };
    const body = { goal: 'late', checks: [{ type: 'price', asset_id: 'ethereum', min_price: 1000 }] };
    const t0 = performance.now();
    const first = await post(`${app.url}/v1/decide`, body);
    const elapsed = performance.now() - t0;
    t.ok(elapsed < 500, `answered near the 200 ms deadline (${elapsed.toFixed(0)} ms)`);
    t.match(first.body, {
      verdict: 'wait',
      risk: 'medium',
      evidence: [{ status: 'error', reason: 'deadline_exceeded' }],
      decision: { retry_after_s: 1 },
    });
    t.same(first.body.failure_modes, ['price:deadline_exceeded']);

    await until(() => cg.stats.inFlight === 0, 2000);
    await new Promise((r) => setTimeout(r, 30));
    const second = await post(`${app.url}/v1/decide`, body);
    t.match(second.body, { verdict: 'proceed', risk: 'low', evidence: [{ status: 'pass', cached: true }] });
    t.equal(cg.stats.requests, 1, 'the retry made no upstream call');
  });
});

t.test('20 concurrent identical checks make one upstream call; a cache hit makes none', async (t) => {
  await withApp({}, async (app, { dex }) => {
    dex.fault = { delayMs: 80 };
    const body = {
      goal: 'same',
      checks: [{ type: 'dex_price', chain: 'base', pair_address: PAIR, min_price_usd: 100 }],
    };
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(`${app.url}/v1/decide`, body)));
    t.same([...new Set(answers.map((a) => a.body.verdict))], ['proceed']);
    t.equal(dex.stats.requests, 1, 'one upstream request for twenty callers');
    const again = await post(`${app.url}/v1/decide`, body);
    t.equal(again.body.evidence[0].cached, true);
    t.equal(dex.stats.requests, 1, 'the cache hit made no upstream call');
    const metrics = await app.metrics.metricsText();
    t.match(metrics, /cache.*join/, 'single-flight joins are counted');
  });
});

t.test(
  'a worker thread that dies mid-check: that check errors, the request answers, the pool keeps serving',
  async (t) => {
    await withApp({ POOL_THREADS: '2' }, async (app, { cg }) => {
      cg.fault = { hang: true };
      const body = {
        goal: 'crash',
        checks: [
          { type: 'price', asset_id: 'ethereum' },
          { type: 'approval_amount', amount: '0', spender: ADDR },
        ],
        context: { deadline_ms: 5000 },
      };
      const pending = post(`${app.url}/v1/decide`, body);
      await until(() => cg.stats.inFlight >= 1, 3000);
      const pool = app.engine.executor.pool!;
      const busy = pool.threads.find((w) => (w as unknown as { threadId: number }).threadId !== undefined);
      const t0 = performance.now();
      // Terminate every worker: whichever held the check dies mid-check.
      await Promise.all(pool.threads.map((w) => w.terminate()));
      t.ok(busy);
      const res = await pending;
      t.ok(performance.now() - t0 < 2000, 'answered without waiting for the deadline');
      t.equal(res.status, 200);
      const price = res.body.evidence.find((r: any) => r.type === 'price');
      t.match(price, { status: 'error', reason: 'worker_crashed' });
      t.equal(res.body.verdict, 'wait');
      cg.fault = null;
      // piscina replaces the dead threads; a replacement loads the check modules before it takes a
      // task, which on a loaded machine takes seconds. Wait until each new thread has answered a
      // warm-up task, so the next request measures the pool serving, not a thread starting.
      await until(() => pool.threads.length === 2, 30_000);
      await Promise.all([pool.run({ warm: true }), pool.run({ warm: true })]);
      const next = await post(`${app.url}/v1/decide`, {
        goal: 'after',
        checks: [{ type: 'price', asset_id: 'usd-coin' }],
        context: { deadline_ms: 10000 },
      });
      t.match(next.body, { verdict: 'proceed', evidence: [{ status: 'pass' }] }, 'the pool serves the next request');
    });
  },
);

t.test('a node that answers a rate-limit code inside its JSON-RPC reply is not asked again either', async (t) => {
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  node.setError('eth_blockNumber', -32016, 'over rate limit');
  await withApp({}, async (app) => {
    const body = {
      goal: 'limited node',
      checks: [{ type: 'rpc', rpc_url: node.url, method_name: 'eth_blockNumber', expect_hex_result: true }],
    };
    const first = await post(`${app.url}/v1/decide`, body);
    t.match(first.body.evidence, [{ status: 'error', reason: 'upstream_rate_limited', cached: false, ttl_s: 60 }]);
    const second = await post(`${app.url}/v1/decide`, body);
    t.match(second.body.evidence, [{ status: 'error', reason: 'upstream_rate_limited', cached: true }]);
    t.equal(node.calls.length, 1, 'asked once: the -32016 is answered from cache for its 60 s');
    t.match(second.body, { verdict: 'wait', decision: { retry_after_s: 60 } });
  });
});

t.test('a rate limit is kept for its retry-after: the provider that said stop is not asked again', async (t) => {
  await withApp({}, async (app, { cg }) => {
    cg.fault = { status: 429, retryAfter: 30, times: 1 };
    const body = { goal: 'limited', checks: [{ type: 'price', asset_id: 'ethereum', min_price: 1000 }] };
    const first = await post(`${app.url}/v1/decide`, body);
    t.match(first.body.evidence, [{ status: 'error', reason: 'upstream_rate_limited', cached: false }]);
    const second = await post(`${app.url}/v1/decide`, body);
    t.match(second.body.evidence, [{ status: 'error', reason: 'upstream_rate_limited', cached: true }]);
    t.equal(cg.stats.requests, 1, 'asked once: the 429 is answered from cache until its retry-after');
    t.match(second.body, { verdict: 'wait', decision: { retry_after_s: 30 } });
  });
});
