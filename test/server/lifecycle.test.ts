/** The process: start-up on embedded defaults, bad configuration, and a graceful drain. */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnService, SERVER_ENTRY } from '../helpers/spawn.js';
import { startCoinGecko } from '../emulators/coingecko.js';

const dir = mkdtempSync(join(tmpdir(), 'preflight-life-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('starts on its embedded defaults and answers /health within 2 s', async (t) => {
  // Start-up time is the service's; other test files sharing the two cores add noise, so the
  // best of up to three cold starts is judged.
  const times: number[] = [];
  for (let i = 0; i < 3 && !(times.length > 0 && Math.min(...times) < 2000); i++) {
    const t0 = performance.now();
    const svc = await spawnService({ DATABASE_URL: `sqlite:${join(dir, `a${i}.db`)}` });
    const res = await fetch(`${svc.url}/health`);
    times.push(performance.now() - t0);
    // Answered at once: `starting` (503) while the service warms up, `ok` once it is ready.
    const body = (await res.json()) as { status: string };
    t.ok(
      (res.status === 503 && body.status === 'starting') || (res.status === 200 && body.status === 'ok'),
      `${res.status} ${body.status}`,
    );
    svc.child.kill('SIGTERM');
    t.same(await svc.exited, { code: 0, signal: null }, 'SIGTERM exits 0');
  }
  t.ok(Math.min(...times) < 2000, `spawn to a /health answer in ${times.map((ms) => ms.toFixed(0)).join(', ')} ms`);
});

t.test('/health says starting (503) until the service is warm, then ok, and never goes back', async (t) => {
  const cg = await startCoinGecko();
  t.teardown(() => cg.close());
  cg.setPrice('ethereum', 'usd', 3000);
  const svc = await spawnService({
    DATABASE_URL: `sqlite:${join(dir, 'ready.db')}`,
    BILLING: 'off',
    PRICE_API_URL: cg.url,
    POOL_THREADS: '2',
  });
  t.teardown(() => void svc.child.kill('SIGKILL'));
  const seen: string[] = [];
  let readyLoggedAtOk = false;
  const end = performance.now() + 30_000;
  while (performance.now() < end) {
    const res = await fetch(`${svc.url}/health`);
    const body = (await res.json()) as { status: string };
    t.equal(res.status, body.status === 'ok' ? 200 : 503, `${body.status} is answered ${res.status}`);
    if (body.status === 'starting') t.equal(res.headers.get('retry-after'), '1');
    if (seen.at(-1) !== body.status) seen.push(body.status);
    if (body.status === 'ok') {
      // The line is written before the first ok; give the pipe a moment to deliver it.
      const until = performance.now() + 2000;
      while (!svc.logs.some((l) => l.msg === 'ready') && performance.now() < until)
        await new Promise((r) => setTimeout(r, 10));
      readyLoggedAtOk = svc.logs.some((l) => l.msg === 'ready');
      break;
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  t.same(
    seen.filter((s) => s !== 'starting'),
    ['ok'],
    `states seen: ${seen.join(' -> ')}`,
  );
  t.ok(seen.length === 1 || seen[0] === 'starting', 'starting comes first, if at all');
  t.ok(readyLoggedAtOk, 'the service logged ready by the time it said ok');
  const ready = svc.logs.find((l) => l.msg === 'ready') as { warm_threads?: number; signing?: string } | undefined;
  t.equal(ready?.warm_threads, 2, 'both check threads ran the warm-up before ready');
  // npm ci builds the nonces addon (required in CI); elsewhere it may have been left unbuilt.
  if (process.env.CI === 'true')
    t.equal(ready?.signing, 'prepared (nonces addon)', 'the default signing, by the addon');
  else t.match(ready?.signing, /^prepared \((nonces addon|JavaScript)\)$/, `signing: ${ready?.signing}`);
  const incomplete = svc.logs.find((l) => l.msg === 'the event loop warm-up was incomplete');
  t.notOk(incomplete, `the decide and each warm guard proceeded on the stand-in: ${JSON.stringify(incomplete ?? {})}`);
  // The first request after ok is served by the app at once (nothing held), and its check runs on
  // a warm thread: the price provider is asked once, and nothing else was asked of it before.
  t.equal(cg.stats.requests, 0, 'the warm-up asked the real price provider nothing');
  const res = await fetch(`${svc.url}/v1/decide`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      goal: 'first',
      checks: [{ type: 'price', asset_id: 'ethereum', min_price: 1 }],
      context: { deadline_ms: 5000 },
    }),
  });
  t.equal(res.status, 200);
  t.match(await res.json(), { verdict: 'proceed' });
  t.equal(cg.stats.requests, 1);
  const health = await fetch(`${svc.url}/health`);
  t.equal(health.status, 200, 'ok stays ok');
});

t.test('a bad setting stops start-up with a message naming it', async (t) => {
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: { PATH: process.env.PATH ?? '', REQUEST_DEADLINE_MS: 'soon' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => (err += String(d)));
  const code = await new Promise((r) => child.on('exit', r));
  t.equal(code, 1);
  t.match(err, /REQUEST_DEADLINE_MS must be an integer/);
});

t.test('an unreachable PostgreSQL stops start-up with a clear message', async (t) => {
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => (err += String(d)));
  const code = await new Promise((r) => child.on('exit', r));
  t.equal(code, 1);
  t.match(err, /start-up failed: .*(PostgreSQL|postgres|database)/i);
});

t.test('SIGTERM drains: requests in flight are answered, then exit 0', async (t) => {
  const cg = await startCoinGecko();
  t.teardown(() => cg.close());
  cg.setPrice('ethereum', 'usd', 3000);
  cg.fault = { delayMs: 700 };
  const svc = await spawnService({
    DATABASE_URL: `sqlite:${join(dir, 'b.db')}`,
    BILLING: 'off',
    PRICE_API_URL: cg.url,
  });
  const body = JSON.stringify({
    goal: 'drain',
    checks: [{ type: 'price', asset_id: 'ethereum' }],
    context: { deadline_ms: 3000 },
  });
  const inflight = Array.from({ length: 5 }, () =>
    fetch(`${svc.url}/v1/decide`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
      async (r) => ({ status: r.status, body: (await r.json()) as { verdict: string } }),
    ),
  );
  while (cg.stats.requests < 1) await new Promise((r) => setTimeout(r, 10));
  svc.child.kill('SIGTERM');
  svc.child.kill('SIGTERM'); // a repeated SIGTERM while draining is ignored
  const answers = await Promise.all(inflight);
  t.same(
    answers.map((a) => a.status),
    [200, 200, 200, 200, 200],
    'every accepted request answered',
  );
  t.same([...new Set(answers.map((a) => a.body.verdict))], ['proceed']);
  t.same(await svc.exited, { code: 0, signal: null });
  await t.rejects(fetch(`${svc.url}/health`), 'no longer accepting');
  t.ok(svc.logs.some((l) => l.msg === 'draining') && svc.logs.some((l) => l.msg === 'stopped'));
});

t.test('log lines are written together, yet each reaches stdout within a second of an idle service', async (t) => {
  const svc = await spawnService({ DATABASE_URL: `sqlite:${join(dir, 'logs.db')}` });
  t.teardown(() => void svc.child.kill('SIGKILL'));
  const ids = ['log-probe-1', 'log-probe-2', 'log-probe-3'];
  // /v1/capabilities is held until the service is up, so these are answered by the app itself.
  for (const id of ids) await (await fetch(`${svc.url}/v1/capabilities`, { headers: { 'x-request-id': id } })).text();
  const sent = performance.now();
  const seen = () => ids.filter((id) => svc.logs.some((l) => l.reqId === id && l.msg === 'request'));
  while (seen().length < ids.length && performance.now() - sent < 5000) await new Promise((r) => setTimeout(r, 20));
  t.same(
    seen(),
    ids,
    `each request's access line arrived (${(performance.now() - sent).toFixed(0)} ms after the last)`,
  );
  t.ok(performance.now() - sent < 1000, 'within a second, with no further traffic');
  svc.child.kill('SIGTERM');
  t.same(await svc.exited, { code: 0, signal: null });
  t.ok(
    svc.logs.some((l) => l.msg === 'stopped'),
    'the last line, written just before exit, is not lost',
  );
});
