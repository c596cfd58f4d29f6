/**
 * Just enough PromQL and rule-file reading to ask "which metric names does this expression use?",
 * so the tests can hold the dashboard and the rules to the names the service really exports.
 */
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'offset',
  'bool',
  'inf',
  'nan',
]);

export interface Selector {
  metric: string;
  labels: string[];
}

/** Metric names used by an expression, each with the label names its matchers mention. */
export function selectorsIn(expr: string): Selector[] {
  const out: Selector[] = [];
  const s = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // string literals
    .replace(/\[[^\]]*\]/g, ' ') // range and subquery durations, $__rate_interval included
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const re = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?/g;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    const [, name, matchers, call] = m;
    if (call !== undefined && matchers === undefined) continue; // a function or aggregation
    if (KEYWORDS.has(name.toLowerCase())) continue;
    if (/^\d/.test(name) || /^[0-9.e+-]+$/i.test(name)) continue;
    const labels =
      matchers === undefined
        ? []
        : [...matchers.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((x) => x[1]);
    out.push({ metric: name, labels });
  }
  return out;
}

export interface RuleEntry {
  kind: 'record' | 'alert';
  name: string;
  expr: string;
}

/** Reads record/alert names and their expr (inline or `|` block) from a Prometheus rules file. */
export function rulesIn(yamlText: string): RuleEntry[] {
  const lines = yamlText.split('\n');
  const out: RuleEntry[] = [];
  let current: { kind: 'record' | 'alert'; name: string } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const head = /^\s*-?\s*(record|alert):\s*(\S+)\s*$/.exec(lines[i]);
    if (head !== null) {
      current = { kind: head[1] as 'record' | 'alert', name: head[2] };
      continue;
    }
    const ex = /^(\s*)expr:\s*(.*)$/.exec(lines[i]);
    if (ex === null || current === null) continue;
    let expr = ex[2];
    if (expr === '|' || expr === '>') {
      const indent = ex[1].length;
      const body: string[] = [];
      while (i + 1 < lines.length && (lines[i + 1].trim() === '' || /^\s*/.exec(lines[i + 1])![0].length > indent))
        body.push(lines[++i].trim());
      expr = body.join(' ');
    }
    out.push({ ...current, expr });
    current = null;
  }
  return out;
}

/** Sample names a scrape exposes, from its # TYPE lines (histograms add _bucket, _sum, _count). */
export function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(m[1]);
    if (m[2] === 'histogram' || m[2] === 'summary')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(m[1] + suffix);
  }
  return names;
}
