/** Overview: the quota, each policy's limits as charts, and the screening lists (docs/console.md §3). */
import { useEffect, useState } from 'preact/hooks';
import { call, enc, onQuota, problem, quota, type Quota } from './api.js';
import { WindowChart, type WindowSeries } from './chart.js';
import { Notice, untilText, usd, When } from './ui.js';

interface Limit {
  id: string;
  window: string | { rolling_s: number };
  window_start: string;
  window_end: string;
  committed_usd: number;
  reserved_usd: number;
  remaining_usd: number | null;
  max_usd: number | null;
  count: number;
  max_count: number | null;
}
interface Usage {
  name: string;
  version: number;
  limits: Limit[];
}
interface ListInfo {
  name: string;
  kind: string;
  source: string;
  date: string | null;
  size: number;
  hash: string;
  refreshed_at: string | null;
  status: string;
}
interface LogRow {
  at: string;
  policy: { name: string } | string | null;
  reserved_usd: number | null;
  reservation: string | null;
}

const windowText = (w: Limit['window']): string => (typeof w === 'string' ? `per ${w}` : `rolling ${w.rolling_s} s`);
const policyName = (p: LogRow['policy']): string | null => (p === null ? null : typeof p === 'string' ? p : p.name);

/** Reservations of a policy in the log since `since` (newest first, at most two pages). */
async function reservations(policy: string, since: string, live: () => boolean): Promise<LogRow[]> {
  const rows: LogRow[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 2 && live(); page++) {
    const q = new URLSearchParams({ limit: '500', since });
    if (cursor) q.set('cursor', cursor);
    const a = await call<{ verdicts: LogRow[]; next_cursor: string | null }>('GET', `/v1/verdicts?${q}`);
    if (a.status !== 200) break;
    rows.push(...a.body.verdicts.filter((r) => policyName(r.policy) === policy && (r.reserved_usd ?? 0) > 0));
    cursor = a.body.next_cursor;
    if (!cursor) break;
  }
  return rows;
}

function seriesOf(limit: Limit, rows: LogRow[]): WindowSeries {
  const start = Date.parse(limit.window_start) / 1000;
  const end = Date.parse(limit.window_end) / 1000;
  const now = Math.min(end, Date.now() / 1000);
  const t = [start];
  const committed = [0];
  const total = [0];
  let c = 0;
  let all = 0;
  for (const r of [...rows].reverse()) {
    const at = Date.parse(r.at) / 1000;
    if (at < start || at > now) continue;
    all += r.reserved_usd ?? 0;
    if (r.reservation === 'committed') c += r.reserved_usd ?? 0;
    t.push(at);
    committed.push(c);
    total.push(all);
  }
  // The usage endpoint is the truth now (released reservations have left it).
  t.push(now);
  committed.push(limit.committed_usd);
  total.push(limit.committed_usd + limit.reserved_usd);
  return { t, committed, total, bound: limit.max_usd, start, end };
}

function LimitCard({ policy, limit, rows }: { policy: string; limit: Limit; rows: LogRow[] }) {
  const resets = new Date(limit.window_end);
  const series = seriesOf(limit, rows);
  return (
    <article class="card limit" aria-labelledby={`limit-${policy}-${limit.id}`}>
      <h4 id={`limit-${policy}-${limit.id}`}>
        {limit.id} <span class="muted">({windowText(limit.window)})</span>
      </h4>
      <dl class="figures">
        <dt>Committed</dt>
        <dd>{usd(limit.committed_usd)}</dd>
        <dt>Reserved</dt>
        <dd>{usd(limit.reserved_usd)}</dd>
        <dt>Bound</dt>
        <dd>{limit.max_usd === null ? 'none' : usd(limit.max_usd)}</dd>
        <dt>Left</dt>
        <dd>{limit.remaining_usd === null ? '—' : usd(limit.remaining_usd)}</dd>
        <dt>Count</dt>
        <dd>
          {limit.count}
          {limit.max_count === null ? '' : ` of ${limit.max_count}`}
        </dd>
        <dt>Resets</dt>
        <dd>
          <When at={limit.window_end} /> ({untilText(resets)})
        </dd>
      </dl>
      <WindowChart
        series={series}
        label={`${policy} ${limit.id}: ${usd(limit.committed_usd)} committed and ${usd(limit.reserved_usd)} reserved of ${
          limit.max_usd === null ? 'no USD bound' : usd(limit.max_usd)
        } in the window ending ${limit.window_end}`}
      />
    </article>
  );
}

function QuotaCard() {
  const [q, setQ] = useState<Quota | null>(quota());
  useEffect(() => onQuota(setQ), []);
  return (
    <section class="card" aria-labelledby="quota-h">
      <h3 id="quota-h">Monthly quota</h3>
      {q ? (
        <dl class="figures">
          <dt>Used</dt>
          <dd>{q.limit - q.remaining}</dd>
          <dt>Left</dt>
          <dd>
            {q.remaining} of {q.limit}
          </dd>
          <dt>Resets</dt>
          <dd>
            <When at={q.resetsAt.toISOString()} /> ({untilText(q.resetsAt)})
          </dd>
        </dl>
      ) : (
        <p class="muted">
          The service has not reported the account's quota (its RateLimit headers) in this session: its store may be
          unreachable. Reload to ask again.
        </p>
      )}
    </section>
  );
}

export function Overview() {
  const [usages, setUsages] = useState<Array<{ usage: Usage; rows: LogRow[] }> | null>(null);
  const [lists, setLists] = useState<ListInfo[] | null | 'none'>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    (async () => {
      const caps = await call<{ screening?: { lists?: ListInfo[] } }>('GET', '/v1/capabilities');
      if (live)
        setLists(
          caps.status === 200 && Array.isArray(caps.body?.screening?.lists) ? caps.body.screening.lists : 'none',
        );
      const ps = await call<{ policies: Array<{ name: string }> }>('GET', '/v1/policies');
      if (ps.status !== 200) {
        if (live) setErr(problem(ps));
        return;
      }
      const out: Array<{ usage: Usage; rows: LogRow[] }> = [];
      for (const p of ps.body.policies) {
        // Left for another view: ask nothing more.
        if (!live) return;
        const u = await call<Usage>('GET', `/v1/policies/${enc(p.name)}/usage`);
        if (u.status !== 200) continue;
        const since = u.body.limits.map((l) => l.window_start).sort()[0];
        const rows = since ? await reservations(p.name, since, () => live) : [];
        out.push({ usage: u.body, rows });
      }
      if (live) setUsages(out);
    })().catch((e) => live && setErr(String(e)));
    return () => {
      live = false;
    };
  }, []);
  return (
    <div>
      <h2>Overview</h2>
      <QuotaCard />
      <section aria-labelledby="limits-h">
        <h3 id="limits-h">Spend limits</h3>
        {err && <Notice kind="error">{err}</Notice>}
        {!err && usages === null && <p aria-busy="true">Loading…</p>}
        {usages?.length === 0 && <p class="muted">No policy yet: create one on the Policies page.</p>}
        {usages?.map(({ usage, rows }) => (
          <section class="policy-usage" key={usage.name} aria-labelledby={`usage-${usage.name}`}>
            <h4 id={`usage-${usage.name}`}>
              Policy {usage.name} <span class="muted">v{usage.version}</span>
            </h4>
            {usage.limits.length === 0 ? (
              <p class="muted">No limits in this version.</p>
            ) : (
              <div class="grid">
                {usage.limits.map((l) => (
                  <LimitCard key={l.id} policy={usage.name} limit={l} rows={rows} />
                ))}
              </div>
            )}
          </section>
        ))}
      </section>
      <section aria-labelledby="lists-h">
        <h3 id="lists-h">Screening lists</h3>
        {lists === null && <p aria-busy="true">Loading…</p>}
        {lists === 'none' && <p class="muted">This server lists no screening lists in /v1/capabilities.</p>}
        {Array.isArray(lists) && (
          <table class="stack">
            <caption class="sr-only">Screening lists</caption>
            <thead>
              <tr>
                <th scope="col">List</th>
                <th scope="col">Kind</th>
                <th scope="col">Dated</th>
                <th scope="col">Last refresh</th>
                <th scope="col">Addresses</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {lists.map((l) => (
                <tr key={l.name}>
                  <td data-label="List" class="wrap">
                    {l.name}
                  </td>
                  <td data-label="Kind">{l.kind}</td>
                  <td data-label="Dated">
                    {l.date !== null && /^\d{4}-\d{2}-\d{2}$/.test(l.date) ? l.date : <When at={l.date} />}
                  </td>
                  <td data-label="Last refresh">
                    {l.refreshed_at === null && l.status === 'embedded' ? (
                      'the embedded snapshot'
                    ) : (
                      <When at={l.refreshed_at} />
                    )}
                  </td>
                  <td data-label="Addresses">{l.size.toLocaleString('en-US')}</td>
                  <td data-label="Status">{l.status}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
