/**
 * The operator console (docs/console.md): sign-in with the owner key, then four views chosen by the
 * URL's fragment. Everything it loads and calls is on the service's own origin.
 */
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { call, problem, saveKey, savedKey } from './api.js';
import { Keys } from './keys.js';
import { Overview } from './overview.js';
import { Policies } from './policies.js';
import { Verdicts } from './verdicts.js';
import { Notice } from './ui.js';

const VIEWS = {
  overview: { title: 'Overview', view: Overview },
  keys: { title: 'Keys', view: Keys },
  policies: { title: 'Policies', view: Policies },
  verdicts: { title: 'Verdicts', view: Verdicts },
} as const;
type ViewName = keyof typeof VIEWS;

const viewOf = (hash: string): ViewName => {
  const v = hash.replace(/^#\/?/, '');
  return v in VIEWS ? (v as ViewName) : 'overview';
};

/** What GET /v1/keys says about a key: an owner may manage, anything else is told why not. */
async function check(key: string): Promise<{ ok: true } | { ok: false; why: string }> {
  const a = await call('GET', '/v1/keys', undefined, key);
  if (a.status === 200) return { ok: true };
  if (a.status === 403)
    return {
      ok: false,
      why: 'This is an agent key: it can call the API but cannot manage the account. Sign in with the account’s owner key.',
    };
  if (a.status === 401) return { ok: false, why: 'The service does not know this key, or it has been revoked.' };
  if (a.status === 404)
    return { ok: false, why: 'This server has no account management (GET /v1/keys is not served).' };
  return { ok: false, why: problem(a) };
}

function SignIn({ onIn }: { onIn(): void }) {
  const [key, setKey] = useState('');
  const [why, setWhy] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main id="main" class="signin">
      <h1>preflight console</h1>
      <form
        class="card"
        aria-labelledby="signin-h"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setWhy(null);
          const r = await check(key.trim());
          setBusy(false);
          if (r.ok) {
            saveKey(key.trim());
            setKey('');
            onIn();
          } else setWhy(r.why);
        }}
      >
        <h2 id="signin-h">Sign in</h2>
        <p>
          With the account’s owner key, the <code>api_key</code> of its signup. It stays in this tab only and is sent to
          this service as a header.
        </p>
        <label for="owner-key">Owner key</label>
        <input
          id="owner-key"
          type="password"
          autoComplete="off"
          required
          value={key}
          aria-invalid={why ? 'true' : undefined}
          aria-describedby={why ? 'signin-error' : undefined}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
        />
        {why && (
          <p id="signin-error" class="notice error" role="alert">
            {why}
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Checking…' : 'Sign in'}
          </button>
        </div>
      </form>
    </main>
  );
}

function Console({ onOut }: { onOut(): void }) {
  const [view, setView] = useState<ViewName>(viewOf(location.hash));
  useEffect(() => {
    const on = () => setView(viewOf(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  useEffect(() => {
    document.title = `${VIEWS[view].title} · preflight console`;
    document.getElementById('main')?.focus();
  }, [view]);
  const View = VIEWS[view].view;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <h1>preflight console</h1>
        <nav aria-label="Views">
          <ul>
            {(Object.keys(VIEWS) as ViewName[]).map((v) => (
              <li key={v}>
                <a href={`#${v}`} aria-current={v === view ? 'page' : undefined}>
                  {VIEWS[v].title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            saveKey(null);
            onOut();
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <View />
      </main>
    </>
  );
}

function App() {
  const [state, setState] = useState<'checking' | 'in' | 'out'>(savedKey() ? 'checking' : 'out');
  const [why, setWhy] = useState<string | null>(null);
  useEffect(() => {
    const key = savedKey();
    if (state !== 'checking' || !key) return;
    void check(key).then((r) => {
      if (r.ok) setState('in');
      else {
        saveKey(null);
        setWhy(r.why);
        setState('out');
      }
    });
  }, [state]);
  if (state === 'checking') return <p aria-busy="true">Checking the key…</p>;
  if (state === 'out')
    return (
      <>
        {why && <Notice kind="error">{why}</Notice>}
        <SignIn onIn={() => setState('in')} />
      </>
    );
  return <Console onOut={() => setState('out')} />;
}

render(<App />, document.getElementById('app')!);
