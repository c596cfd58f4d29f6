/**
 * Policies: the list, an editor whose 422 errors appear at the line and field their `loc` names,
 * the version history with a diff, the hash with a copy button, and a dry run (docs/console.md §3).
 */
import { useEffect, useState } from 'preact/hooks';
import { call, enc, type FieldError, problem } from './api.js';
import { lineDiff } from './diff.js';
import { lineOf, locate } from './jsonloc.js';
import { CopyButton, Notice, shortHash, usd, Verdict, When } from './ui.js';

interface PolicyRow {
  name: string;
  version: number;
  hash: string;
  created_at: string;
}
interface PolicyVersion extends PolicyRow {
  document: unknown;
}

/** The parts of a guard answer the dry-run panel shows (a DecideResponse). */
interface Evidence {
  name: string;
  type: string;
  status: string;
  reason: string;
  message?: string;
  observed?: {
    matched_rule?: string | null;
    /** The action's outflow in USD: what a proceed would reserve in every limit. */
    outflow_usd?: number | null;
    violations?: Array<{ code: string; rule?: string; limit?: string; observed?: unknown; bound?: unknown }>;
    /** Each limit's window as it stands before this action. */
    limits?: Array<{ id: string; used_usd: number; count: number; max_usd: number | null; max_count: number | null }>;
  };
}
interface GuardAnswer {
  verdict: string;
  decision?: { summary?: string; dry_run?: boolean };
  evidence?: Evidence[];
}

const pretty = (doc: unknown): string => JSON.stringify(doc, null, 2);

const TEMPLATE = pretty({
  default: 'block',
  chains: ['base'],
  address_sets: { payees: ['0x0000000000000000000000000000000000000001'] },
  rules: [{ id: 'pay-payees', effect: 'allow', match: { actions: ['transfer'], recipients: ['$payees'] } }],
  limits: [{ id: 'daily', window: 'day', max_usd: 1000 }],
});

const DRY_RUN = pretty({ action: 'transfer', chain: 'base', amount_usd: 25 });

interface PlacedError extends FieldError {
  line: number | null;
  where: string;
}

/** A 422's errors placed in the document text: `["body","rules",0,...]` is a path into it. */
function place(text: string, errors: FieldError[]): PlacedError[] {
  return errors.map((e) => {
    const path = e.loc[0] === 'body' ? e.loc.slice(1) : e.loc;
    const at = e.loc[0] === 'body' ? locate(text, path) : null;
    const where = path.reduce<string>(
      (s, p) => (typeof p === 'number' ? `${s}[${p}]` : s ? `${s}.${p}` : String(p)),
      '',
    );
    return { ...e, line: at ? lineOf(text, at.start) : null, where: where || 'document' };
  });
}

function Editor({ initial, onSaved }: { initial: PolicyVersion | null; onSaved(name: string, msg: string): void }) {
  const [name, setName] = useState(initial?.name ?? '');
  const [text, setText] = useState(initial ? pretty(initial.document) : TEMPLATE);
  const [errors, setErrors] = useState<PlacedError[]>([]);
  const [nameErr, setNameErr] = useState<string | null>(null);
  const [other, setOther] = useState<string | null>(null);
  const lines = text.split('\n');
  const errorLines = new Map<number, PlacedError[]>();
  for (const e of errors) if (e.line !== null) errorLines.set(e.line, [...(errorLines.get(e.line) ?? []), e]);
  const select = (e: PlacedError) => {
    const ta = document.getElementById('policy-doc') as HTMLTextAreaElement | null;
    const at = locate(text, e.loc.slice(1));
    if (!ta || !at) return;
    ta.focus();
    ta.setSelectionRange(at.start, at.end);
  };
  return (
    <form
      class="card editor"
      aria-labelledby="editor-h"
      onSubmit={async (ev) => {
        ev.preventDefault();
        setErrors([]);
        setNameErr(null);
        setOther(null);
        let doc: unknown;
        try {
          doc = JSON.parse(text);
        } catch (e) {
          setOther(`The document is not JSON: ${(e as Error).message}`);
          return;
        }
        if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(name)) {
          setNameErr('1 to 64 characters: lower-case letters, digits, _ and -, starting with a letter or digit.');
          return;
        }
        const a = await call<PolicyVersion>('PUT', `/v1/policies/${enc(name)}`, doc);
        if (a.status === 200 || a.status === 201) {
          onSaved(
            a.body.name,
            a.status === 201
              ? `Saved ${a.body.name} as version ${a.body.version}.`
              : `No change: ${a.body.name} version ${a.body.version} already has this document.`,
          );
        } else if (a.status === 422 && Array.isArray(a.body?.detail)) {
          const ds = a.body.detail;
          const onName = ds.filter((d) => d.loc[0] === 'path');
          if (onName.length) setNameErr(onName.map((d) => d.msg).join('; '));
          setErrors(
            place(
              text,
              ds.filter((d) => d.loc[0] !== 'path'),
            ),
          );
        } else setOther(problem(a));
      }}
    >
      <h3 id="editor-h">{initial ? `Edit ${initial.name} (new version after v${initial.version})` : 'New policy'}</h3>
      <span class="field">
        <label for="policy-name">Name</label>
        <input
          id="policy-name"
          value={name}
          readOnly={initial !== null}
          required
          autoComplete="off"
          aria-invalid={nameErr ? 'true' : undefined}
          aria-describedby={nameErr ? 'policy-name-error' : undefined}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
      </span>
      {nameErr && (
        <p id="policy-name-error" class="notice error" role="alert">
          {nameErr}
        </p>
      )}
      <label for="policy-doc">Document (JSON)</label>
      <div class="doc">
        <textarea
          id="policy-doc"
          class="mono"
          rows={Math.min(24, Math.max(8, lines.length + 1))}
          spellcheck={false}
          value={text}
          aria-invalid={errors.length ? 'true' : undefined}
          aria-describedby={errors.length ? 'policy-doc-errors' : undefined}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      {errors.length > 0 && (
        <div id="policy-doc-errors" class="field-errors" role="alert">
          <p>The service refused this document:</p>
          <ol class="annotated">
            {lines.map((l, i) =>
              errorLines.has(i + 1) ? (
                <li key={i} value={i + 1}>
                  <code class="mono">{l.trim()}</code>
                  {errorLines.get(i + 1)!.map((e) => (
                    <button type="button" class="error-at" key={e.where} data-loc={e.where} onClick={() => select(e)}>
                      line {i + 1}, <code>{e.where}</code>: {e.msg}
                    </button>
                  ))}
                </li>
              ) : null,
            )}
          </ol>
          {errors
            .filter((e) => e.line === null)
            .map((e) => (
              <p class="error-at" key={e.where} data-loc={e.where}>
                <code>{e.where}</code>: {e.msg}
              </p>
            ))}
        </div>
      )}
      {other && <Notice kind="error">{other}</Notice>}
      <div class="actions">
        <button type="submit">Save version</button>
      </div>
    </form>
  );
}

function History({ name, latest }: { name: string; latest: number }) {
  const [versions, setVersions] = useState<PolicyVersion[]>([]);
  const [from, setFrom] = useState(Math.max(1, latest - 1));
  const [to, setTo] = useState(latest);
  useEffect(() => {
    let live = true;
    (async () => {
      const out: PolicyVersion[] = [];
      for (let n = latest; n >= 1; n--) {
        const a = await call<PolicyVersion>('GET', `/v1/policies/${enc(name)}/versions/${n}`);
        if (a.status === 200) out.push(a.body);
      }
      if (live) setVersions(out);
    })();
    return () => {
      live = false;
    };
  }, [name, latest]);
  const a = versions.find((v) => v.version === from);
  const b = versions.find((v) => v.version === to);
  const diff = a && b ? lineDiff(pretty(a.document), pretty(b.document)) : [];
  const options = versions.map((v) => (
    <option key={v.version} value={v.version}>
      v{v.version}
    </option>
  ));
  return (
    <section class="card" aria-labelledby="history-h">
      <h3 id="history-h">Versions of {name}</h3>
      <table class="stack">
        <caption class="sr-only">Versions</caption>
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Created</th>
            <th scope="col">Hash</th>
          </tr>
        </thead>
        <tbody>
          {versions.map((v) => (
            <tr key={v.version}>
              <td data-label="Version">v{v.version}</td>
              <td data-label="Created">
                <When at={v.created_at} />
              </td>
              <td data-label="Hash">
                <code class="mono" title={v.hash}>
                  {shortHash(v.hash)}
                </code>{' '}
                <CopyButton text={v.hash} label={`Copy the hash of version ${v.version}`} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {versions.length > 1 && (
        <div>
          <div class="row">
            <span class="field">
              <label for="diff-from">Compare</label>
              <select
                id="diff-from"
                value={from}
                onChange={(e) => setFrom(Number((e.target as HTMLSelectElement).value))}
              >
                {options}
              </select>
            </span>
            <span class="field">
              <label for="diff-to">with</label>
              <select id="diff-to" value={to} onChange={(e) => setTo(Number((e.target as HTMLSelectElement).value))}>
                {options}
              </select>
            </span>
          </div>
          <figure>
            <figcaption>
              Changes from v{from} to v{to}
            </figcaption>
            <pre class="diff mono">
              {diff.map((d, i) => (
                <div key={i} class={d.op === '+' ? 'add' : d.op === '-' ? 'del' : ''}>
                  {d.op === '+' ? (
                    <ins>{`+ ${d.text}`}</ins>
                  ) : d.op === '-' ? (
                    <del>{`- ${d.text}`}</del>
                  ) : (
                    `  ${d.text}`
                  )}
                </div>
              ))}
            </pre>
          </figure>
        </div>
      )}
    </section>
  );
}

function DryRun({ name }: { name: string }) {
  const [text, setText] = useState(DRY_RUN);
  const [answer, setAnswer] = useState<GuardAnswer | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const evidence = answer?.evidence ?? [];
  const policyItem = evidence.find((e) => e.type === 'policy');
  const limits = policyItem?.observed?.limits ?? [];
  const outflow = policyItem?.observed?.outflow_usd ?? null;
  const reasons = evidence.filter((e) => e.status !== 'pass' && e.status !== 'skipped');
  return (
    <section class="card" aria-labelledby="dry-h">
      <h3 id="dry-h">Dry run under {name}</h3>
      <p class="muted">
        What /v1/guard would answer under the current version: no reservation, no signature; it costs one call.
      </p>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setErr(null);
          setAnswer(null);
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch (x) {
            setErr(`The request is not JSON: ${(x as Error).message}`);
            return;
          }
          const a = await call<GuardAnswer>('POST', `/v1/policies/${enc(name)}/evaluate`, body);
          if (a.status === 200) setAnswer(a.body);
          else setErr(problem(a));
        }}
      >
        <label for="dry-request">Guard request (JSON)</label>
        <textarea
          id="dry-request"
          class="mono"
          rows={6}
          spellcheck={false}
          value={text}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        />
        <div class="actions">
          <button type="submit">Run</button>
        </div>
      </form>
      {err && <Notice kind="error">{err}</Notice>}
      {answer && (
        <div class="dry-answer" role="status">
          <p>
            Verdict <Verdict v={answer.verdict} /> {answer.decision?.summary}
          </p>
          <h4>Reasons</h4>
          <ul>
            {reasons.map((e) => (
              <li key={e.name}>
                <strong>{e.name}</strong> {e.status}: {e.reason} {e.message ? `(${e.message})` : ''}
              </li>
            ))}
            {(policyItem?.observed?.violations ?? []).map((v, i) => (
              <li key={`v${i}`}>
                violation <code>{v.code}</code> {v.rule ?? v.limit ?? ''}
              </li>
            ))}
            {reasons.length === 0 && <li>none</li>}
          </ul>
          <h4>Usage it would take</h4>
          {limits.length === 0 ? (
            <p class="muted">No limit applies.</p>
          ) : (
            <ul>
              {limits.map((l) => (
                <li key={l.id}>
                  {l.id}: {usd(outflow)} and 1 call on top of {usd(l.used_usd)} and {l.count} used, bound{' '}
                  {l.max_usd === null ? 'none' : usd(l.max_usd)}
                  {l.max_count === null ? '' : ` and ${l.max_count} calls`}
                </li>
              ))}
            </ul>
          )}
          {answer.decision?.dry_run && <p class="muted">A dry run: nothing was reserved.</p>}
        </div>
      )}
    </section>
  );
}

export function Policies() {
  const [list, setList] = useState<PolicyRow[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const [open, setOpen] = useState<PolicyVersion | null | 'new'>(null);
  const load = async (select?: string) => {
    const a = await call<{ policies: PolicyRow[] }>('GET', '/v1/policies');
    if (a.status !== 200) return setErr(problem(a));
    setList(a.body.policies);
    if (select) {
      const p = await call<PolicyVersion>('GET', `/v1/policies/${enc(select)}`);
      if (p.status === 200) setOpen(p.body);
    }
  };
  useEffect(() => {
    void load();
  }, []);
  const current = open !== null && open !== 'new' ? open : null;
  return (
    <div>
      <h2>Policies</h2>
      {msg && <Notice kind="ok">{msg}</Notice>}
      {err && <Notice kind="error">{err}</Notice>}
      <div class="row">
        <button type="button" onClick={() => setOpen('new')}>
          New policy
        </button>
      </div>
      {list && list.length === 0 && <p class="muted">No policy yet.</p>}
      {list && list.length > 0 && (
        <table class="stack">
          <caption class="sr-only">Policies</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Version</th>
              <th scope="col">Hash</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.map((p) => (
              <tr key={p.name} class={current?.name === p.name ? 'selected' : ''}>
                <td data-label="Name">
                  <button
                    type="button"
                    class="link"
                    onClick={() => void load(p.name)}
                    aria-label={`Open policy ${p.name}`}
                  >
                    {p.name}
                  </button>
                </td>
                <td data-label="Version">v{p.version}</td>
                <td data-label="Hash">
                  <code class="mono" title={p.hash}>
                    {shortHash(p.hash)}
                  </code>{' '}
                  <CopyButton text={p.hash} label={`Copy the hash of ${p.name}`} />
                </td>
                <td data-label="Created">
                  <When at={p.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {open !== null && (
        <Editor
          key={current ? `${current.name}@${current.version}` : 'new'}
          initial={current}
          onSaved={(name, m) => {
            setMsg(m);
            void load(name);
          }}
        />
      )}
      {current && <History key={`h-${current.name}@${current.version}`} name={current.name} latest={current.version} />}
      {current && <DryRun key={`d-${current.name}`} name={current.name} />}
    </div>
  );
}
