/**
 * The service's /metrics under the bench load: one scrape before the service's scenarios, one in
 * the middle of the first full-speed scenario, one after. The bench requires the check, verdict,
 * cache and pool series to move between the first and the last, and, where promtool (Debian
 * package `prometheus`) is installed, `promtool check metrics` to accept the scrape taken under load.
 */
import { spawnSync } from 'node:child_process';
import type { TargetCheck } from './targets.js';

export async function scrape(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

/** The sum of every sample of `name` (all label sets), 0 when absent. */
export function total(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}

const SERIES: Array<[string, string]> = [
  ['checks', 'preflight_checks_total'],
  ['verdicts', 'preflight_verdicts_total'],
  ['cache lookups', 'preflight_cache_lookups_total'],
  ['pool tasks', 'preflight_pool_task_duration_seconds_count'],
];

/** Verdicts on the scrapes: `pool` only when a scenario with uncached checks ran. */
export function checkScrapes(before: string, underLoad: string | null, after: string, pool: boolean): TargetCheck[] {
  const out: TargetCheck[] = [];
  for (const [label, name] of SERIES) {
    if (label === 'pool tasks' && !pool) continue;
    const delta = total(after, name) - total(before, name);
    out.push({ target: `/metrics: ${label} move under the load`, ok: delta > 0, detail: `${name} +${delta}` });
  }
  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  if (probe.error === undefined && probe.status === 0) {
    if (underLoad === null) {
      out.push({
        target: 'promtool check metrics on a scrape under load',
        ok: false,
        detail: 'no scrape was taken under load',
      });
    } else {
      const r = spawnSync('promtool', ['check', 'metrics'], { input: underLoad, encoding: 'utf8', timeout: 30_000 });
      const said = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
      out.push({
        target: 'promtool check metrics on a scrape under load',
        ok: r.status === 0 && said === '',
        detail: said === '' ? `clean (${underLoad.length} bytes)` : said.slice(0, 300),
      });
    }
  }
  return out;
}
