/**
 * Headless Chromium (Debian package `chromium`) driven over the DevTools protocol, for tests that
 * need a real browser. The browser is kept on loopback: every host name but 127.0.0.1 resolves to
 * nothing, any proxied request goes to a closed port, and background services are off. When the
 * binary is missing the gate says so: tests fail under CI=true, where the set-up installs it, and
 * skip elsewhere.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'undici';

const BINARIES = ['chromium', 'chromium-browser'];

export interface ChromiumGate {
  bin: string | null;
  skip: string | false;
  fail: string | null;
}

export function chromiumGate(): ChromiumGate {
  for (const bin of BINARIES) {
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
    if (r.error === undefined && r.status === 0) return { bin, skip: false, fail: null };
  }
  const why = 'chromium not found: install the Debian package "chromium" (apt-get install -y chromium)';
  return process.env.CI === 'true' ? { bin: null, skip: false, fail: why } : { bin: null, skip: why, fail: null };
}

type Json = Record<string, any>;

export interface CdpEvent {
  method: string;
  params: Json;
}

/** One page in a fresh headless browser, with every protocol event it sent kept in `events`. */
export interface BrowserPage {
  events: CdpEvent[];
  send(method: string, params?: Json): Promise<Json>;
  /** Evaluates an expression in the page and returns its value (JSON-serialisable results only). */
  evaluate<T>(expression: string): Promise<T>;
  close(): Promise<void>;
}

/** What keeps the browser on loopback (docs/console.md §6), for this helper and for playwright's launch (test/helpers/browser.ts). */
export const LOOPBACK_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
  '--proxy-server=http://127.0.0.1:9',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-dev-shm-usage',
];
const LOOPBACK_ONLY = ['--headless', ...LOOPBACK_FLAGS];

function devtoolsUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(seen);
      if (m) {
        child.stderr?.off('data', onData);
        resolve(m[1]);
      }
    };
    child.stderr?.on('data', onData);
    child.once('exit', (code, signal) =>
      reject(new Error(`chromium exited (${code ?? signal}) before DevTools listened:\n${seen.slice(-2000)}`)),
    );
  });
}

/**
 * Starts the browser with a fresh profile and opens one blank page with the Network, Log, Runtime
 * and Page domains enabled, so the caller sees every request and every console or CSP message.
 */
export async function openPage(bin: string): Promise<BrowserPage> {
  const profile = mkdtempSync(join(tmpdir(), 'preflight-chromium-'));
  const child = spawn(
    bin,
    [...LOOPBACK_ONLY, `--user-data-dir=${profile}`, '--remote-debugging-port=0', 'about:blank'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      // Its own process group, so the renderer and helper processes it forks end with it.
      detached: true,
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  };
  let ws: WebSocket | null = null;
  let nextId = 1;
  const pending = new Map<number, { resolve(v: Json): void; reject(e: Error): void }>();
  const events: CdpEvent[] = [];
  let sessionId: string | undefined;
  const raw = (method: string, params: Json = {}, session?: string): Promise<Json> =>
    new Promise((resolve, reject) => {
      if (!ws) return reject(new Error('DevTools not connected'));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params, ...(session ? { sessionId: session } : {}) }));
    });

  const cleanup = async () => {
    // A clean shutdown first, so the browser stops writing to its profile; the group if it lingers.
    if (ws && child.exitCode === null && child.signalCode === null)
      await Promise.race([raw('Browser.close').catch(() => {}), exited, new Promise((r) => setTimeout(r, 10_000))]);
    ws?.close();
    if (child.exitCode === null && child.signalCode === null) killGroup();
    await exited;
    killGroup(); // helpers that outlived the browser process
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };

  try {
    const url = await devtoolsUrl(child);
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', () => reject(new Error(`DevTools websocket ${url} failed`)), { once: true });
    });
    ws = socket;
    socket.addEventListener('message', (ev) => {
      const msg = JSON.parse(String(ev.data)) as Json;
      if (typeof msg.id === 'number') {
        const p = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) p?.reject(new Error(`${msg.error.message} (${msg.error.code})`));
        else p?.resolve(msg.result ?? {});
      } else if (msg.method && msg.sessionId === sessionId) {
        events.push({ method: msg.method, params: msg.params ?? {} });
      }
    });
    const { targetId } = await raw('Target.createTarget', { url: 'about:blank' });
    sessionId = (await raw('Target.attachToTarget', { targetId, flatten: true })).sessionId as string;
    for (const domain of ['Network', 'Log', 'Runtime', 'Page']) await raw(`${domain}.enable`, {}, sessionId);
  } catch (err) {
    await cleanup();
    throw err;
  }

  const send = (method: string, params: Json = {}) => raw(method, params, sessionId);
  return {
    events,
    send,
    async evaluate<T>(expression: string): Promise<T> {
      const r = await send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
      if (r.exceptionDetails) throw new Error(`page: ${JSON.stringify(r.exceptionDetails).slice(0, 500)}`);
      return r.result.value as T;
    },
    close: cleanup,
  };
}
