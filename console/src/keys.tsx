/** Keys: the account's keys, a new agent key shown once, binding to a policy, revoking (docs/console.md §3). */
import { useEffect, useState } from 'preact/hooks';
import { call, enc, problem } from './api.js';
import { Confirm, CopyButton, Notice, When } from './ui.js';

export interface KeyRow {
  id: string;
  name: string;
  role: 'owner' | 'agent';
  policy: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

function PolicySelect(props: { id: string; label: string; value: string; names: string[]; onChange(v: string): void }) {
  return (
    <span class="field">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)}>
        <option value="">no policy</option>
        {props.names.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </span>
  );
}

function KeyLine({ k, names, reload }: { k: KeyRow; names: string[]; reload(msg: string): void }) {
  const [policy, setPolicy] = useState(k.policy ?? '');
  const [asking, setAsking] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const live = k.revoked_at === null;
  return (
    <tr class={live ? '' : 'revoked'}>
      <td data-label="Name" class="wrap">
        {k.name}
      </td>
      <td data-label="Role">{k.role}</td>
      <td data-label="Policy">
        {live ? (
          <form
            class="inline"
            onSubmit={async (e) => {
              e.preventDefault();
              const a = await call('PATCH', `/v1/keys/${enc(k.id)}`, { policy: policy || null });
              if (a.status === 200) reload(`Key ${k.name} is now bound to ${policy || 'no policy'}.`);
              else setErr(problem(a));
            }}
          >
            <PolicySelect
              id={`bind-${k.id}`}
              label={`Policy of ${k.name}`}
              value={policy}
              names={names}
              onChange={setPolicy}
            />
            <button type="submit" class="secondary" disabled={policy === (k.policy ?? '')}>
              Bind
            </button>
          </form>
        ) : (
          (k.policy ?? 'none')
        )}
        {err && <Notice kind="error">{err}</Notice>}
      </td>
      <td data-label="Created">
        <When at={k.created_at} />
      </td>
      <td data-label="Last used">
        <When at={k.last_used_at} />
      </td>
      <td data-label="State">
        {live ? (
          k.role === 'agent' ? (
            <button type="button" class="danger" onClick={() => setAsking(true)} aria-label={`Revoke ${k.name}`}>
              Revoke
            </button>
          ) : (
            'live'
          )
        ) : (
          <span>
            revoked <When at={k.revoked_at} />
          </span>
        )}
        {asking && (
          <Confirm
            title={`Revoke ${k.name}?`}
            confirm="Revoke the key"
            onCancel={() => setAsking(false)}
            onConfirm={async () => {
              setAsking(false);
              const a = await call('DELETE', `/v1/keys/${enc(k.id)}`);
              if (a.status === 204) reload(`Key ${k.name} is revoked: its calls are refused from now on.`);
              else setErr(problem(a));
            }}
          >
            <p>Calls with this key are refused from now on, on every instance within seconds. This cannot be undone.</p>
          </Confirm>
        )}
      </td>
    </tr>
  );
}

export function Keys() {
  const [keys, setKeys] = useState<KeyRow[] | null>(null);
  const [names, setNames] = useState<string[]>([]);
  const [err, setErr] = useState<string | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [policy, setPolicy] = useState('');
  const [nameErr, setNameErr] = useState<string | null>(null);
  const [created, setCreated] = useState<{ name: string; api_key: string } | null>(null);
  const load = async () => {
    const [k, p] = await Promise.all([
      call<{ keys: KeyRow[] }>('GET', '/v1/keys'),
      call<{ policies: Array<{ name: string }> }>('GET', '/v1/policies'),
    ]);
    if (k.status !== 200) return setErr(problem(k));
    setKeys(k.body.keys);
    if (p.status === 200) setNames(p.body.policies.map((x) => x.name));
  };
  useEffect(() => {
    void load();
  }, []);
  const reload = (m: string) => {
    setMsg(m);
    void load();
  };
  return (
    <div>
      <h2>Keys</h2>
      {msg && <Notice kind="ok">{msg}</Notice>}
      <section class="card" aria-labelledby="new-key-h">
        <h3 id="new-key-h">New agent key</h3>
        <form
          class="row"
          onSubmit={async (e) => {
            e.preventDefault();
            setNameErr(null);
            const body: Record<string, unknown> = { name };
            if (policy) body.policy = policy;
            const a = await call<{ name: string; api_key: string }>('POST', '/v1/keys', body);
            if (a.status === 201) {
              setCreated({ name: a.body.name, api_key: a.body.api_key });
              setName('');
              reload(`Agent key ${a.body.name} created.`);
            } else if (a.status === 422 && Array.isArray(a.body?.detail))
              setNameErr(a.body.detail.map((d) => `${d.loc.slice(1).join('.')}: ${d.msg}`).join('; '));
            else setNameErr(problem(a));
          }}
        >
          <span class="field">
            <label for="new-key-name">Name</label>
            <input
              id="new-key-name"
              value={name}
              required
              maxLength={64}
              autoComplete="off"
              aria-invalid={nameErr ? 'true' : undefined}
              aria-describedby={nameErr ? 'new-key-error' : undefined}
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
          </span>
          <PolicySelect id="new-key-policy" label="Policy" value={policy} names={names} onChange={setPolicy} />
          <button type="submit">Create key</button>
        </form>
        {nameErr && (
          <p id="new-key-error" class="notice error" role="alert">
            {nameErr}
          </p>
        )}
        {created && (
          <section class="secret" aria-labelledby="secret-h">
            <h4 id="secret-h">The key of {created.name}: shown once</h4>
            <p>Store it now in the agent's secret store. The service keeps only its hash and cannot show it again.</p>
            <label for="secret-value">API key</label>
            <div class="row">
              <input id="secret-value" class="mono" readOnly value={created.api_key} />
              <CopyButton text={created.api_key} label={`Copy the key of ${created.name}`} />
              <button type="button" class="secondary" onClick={() => setCreated(null)}>
                Done, hide it
              </button>
            </div>
          </section>
        )}
      </section>
      {err && <Notice kind="error">{err}</Notice>}
      {keys === null && !err && <p aria-busy="true">Loading…</p>}
      {keys && (
        <table class="stack">
          <caption class="sr-only">The account's keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Policy</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <KeyLine key={`${k.id}-${k.policy}-${k.revoked_at}`} k={k} names={names} reload={reload} />
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
