/** The leaf histogram exposes exactly what prom-client's own histogram does for the same observations. */
import t from 'tap';
import { Histogram, Registry } from 'prom-client';
import { LeafHistogram } from '../../src/metric-histogram.js';

const BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const config = (registry: Registry) => ({
  name: 'x_duration_seconds',
  help: 'A duration "quoted" \\ with a backslash.',
  labelNames: ['type', 'cache'] as const,
  buckets: BUCKETS,
  registers: [registry],
});

function pair() {
  const refReg = new Registry();
  const leafReg = new Registry();
  const ref = new Histogram(config(refReg));
  const leaf = new LeafHistogram(config(leafReg));
  return { refReg, leafReg, ref, leaf };
}

t.test('same text and JSON as prom-client for the same observations', async (t) => {
  const { refReg, leafReg, ref, leaf } = pair();
  // Deterministic values across every bucket, the edges, zero, past the last bound, and label
  // values prom-client must escape.
  const labelSets: Array<[string, string]> = [
    ['price', 'hit'],
    ['dex_price', 'miss'],
    ['http', 'a "quoted"\nvalue\\'],
  ];
  const leaves = labelSets.map((l) => leaf.leaf(l));
  let seed = 7;
  const next = () => {
    seed = (seed * 48271) % 2147483647;
    return seed / 2147483647;
  };
  const values = [0, 0.0005, 0.001, 5, 7.5, 0.3, ...Array.from({ length: 500 }, () => next() * 6)];
  values.forEach((v, i) => {
    const k = i % labelSets.length;
    ref.labels(...labelSets[k]).observe(v);
    leaves[k].observe(v);
  });
  t.equal(await leafReg.metrics(), await refReg.metrics(), 'exposition text');
  t.same(await leaf.get(), await ref.get(), 'get()');
});

t.test('reset empties it, and a reused leaf counts again from zero', async (t) => {
  const { refReg, leafReg, ref, leaf } = pair();
  const l = leaf.leaf(['price', 'hit']);
  l.observe(0.2);
  ref.labels('price', 'hit').observe(0.2);
  leaf.reset();
  ref.reset();
  t.equal(await leafReg.metrics(), await refReg.metrics(), 'both empty');
  l.observe(0.003);
  ref.labels('price', 'hit').observe(0.003);
  t.equal(await leafReg.metrics(), await refReg.metrics(), 'one observation after the reset');
});

t.test('a value that is not a number is refused, as prom-client refuses it', async (t) => {
  const { leaf } = pair();
  const l = leaf.leaf(['price', 'hit']);
  t.throws(() => l.observe(Number.NaN), TypeError);
  t.throws(() => leaf.leaf(['only one']), /2 label values expected/);
});
