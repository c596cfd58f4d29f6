/**
 * One limit's window as a uPlot chart: committed and committed + reserved USD over the window, from
 * the verdict log's reservations, ending at the usage endpoint's figures now, against the bound.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface WindowSeries {
  /** Seconds since the epoch, ascending. */
  t: number[];
  committed: number[];
  total: number[];
  bound: number | null;
  start: number;
  end: number;
}

export function WindowChart({ series, label }: { series: WindowSeries; label: string }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const width = Math.max(240, Math.min(640, el.clientWidth || 320));
    // The bound spans the whole window; the usage lines stop at now (null beyond it).
    const t = [...series.t, series.end];
    const boundLine = t.map(() => series.bound);
    const stepped = uPlot.paths.stepped?.({ align: 1 });
    const plot = new uPlot(
      {
        width,
        height: 180,
        scales: {
          x: { time: true, range: () => [series.start, series.end] },
          y: {
            range: (_u, _min, max) => [0, Math.max(max, series.bound ?? 0) * 1.1 || 1],
          },
        },
        axes: [{ stroke: '#333' }, { stroke: '#333', size: 60 }],
        legend: { show: true },
        series: [
          {},
          // Committed + reserved first, so the committed line is drawn over it where they agree.
          { label: 'with reserved USD', stroke: '#a86a1f', width: 2, dash: [6, 4], paths: stepped },
          { label: 'committed USD', stroke: '#1f5fa8', width: 2, fill: 'rgba(31,95,168,0.15)', paths: stepped },
          { label: 'bound USD', stroke: '#b00020', width: 1 },
        ],
      },
      [t, [...series.total, null], [...series.committed, null], boundLine],
      el,
    );
    return () => plot.destroy();
  }, [series]);
  return <div class="chart" ref={host} role="img" aria-label={label} />;
}
