/**
 * The monitoring assets hold together: promtool accepts and unit-tests the rules, the dashboard is
 * valid JSON, and every metric the dashboard or a rule asks for is one the service exports, with
 * label names the metric really has.
 */
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createMetrics } from '../../src/metrics.js';
import { exposedNames, rulesIn, selectorsIn } from './promql.js';
import { promtool, promtoolGate } from './promtool.js';

// Compiled to dist/test/ops; the assets stay in the source tree.
const OPS = resolve(import.meta.dirname, '../../../ops');
const ruleFiles = readdirSync(OPS)
  .filter((f) => f.endsWith('.rules.yml'))
  .map((f) => join(OPS, f));
const gate = promtoolGate();

interface Panel {
  title: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

async function registryFacts(): Promise<{ names: Set<string>; labelsOf: (metric: string) => Set<string> | null }> {
  const m = createMetrics();
  const names = exposedNames(await m.metricsText());
  const labelsOf = (metric: string): Set<string> | null => {
    const base = metric.replace(/_(bucket|sum|count)$/, '');
    const single = m.registry.getSingleMetric(metric) ?? m.registry.getSingleMetric(base);
    if (single === undefined) return null;
    const own = (single as unknown as { labelNames: string[] }).labelNames;
    return new Set([...own, ...(metric.endsWith('_bucket') ? ['le'] : [])]);
  };
  return { names, labelsOf };
}

t.test('promtool checks the rule files', { skip: gate.skip }, async (t) => {
  if (gate.fail !== null) return t.fail(gate.fail);
  t.ok(ruleFiles.length > 0, 'there are rule files');
  const r = promtool(['check', 'rules', ...ruleFiles]);
  t.equal(r.status, 0, r.output);
});

t.test('promtool unit tests prove each alert fires and stays quiet', { skip: gate.skip }, async (t) => {
  if (gate.fail !== null) return t.fail(gate.fail);
  const r = promtool(['test', 'rules', 'preflight.rules.test.yml'], { cwd: OPS });
  t.equal(r.status, 0, r.output);
  t.match(r.output, /SUCCESS/);
});

t.test('the rules name only exported metrics and real labels', async (t) => {
  const { names, labelsOf } = await registryFacts();
  const rules = ruleFiles.flatMap((f) => rulesIn(readFileSync(f, 'utf8')));
  const records = new Set(rules.filter((r) => r.kind === 'record').map((r) => r.name));
  const alerts = rules.filter((r) => r.kind === 'alert').map((r) => r.name);
  for (const wanted of [
    'PreflightLatencyP99High',
    'PreflightErrorRatioHigh',
    'PreflightUpstreamFailing',
    'PreflightSettlementBacklog',
  ]) {
    t.ok(alerts.includes(wanted), `alert ${wanted} exists`);
  }
  for (const rule of rules) {
    const sels = selectorsIn(rule.expr);
    t.ok(sels.length > 0, `${rule.name} reads a metric`);
    for (const s of sels) {
      if (records.has(s.metric)) continue;
      t.ok(names.has(s.metric), `${rule.name}: ${s.metric} is exported`);
      const labels = labelsOf(s.metric);
      for (const l of s.labels) t.ok(labels?.has(l), `${rule.name}: ${s.metric} has label ${l}`);
    }
  }
});

t.test('the dashboard parses and every panel query names exported metrics', async (t) => {
  const { names, labelsOf } = await registryFacts();
  const dash = JSON.parse(readFileSync(join(OPS, 'grafana-dashboard.json'), 'utf8')) as {
    title: string;
    panels: Panel[];
  };
  t.type(dash.title, 'string');
  const panels = dash.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const titles = panels.map((p) => p.title.toLowerCase()).join(' | ');
  for (const topic of [
    'p50',
    'p99',
    'request rate',
    'verdict',
    'errors by upstream',
    'cache hit',
    'pool saturation',
    'settlement',
  ]) {
    t.ok(titles.includes(topic), `a panel covers ${topic}`);
  }
  for (const p of panels) {
    if (p.targets === undefined) continue;
    for (const target of p.targets) {
      const sels = selectorsIn(target.expr);
      t.ok(sels.length > 0, `${p.title}: query reads a metric`);
      for (const s of sels) {
        t.ok(names.has(s.metric), `${p.title}: ${s.metric} is exported`);
        const labels = labelsOf(s.metric);
        for (const l of s.labels) t.ok(labels?.has(l), `${p.title}: ${s.metric} has label ${l}`);
      }
    }
  }
});

t.test('the PromQL reader finds what a query names', async (t) => {
  t.same(
    selectorsIn(
      'histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{route!="/metrics",status=~"5.."}[$__rate_interval])))',
    ),
    [{ metric: 'a_bucket', labels: ['route', 'status'] }],
  );
  t.same(
    selectorsIn('x > 0.3 and on () rate(y[5m]) > 0.1').map((s) => s.metric),
    ['x', 'y'],
  );
  t.same(selectorsIn('max by (upstream) (z{state="open"}) == 1'), [{ metric: 'z', labels: ['state'] }]);
});
