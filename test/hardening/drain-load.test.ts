/**
 * SIGTERM under load: 50 clients, each on its own keep-alive connection, send decides back to
 * back (each waits ~150 ms on the price provider), and the service is told to stop mid-load.
 *
 * What "nothing accepted is lost" means here, measured from both ends:
 * - every response whose headers arrived has its complete body (a parsable DecideResponse);
 * - the set of request ids the server logged as answered equals the set the clients received in
 *   full: nothing the server answered got lost on the way;
 * - the server reports 0 requests unanswered when it stops, so no request it had read was
 *   dropped: a client request that failed with a connection error was never in its hands (it
 *   raced the close of an idle keep-alive connection, or found the listener closed);
 * - the process exits 0.
 */
import t from 'tap';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnService } from '../helpers/spawn.js';
import { startCoinGecko } from '../emulators/coingecko.js';

const CLIENTS = 50;
const LOAD_BEFORE_SIGTERM_MS = 1000;
const UPSTREAM_DELAY_MS = 150;

interface Outcome {
  id: string;
  startedAt: number;
  /** All request bytes were handed to the socket. */
  sent: boolean;
  status?: number;
  headers: boolean;
  complete: boolean;
  error?: string;
}

function send(agent: http.Agent, base: URL, id: string, body: string): Promise<Outcome> {
  const o: Outcome = { id, startedAt: performance.now(), sent: false, headers: false, complete: false };
  return new Promise((resolve) => {
    const req = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: 'POST',
        path: '/v1/decide',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-request-id': id },
      },
      (res) => {
        o.headers = true;
        o.status = res.statusCode;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            o.complete = typeof (JSON.parse(text) as { verdict?: unknown }).verdict === 'string';
          } catch {
            o.error = 'body is not a DecideResponse';
          }
          resolve(o);
        });
        res.on('aborted', () => {
          o.error = 'body cut short';
          resolve(o);
        });
      },
    );
    req.on('finish', () => (o.sent = true));
    req.on('error', (err: NodeJS.ErrnoException) => {
      o.error ??= err.code ?? err.message;
      resolve(o);
    });
    req.end(body);
  });
}

t.test('SIGTERM under load: every accepted request is answered in full, exit 0', async (t) => {
  const cg = await startCoinGecko();
  t.teardown(() => cg.close());
  cg.fault = { delayMs: UPSTREAM_DELAY_MS };
  const dir = mkdtempSync(join(tmpdir(), 'preflight-drain-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const svc = await spawnService({
    DATABASE_URL: `sqlite:${join(dir, 'drain.db')}`,
    BILLING: 'off',
    PRICE_API_URL: cg.url,
    REQUEST_DEADLINE_MS: '2000',
  });
  t.teardown(() => void svc.child.kill('SIGKILL'));
  const base = new URL(svc.url);

  const outcomes: Outcome[] = [];
  let sigtermAt = Infinity;
  let n = 0;
  const client = async (c: number): Promise<void> => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (;;) {
        const id = `drain-${c}-${n++}`;
        const body = JSON.stringify({ goal: 'drain under load', checks: [{ type: 'price', asset_id: `asset-${id}` }] });
        const o = await send(agent, base, id, body);
        outcomes.push(o);
        // After the SIGTERM a failed request means the service no longer takes this client's calls.
        if (o.error !== undefined && performance.now() > sigtermAt) return;
      }
    } finally {
      agent.destroy();
    }
  };
  const load = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));

  await new Promise((r) => setTimeout(r, LOAD_BEFORE_SIGTERM_MS));
  sigtermAt = performance.now();
  svc.child.kill('SIGTERM');
  const exit = await svc.exited;
  await load;

  const before = outcomes.filter((o) => o.startedAt < sigtermAt);
  const answered = outcomes.filter((o) => o.complete);
  const failed = outcomes.filter((o) => o.error !== undefined);
  const draining = svc.logs.find((l) => l.msg === 'draining') as { inflight?: number } | undefined;
  const stopped = svc.logs.find((l) => l.msg === 'stopped') as { unanswered?: number } | undefined;
  const serverAnswered = new Set(
    svc.logs.filter((l) => l.msg === 'request' && l.route === '/v1/decide').map((l) => String(l.reqId)),
  );
  t.comment(
    `${outcomes.length} requests, ${before.length} started before SIGTERM, ${answered.length} answered in full; ` +
      `${draining?.inflight} in the server's hands at SIGTERM; ${failed.length} connection failures (${failed.filter((o) => o.startedAt < sigtermAt).length} started before SIGTERM, ${failed.filter((o) => o.sent).length} fully sent)`,
  );

  t.same(exit, { code: 0, signal: null }, 'exit 0');
  t.ok((draining?.inflight ?? 0) > 0, 'requests were in flight at SIGTERM');
  t.equal(stopped?.unanswered, 0, 'the server left no request it had read unanswered');
  t.same(
    outcomes.filter((o) => o.headers && !o.complete).map((o) => `${o.id}: ${o.error}`),
    [],
    'every response that started arrived complete',
  );
  t.same(
    outcomes.filter((o) => o.complete && o.status !== 200).map((o) => `${o.id}: ${o.status}`),
    [],
    'every answer is a 200',
  );
  t.same(
    [...serverAnswered].filter((id) => !answered.some((o) => o.id === id)),
    [],
    'every answer the server logged reached its client',
  );
  t.same(
    answered.filter((o) => !serverAnswered.has(o.id)).map((o) => o.id),
    [],
    'and the clients received nothing else',
  );
  t.same(
    failed.filter((o) => serverAnswered.has(o.id)).map((o) => o.id),
    [],
    'no failed request was one the server had answered',
  );
});
