import t from 'tap';
import { createMetrics, HTTP_BUCKETS } from '../../src/metrics.js';
import { promtool, promtoolGate } from '../ops/promtool.js';

/** The value of one sample line, or undefined when the scrape does not have it. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function recordEverything(m: ReturnType<typeof createMetrics>): void {
  m.httpRequest('/v1/decide', 'POST', 200, 0.012);
  m.httpRequest('/v1/decide', 'POST', 200, 0.4);
  m.httpRequest('/v1/guard', 'POST', 422, 0.002);
  m.verdict('decide', 'proceed');
  m.verdict('guard', 'block');
  m.check('price_deviation', 'pass', 'miss', 0.051);
  m.check('price_deviation', 'pass', 'hit', 0.0002);
  m.check('rpc_health', 'error', 'join', 0.03);
  m.cacheEvent('miss');
  m.cacheEvent('hit');
  m.cacheEvent('join');
  m.upstream('price_provider', 'ok');
  m.upstream('rpc', 'timeout');
  m.poolTask(0.02);
  m.payment('settled');
  m.quotaRejection('Basic');
  m.circuitState('rpc', 'open');
  m.setPoolSource(() => ({ queueSize: 7, utilization: 0.25, threads: 2 }));
  m.setLedgerSource(async () => ({ verified: 2, settled: 10 }));
}

t.test('each record call shows up as a Prometheus sample with its labels', async (t) => {
  const m = createMetrics();
  recordEverything(m);
  const text = await m.metricsText();
  t.equal(
    sample(text, 'preflight_http_request_duration_seconds_count{route="/v1/decide",method="POST",status="200"}'),
    2,
  );
  t.equal(
    sample(
      text,
      'preflight_http_request_duration_seconds_bucket{le="0.3",route="/v1/decide",method="POST",status="200"}',
    ),
    1,
    'the 400 ms request is above the 300 ms bucket',
  );
  t.equal(
    sample(text, 'preflight_http_request_duration_seconds_count{route="/v1/guard",method="POST",status="422"}'),
    1,
  );
  t.equal(sample(text, 'preflight_verdicts_total{endpoint="guard",verdict="block"}'), 1);
  t.equal(sample(text, 'preflight_checks_total{type="price_deviation",status="pass"}'), 2);
  t.equal(sample(text, 'preflight_checks_total{type="rpc_health",status="error"}'), 1);
  t.equal(sample(text, 'preflight_check_duration_seconds_count{type="price_deviation",cache="hit"}'), 1);
  t.equal(sample(text, 'preflight_check_duration_seconds_count{type="rpc_health",cache="join"}'), 1);
  for (const r of ['hit', 'miss', 'join']) t.equal(sample(text, `preflight_cache_lookups_total{result="${r}"}`), 1, r);
  t.equal(sample(text, 'preflight_upstream_requests_total{upstream="rpc",outcome="timeout"}'), 1);
  t.equal(sample(text, 'preflight_pool_task_duration_seconds_count'), 1);
  t.equal(sample(text, 'preflight_payments_total{outcome="settled"}'), 1);
  t.equal(sample(text, 'preflight_quota_rejections_total{plan="Basic"}'), 1);
  t.equal(sample(text, 'preflight_circuit_breaker_state{upstream="rpc",state="open"}'), 1);
  t.equal(sample(text, 'preflight_circuit_breaker_state{upstream="rpc",state="closed"}'), 0);
  t.equal(sample(text, 'preflight_pool_queue_size'), 7);
  t.equal(sample(text, 'preflight_pool_utilization_ratio'), 0.25);
  t.equal(sample(text, 'preflight_pool_threads'), 2);
  t.equal(sample(text, 'preflight_payment_ledger_entries{state="verified"}'), 2);
  t.ok(sample(text, 'process_cpu_seconds_total') !== undefined, 'default process metrics are there');
  t.ok(sample(text, 'nodejs_eventloop_lag_p99_seconds') !== undefined, 'default Node.js metrics are there');
  t.equal(HTTP_BUCKETS[0], 0.005);
  t.equal(HTTP_BUCKETS[HTTP_BUCKETS.length - 1], 2.5);
});

t.test('the circuit breaker gauge keeps exactly one state per upstream', async (t) => {
  const m = createMetrics();
  m.circuitState('sourcify', 'open');
  m.circuitState('sourcify', 'half_open');
  const text = await m.metricsText();
  t.equal(sample(text, 'preflight_circuit_breaker_state{upstream="sourcify",state="open"}'), 0);
  t.equal(sample(text, 'preflight_circuit_breaker_state{upstream="sourcify",state="half_open"}'), 1);
});

t.test('registries are independent, so tests can build several apps', async (t) => {
  const a = createMetrics();
  const b = createMetrics();
  a.verdict('decide', 'wait');
  t.equal(sample(await a.metricsText(), 'preflight_verdicts_total{endpoint="decide",verdict="wait"}'), 1);
  t.equal(sample(await b.metricsText(), 'preflight_verdicts_total{endpoint="decide",verdict="wait"}'), undefined);
});

t.test('pool and ledger gauges are read at scrape time', async (t) => {
  const m = createMetrics();
  let queued = 1;
  let ledger: Record<string, number> = { verified: 3, settling: 1 };
  m.setPoolSource(() => ({ queueSize: queued, utilization: 0.5, threads: 4 }));
  m.setLedgerSource(async () => ledger);
  t.equal(sample(await m.metricsText(), 'preflight_pool_queue_size'), 1);
  queued = 9;
  ledger = { settled: 4 };
  const text = await m.metricsText();
  t.equal(sample(text, 'preflight_pool_queue_size'), 9);
  t.equal(sample(text, 'preflight_payment_ledger_entries{state="settled"}'), 4);
  t.equal(
    sample(text, 'preflight_payment_ledger_entries{state="verified"}'),
    undefined,
    'a state gone from the ledger is gone from the scrape',
  );
});

t.test('a failing ledger read is counted and never breaks the scrape', async (t) => {
  const m = createMetrics();
  let fail = false;
  m.setLedgerSource(async () => {
    if (fail) throw new Error('database is down');
    return { settled: 5 };
  });
  await m.metricsText();
  fail = true;
  const text = await m.metricsText();
  t.equal(sample(text, 'preflight_metrics_source_errors_total{source="ledger"}'), 1);
  t.equal(sample(text, 'preflight_payment_ledger_entries{state="settled"}'), 5, 'the last good value stays');
});

t.test('label cardinality is capped: a flood of distinct routes folds into "other"', async (t) => {
  const m = createMetrics();
  for (let i = 0; i < 2000; i++) m.httpRequest(`/v1/thing/${i}`, 'GET', 404, 0.001);
  const text = await m.metricsText();
  const series = text.split('\n').filter((l) => l.startsWith('preflight_http_request_duration_seconds_count{'));
  t.ok(series.length <= 501, `bounded series (${series.length})`);
  t.equal(
    sample(text, 'preflight_http_request_duration_seconds_count{route="other",method="other",status="other"}'),
    1500,
  );
});

const gate = promtoolGate();
t.test('promtool accepts the exposition', { skip: gate.skip }, async (t) => {
  if (gate.fail !== null) return t.fail(gate.fail);
  const m = createMetrics();
  recordEverything(m);
  const r = promtool(['check', 'metrics'], { input: await m.metricsText() });
  t.equal(r.status, 0, r.output);
  t.equal(r.output.trim(), '', 'no lint findings');
});
