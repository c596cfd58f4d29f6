/**
 * The guard over HTTP with the real engine: emulated price, DEX and status-page upstreams on
 * loopback and a real local chain (anvil) as the operator's RPC.
 */
import t from 'tap';
import { DecideResponse as validateResponse } from '../../src/generated/validators.js';
import { post, type TestApp } from '../helpers/app.js';
import { startAnvil, type Anvil } from '../helpers/anvil.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { startDexScreener, type DexScreenerEmulator } from '../emulators/dexscreener.js';
import { startStatusPage, type StatusPageEmulator } from '../emulators/statuspage.js';
import { startJsonRpc, type JsonRpcEmulator } from '../emulators/jsonrpc.js';
import { startGuardApp } from './harness.js';

const PAIR = '0x88a43bbdf9d098eec7bceda4e2494615dfd9bb9c';

let anvil: Anvil;
let cg: CoinGeckoEmulator;
let dex: DexScreenerEmulator;
let status: StatusPageEmulator;
let node: JsonRpcEmulator;
let app: TestApp;

t.before(async () => {
  [anvil, cg, dex, status, node] = await Promise.all([
    startAnvil(),
    startCoinGecko(),
    startDexScreener(),
    startStatusPage(),
    startJsonRpc(),
  ]);
  cg.setPrice('usd-coin', 'usd', 0.9998).setPrice('tether', 'usd', 1.0003).setPrice('sliding-usd', 'usd', 0.992);
  dex.setPair('base', PAIR, { liquidityUsd: 1_000_000 });
  app = await startGuardApp({
    PRICE_API_URL: cg.url,
    DEX_API_URL: dex.url,
    RPC_URLS: `base=${anvil.url}`,
    BRIDGE_STATUS_URLS: `${status.url}/api/v2/status.json`,
    // The bridge check fetches the status page on loopback: only private targets make that possible here.
    ALLOW_PRIVATE_TARGETS: 'true',
    REQUEST_DEADLINE_MS: '3000',
  });
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([anvil?.close(), cg?.close(), dex?.close(), status?.close(), node?.close()]);
});

const guard = (body: Record<string, unknown>) => post(`${app.url}/v1/guard`, body);

t.test('the published example answers with the four named checks', async (t) => {
  const res = await guard({ action: 'bridge', chain: 'base', amount_usd: 2500, strict_mode: true });
  t.equal(res.status, 200);
  t.ok(validateResponse(res.body), 'a DecideResponse');
  t.same(res.body.checks, {
    rpc_health: 'pass',
    price_deviation: 'pass',
    liquidity_depth: 'skipped',
    bridge_exploit_monitor: 'pass',
  });
  t.equal(res.body.verdict, 'proceed');
  t.equal(res.body.risk, 'low');
  t.same(res.body.failure_modes, []);
  t.type(res.body.latency_ms, 'number');
  t.match(res.body.reasoning, /rpc_health pass: The RPC node on base \(8453\) has head block \d+/);
  t.match(res.body.reasoning, /price_deviation pass: usd-coin at 0\.9998 usd is 0\.02% off peg/);
  const byName = Object.fromEntries(res.body.evidence.map((e: any) => [e.name, e]));
  t.equal(byName.price_deviation.type, 'stablecoin_depeg');
  t.equal(byName.rpc_health.observed.chain_id, 8453);

  const withPair = await guard({
    action: 'bridge',
    chain: 'base',
    amount_usd: 2500,
    strict_mode: true,
    pair_address: PAIR,
  });
  t.same(withPair.body.checks, {
    rpc_health: 'pass',
    price_deviation: 'pass',
    liquidity_depth: 'pass',
    bridge_exploit_monitor: 'pass',
  });
  t.match(
    withPair.body.reasoning,
    /\$2,500 into WETH\/USDC with \$1,000,000 of liquidity is an estimated 0\.25% price impact/,
  );
  t.equal(withPair.body.verdict, 'proceed');
});

t.test('every guard path mounts the same handler', async (t) => {
  for (const path of ['/v1/agents/execution-guard/execute', '/v1/x402/guard', '/v1/acp/guard']) {
    const res = await post(`${app.url}${path}`, { action: 'transfer', amount_usd: 10 });
    t.equal(res.status, 200, path);
    t.same(res.body.checks, { rpc_health: 'pass', price_deviation: 'pass', liquidity_depth: 'skipped' }, path);
  }
});

t.test('price impact: warn waits, the high-value tier blocks, non-strict proceeds', async (t) => {
  const body = { action: 'swap', chain: 'base', pair_address: PAIR };
  const small = await guard({ ...body, amount_usd: 5_000 }); // 0.5 %
  t.equal(small.body.checks.liquidity_depth, 'pass');
  const warn = await guard({ ...body, amount_usd: 9_000, context: { note: 'x' } }); // 0.9 %: still pass
  t.equal(warn.body.checks.liquidity_depth, 'pass');
  const big = await guard({ ...body, amount_usd: 20_000 }); // 2 %, high value
  t.equal(big.body.checks.liquidity_depth, 'warn');
  t.equal(big.body.verdict, 'block');
  t.equal(big.body.risk, 'high');
  t.same(big.body.failure_modes, ['liquidity_depth:price_impact_high']);
  const lenient = await guard({ ...body, amount_usd: 20_000, strict_mode: false });
  t.equal(lenient.body.verdict, 'proceed');
  t.equal(lenient.body.risk, 'medium');
  const huge = await guard({ ...body, amount_usd: 40_000 }); // 4 %
  t.equal(huge.body.checks.liquidity_depth, 'fail');
  t.same(huge.body.failure_modes, ['liquidity_depth:price_impact_too_high']);
});

t.test('a sliding stablecoin warns; at 10,000 USD the warning blocks', async (t) => {
  const low = await guard({ action: 'transfer', stablecoin_asset_id: 'sliding-usd', amount_usd: 500 });
  t.equal(low.body.verdict, 'wait');
  t.same(low.body.failure_modes, ['price_deviation:depeg_warning']);
  t.match(low.body.reasoning, /sliding-usd at 0\.992 usd is 0\.8% off peg/);
  const high = await guard({ action: 'transfer', stablecoin_asset_id: 'sliding-usd', amount_usd: 10_000 });
  t.equal(high.body.verdict, 'block');
  t.equal(high.body.decision.high_value_tier, true);
});

t.test('rpc_health against a real chain: wrong chain fails, a stale head warns', async (t) => {
  const mismatch = await guard({ action: 'transfer', chain: 'ethereum', rpc_url: anvil.url });
  t.equal(mismatch.body.checks.rpc_health, 'fail');
  t.same(mismatch.body.failure_modes, ['rpc_health:chain_mismatch']);
  t.match(mismatch.body.reasoning, /chain id 8453, not ethereum \(1\)/);
  t.equal(mismatch.body.verdict, 'block');

  node.setResult('eth_getBlockByNumber', {
    number: '0x1234',
    timestamp: `0x${(Math.floor(Date.now() / 1000) - 600).toString(16)}`,
  });
  const stale = await guard({ action: 'transfer', chain: 'base', rpc_url: `${node.url}/key/abc` });
  t.equal(stale.body.checks.rpc_health, 'warn');
  t.same(stale.body.failure_modes, ['rpc_health:head_stale']);
  t.equal(stale.body.verdict, 'wait');
  const calls = node.calls.map((c) => c.method);
  t.same(calls, ['eth_chainId', 'eth_blockNumber', 'eth_getBlockByNumber'], 'one batch of three calls');
  t.equal(node.stats.requests, 1, 'in one HTTP request');
});

t.test('a status page reporting an incident blocks the bridge', async (t) => {
  status.setIndicator('major');
  t.teardown(() => void status.setIndicator('none'));
  const res = await guard({
    action: 'bridge',
    bridge_status_url: `${status.url}/api/v2/summary.json`,
    amount_usd: 100,
  });
  t.equal(res.body.checks.bridge_exploit_monitor, 'fail');
  t.same(res.body.failure_modes, ['bridge_exploit_monitor:indicator_major']);
  t.equal(res.body.verdict, 'block');
});

t.test('missing inputs over HTTP: strict waits, non-strict skips', async (t) => {
  const strict = await guard({ action: 'approve' });
  t.same(strict.body.checks, { rpc_health: 'pass', approval_amount: 'warn' });
  t.equal(strict.body.verdict, 'wait');
  t.same(strict.body.failure_modes, ['approval_amount:missing_input']);
  const lenient = await guard({ action: 'approve', strict_mode: false });
  t.same(lenient.body.checks, { rpc_health: 'pass', approval_amount: 'skipped' });
  t.equal(lenient.body.verdict, 'proceed');
  const unlimited = await guard({ action: 'approve', approval_amount: `0x${'f'.repeat(64)}` });
  t.equal(unlimited.body.checks.approval_amount, 'fail');
  t.equal(unlimited.body.verdict, 'block');
});

t.test('an invalid body is a 422 before any check runs', async (t) => {
  const before = cg.stats.requests;
  const res = await guard({ action: 'teleport' });
  t.equal(res.status, 422);
  t.equal(res.body.detail[0].loc.join('.'), 'body.action');
  t.equal(cg.stats.requests, before);
});

t.test('trust: the operator RPC is used on loopback, a request rpc_url to loopback is refused', async (t) => {
  const strictApp = await startGuardApp({
    PRICE_API_URL: cg.url,
    DEX_API_URL: dex.url,
    RPC_URLS: `base=${anvil.url}`,
    REQUEST_DEADLINE_MS: '3000',
  });
  t.teardown(() => strictApp.close());
  const operator = await post(`${strictApp.url}/v1/guard`, { action: 'transfer' });
  t.equal(operator.body.checks.rpc_health, 'pass', "RPC_URLS is the operator's and trusted");
  const before = node.stats.requests;
  const supplied = await post(`${strictApp.url}/v1/guard`, { action: 'transfer', rpc_url: node.url });
  t.equal(supplied.body.checks.rpc_health, 'fail');
  t.same(supplied.body.failure_modes, ['rpc_health:target_forbidden']);
  t.equal(node.stats.requests, before, 'no packet reached the refused target');
});

t.test('deadline: the default answers wait on a slow provider; context.deadline_ms raises it', async (t) => {
  const slowApp = await startGuardApp({ PRICE_API_URL: cg.url, DEX_API_URL: dex.url, REQUEST_DEADLINE_MS: '150' });
  t.teardown(() => slowApp.close());
  cg.setPrice('slow-a', 'usd', 1).setPrice('slow-b', 'usd', 1);
  cg.faultOn('/simple/price', { delayMs: 500 });
  t.teardown(() => void cg.faultOn('/simple/price', null));
  const raised = await post(`${slowApp.url}/v1/guard`, {
    action: 'transfer',
    stablecoin_asset_id: 'slow-a',
    context: { deadline_ms: 3000 },
  });
  t.equal(raised.body.checks.price_deviation, 'pass');
  t.equal(raised.body.decision.deadline_ms, 3000);
  const cut = await post(`${slowApp.url}/v1/guard`, { action: 'transfer', stablecoin_asset_id: 'slow-b' });
  t.equal(cut.body.checks.price_deviation, 'error');
  t.same(
    cut.body.failure_modes,
    ['price_deviation:deadline_exceeded'],
    'answered at the deadline, not when the provider did',
  );
  t.equal(cut.body.verdict, 'wait');
  t.type(cut.body.decision.retry_after_s, 'number');
});

t.test('the guard-internal checks run in worker threads too', async (t) => {
  const pooled = await startGuardApp({
    PRICE_API_URL: cg.url,
    DEX_API_URL: dex.url,
    RPC_URLS: `base=${anvil.url}`,
    POOL_THREADS: '1',
    REQUEST_DEADLINE_MS: '5000',
  });
  t.teardown(() => pooled.close());
  t.equal(pooled.engine.executor.kind, 'pool');
  const res = await post(`${pooled.url}/v1/guard`, { action: 'swap', pair_address: PAIR, amount_usd: 1000 });
  t.same(res.body.checks, {
    rpc_health: 'pass',
    price_deviation: 'pass',
    liquidity_depth: 'pass',
    rug_pull_risk: 'pass',
  });
  t.equal(res.body.verdict, 'proceed');
});
