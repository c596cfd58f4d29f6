/**
 * Verdicts: the log, newest first, one page at a time by its cursor, filtered by key, verdict and
 * time; a row opens to its reasons, policy version and reservation (docs/console.md §3).
 */
import { useEffect, useState } from 'preact/hooks';
import { call, problem } from './api.js';
import type { KeyRow } from './keys.js';
import { Notice, usd, Verdict, When } from './ui.js';

interface LogRow {
  id: string;
  at: string;
  key_id: string;
  key_name: string;
  endpoint: string;
  verdict: string;
  risk: string;
  failure_modes: string[];
  policy: { name: string; version: number; hash: string } | null;
  reserved_usd: number | null;
  reservation: 'reserved' | 'committed' | 'released' | null;
}

export const PAGE_SIZE = 50;

interface Filters {
  key: string;
  verdict: string;
  since: string;
}

function Row({ r }: { r: LogRow }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <tr class={open ? 'selected' : ''}>
        <td data-label="Time">
          <button
            type="button"
            class="link"
            aria-expanded={open}
            aria-controls={`detail-${r.id}`}
            onClick={() => setOpen(!open)}
          >
            <When at={r.at} />
          </button>
        </td>
        <td data-label="Key" class="wrap">
          {r.key_name}
        </td>
        <td data-label="Endpoint" class="wrap">
          {r.endpoint}
        </td>
        <td data-label="Verdict">
          <Verdict v={r.verdict} />
        </td>
        <td data-label="Risk">{r.risk}</td>
        <td data-label="Reserved">{r.reserved_usd ? usd(r.reserved_usd) : '—'}</td>
      </tr>
      {open && (
        <tr id={`detail-${r.id}`} class="detail">
          <td colSpan={6}>
            <dl class="figures">
              <dt>Reasons</dt>
              <dd>{r.failure_modes.length ? r.failure_modes.join(', ') : 'none'}</dd>
              <dt>Policy</dt>
              <dd class="wrap">
                {r.policy ? (
                  <>
                    {r.policy.name} v{r.policy.version} <code class="mono">{r.policy.hash}</code>
                  </>
                ) : (
                  'none'
                )}
              </dd>
              <dt>Reservation</dt>
              <dd>{r.reservation ? `${r.reservation}, ${usd(r.reserved_usd)}` : 'none'}</dd>
              <dt>Answer id</dt>
              <dd class="wrap">
                <code class="mono">{r.id}</code>
              </dd>
            </dl>
          </td>
        </tr>
      )}
    </>
  );
}

export function Verdicts() {
  const [keys, setKeys] = useState<KeyRow[]>([]);
  const [draft, setDraft] = useState<Filters>({ key: '', verdict: '', since: '' });
  const [filters, setFilters] = useState<Filters>(draft);
  // The cursors of the pages before this one; the current page's own cursor is the last entry.
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const [page, setPage] = useState<{ rows: LogRow[]; next: string | null } | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    void call<{ keys: KeyRow[] }>('GET', '/v1/keys').then((a) => a.status === 200 && setKeys(a.body.keys));
  }, []);
  const cursor = cursors[cursors.length - 1];
  useEffect(() => {
    let live = true;
    const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (cursor) q.set('cursor', cursor);
    if (filters.key) q.set('key', filters.key);
    if (filters.verdict) q.set('verdict', filters.verdict);
    if (filters.since) q.set('since', new Date(filters.since).toISOString());
    setPage(null);
    void call<{ verdicts: LogRow[]; next_cursor: string | null }>('GET', `/v1/verdicts?${q}`).then((a) => {
      if (!live) return;
      if (a.status !== 200) return setErr(problem(a));
      setErr(null);
      setPage({ rows: a.body.verdicts, next: a.body.next_cursor });
    });
    return () => {
      live = false;
    };
  }, [cursor, filters]);
  const set = (k: keyof Filters) => (e: Event) => setDraft({ ...draft, [k]: (e.target as HTMLInputElement).value });
  return (
    <div>
      <h2>Verdicts</h2>
      <form
        class="row filters"
        aria-label="Filters"
        onSubmit={(e) => {
          e.preventDefault();
          setCursors([null]);
          setFilters(draft);
        }}
      >
        <span class="field">
          <label for="f-key">Key</label>
          <select id="f-key" value={draft.key} onChange={set('key')}>
            <option value="">any key</option>
            {keys.map((k) => (
              <option key={k.id} value={k.id}>
                {k.name}
              </option>
            ))}
          </select>
        </span>
        <span class="field">
          <label for="f-verdict">Verdict</label>
          <select id="f-verdict" value={draft.verdict} onChange={set('verdict')}>
            <option value="">any verdict</option>
            <option value="proceed">proceed</option>
            <option value="wait">wait</option>
            <option value="block">block</option>
          </select>
        </span>
        <span class="field">
          <label for="f-since">Since (local time)</label>
          <input id="f-since" type="datetime-local" value={draft.since} onInput={set('since')} />
        </span>
        <button type="submit">Apply</button>
      </form>
      {err && <Notice kind="error">{err}</Notice>}
      {page === null && !err && <p aria-busy="true">Loading…</p>}
      {page && page.rows.length === 0 && <p class="muted">No verdict matches.</p>}
      {page && page.rows.length > 0 && (
        <table class="stack log" aria-describedby="page-info">
          <caption class="sr-only">Verdict log, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Key</th>
              <th scope="col">Endpoint</th>
              <th scope="col">Verdict</th>
              <th scope="col">Risk</th>
              <th scope="col">Reserved</th>
            </tr>
          </thead>
          <tbody>
            {page.rows.map((r) => (
              <Row key={r.id} r={r} />
            ))}
          </tbody>
        </table>
      )}
      <nav class="row pager" aria-label="Pages">
        <button
          type="button"
          class="secondary"
          disabled={cursors.length <= 1}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Newer
        </button>
        <span id="page-info">Page {cursors.length}</span>
        <button
          type="button"
          class="secondary"
          disabled={!page?.next}
          onClick={() => page?.next && setCursors([...cursors, page.next])}
        >
          Older
        </button>
      </nav>
    </div>
  );
}
