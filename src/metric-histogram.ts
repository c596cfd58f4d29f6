/**
 * A prom-client Histogram whose labelled children count in plain arrays. prom-client resolves a
 * child's labels on every observe (validation and a hash of the label object), which a cached
 * answer pays five times; a leaf here only finds its bucket and adds. Reading the histogram (a
 * scrape) hands prom-client's registry the leaves' buckets, sums and counts in the shape its own
 * histogram produces, so the exposition is the same text (test/metrics/leaf-histogram.test.ts
 * compares the two).
 */
import { Histogram, type HistogramConfiguration } from 'prom-client';

/** One labelled child: what a caller observes into. */
export interface HistogramLeaf {
  observe(value: number): void;
}

class Leaf implements HistogramLeaf {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

/** One exported sample, as prom-client's registry formats it. */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
  exemplar: null | undefined;
}

interface PromData {
  name: string;
  help: string;
  type: string;
  values: unknown[];
  aggregator: string;
}

export class LeafHistogram<T extends string> extends Histogram<T> {
  // Plain fields, not #private ones: prom-client's constructor calls reset() before they exist.
  private readonly bounds: readonly number[];
  private readonly names: readonly string[];
  private readonly leaves: Leaf[] = [];
  private readonly metricName: string;

  constructor(config: HistogramConfiguration<T> & { buckets: number[] }) {
    super(config);
    this.metricName = config.name;
    this.bounds = [...config.buckets];
    this.names = [...(config.labelNames ?? [])];
  }

  /** The child for these label values, in the order of labelNames. Make each once and keep it. */
  leaf(values: readonly string[]): HistogramLeaf {
    if (values.length !== this.names.length) {
      throw new Error(`${this.metricName}: ${this.names.length} label values expected, got ${values.length}`);
    }
    const labels: Record<string, string> = {};
    this.names.forEach((n, i) => {
      labels[n] = values[i];
    });
    const leaf = new Leaf(labels, this.bounds);
    this.leaves.push(leaf);
    return leaf;
  }

  /** What prom-client's registry (and get()) reads: its own samples, then the leaves'. */
  async getForPromString(): Promise<PromData> {
    // prom-client's own method (not in its type declarations): the samples of labels() children.
    const own = (Histogram.prototype as unknown as { getForPromString(): Promise<PromData> }).getForPromString;
    const base = await own.call(this);
    const bucket = `${this.metricName}_bucket`;
    const out: Sample[] = [];
    for (const l of this.leaves) {
      if (l.count === 0) continue;
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += l.counts[i];
        out.push({
          labels: { le: this.bounds[i] },
          sharedLabels: l.labels,
          value: acc,
          metricName: bucket,
          exemplar: null,
        });
      }
      out.push(
        { labels: { le: '+Inf' }, sharedLabels: l.labels, value: l.count, metricName: bucket, exemplar: null },
        { labels: {}, sharedLabels: l.labels, value: l.sum, metricName: `${this.metricName}_sum`, exemplar: undefined },
        {
          labels: {},
          sharedLabels: l.labels,
          value: l.count,
          metricName: `${this.metricName}_count`,
          exemplar: undefined,
        },
      );
    }
    base.values = [...base.values, ...out];
    return base;
  }

  override reset(): void {
    super.reset();
    for (const l of this.leaves ?? []) {
      l.counts.fill(0);
      l.sum = 0;
      l.count = 0;
    }
  }
}
