/**
 * The circuit breaker: its state machine on an injected clock, then the service against emulated
 * upstreams - it opens after repeated failures and the upstream sees nothing more, answers fast
 * while open, lets one probe through after the cool-down, closes on success, and shows its
 * state in /metrics, from the main thread and from worker threads alike.
 */
import t from 'tap';
import {
  CircuitBreaker,
  COOL_DOWN_MS,
  FAILURE_WINDOW_MS,
  FAILURES_TO_OPEN,
  watchCircuits,
  type CallClass,
} from '../../src/net/breaker.js';
import { safeFetch } from '../../src/net/safe-fetch.js';
import type { CircuitState } from '../../src/net/breaker.js';
import { startTestApp, post, type TestApp } from '../helpers/app.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { startDexScreener } from '../emulators/dexscreener.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('state machine', async (t) => {
  const changes: CircuitState[] = [];
  const b = new CircuitBreaker((s) => changes.push(s));
  let now = 1_000;
  const call = (cls: CallClass) => {
    const a = b.admit(now);
    if (a.ok) b.record(a.probe, cls, now);
    return a;
  };

  for (let i = 0; i < FAILURES_TO_OPEN - 1; i++) call('failure');
  call('success');
  for (let i = 0; i < FAILURES_TO_OPEN - 1; i++) call('failure');
  t.equal(b.state, 'closed', 'a success in between starts the count again');
  call('ignore');
  t.equal(b.state, 'closed', 'a cancelled call counts for nothing');
  now += FAILURE_WINDOW_MS + 1;
  call('failure');
  t.equal(b.state, 'closed', 'failures older than the window do not add up');
  for (let i = 0; i < FAILURES_TO_OPEN - 2; i++) call('failure');
  t.equal(b.state, 'closed');
  call('failure');
  t.equal(b.state, 'open', `${FAILURES_TO_OPEN} failures in a row within the window open it`);

  const refused = b.admit(now + 1000);
  t.same(refused, { ok: false, retryAfterMs: COOL_DOWN_MS - 1000 }, 'refused while open, with the time left');

  now += COOL_DOWN_MS;
  const probe = b.admit(now);
  t.same(probe, { ok: true, probe: true }, 'after the cool-down one probe goes through');
  t.equal(b.state, 'half_open');
  t.equal(b.admit(now).ok, false, 'a second caller waits for the probe');
  b.record(false, 'success', now);
  t.equal(b.state, 'half_open', 'a call from before the opening does not decide');
  b.record(true, 'ignore', now);
  t.same(b.admit(now), { ok: true, probe: true }, 'a cancelled probe frees the slot for another');
  b.record(true, 'failure', now);
  t.equal(b.state, 'open', 'a failed probe opens it again');
  t.equal(b.admit(now + COOL_DOWN_MS - 1).ok, false, 'for a whole cool-down');

  now += COOL_DOWN_MS;
  const again = b.admit(now);
  t.ok(again.ok);
  b.record(true, 'success', now);
  t.equal(b.state, 'closed', 'a successful probe closes it');
  t.same(changes, ['open', 'half_open', 'open', 'half_open', 'closed']);
  call('failure');
  t.equal(b.state, 'closed', 'closing starts the count from zero');
});

/** The value of one sample of the circuit gauge in a /metrics scrape. */
async function gauge(app: TestApp, upstream: string, state: CircuitState): Promise<number | null> {
  const text = await (await fetch(`${app.url}/metrics`)).text();
  const m = new RegExp(
    `^preflight_circuit_breaker_state\\{upstream="${upstream}",state="${state}"\\} (\\d+)$`,
    'm',
  ).exec(text);
  return m ? Number(m[1]) : null;
}

/** State changes reach the gauge through a broadcast channel: poll a scrape briefly. */
async function gaugeBecomes(app: TestApp, upstream: string, state: CircuitState): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if ((await gauge(app, upstream, state)) === 1) return true;
    await sleep(20);
  }
  return false;
}

type Evidence = { status: string; reason: string | null; retry_after_s?: number; latency_ms: number };
async function decide(
  app: TestApp,
  checks: unknown[],
): Promise<{ status: number; verdict: string; evidence: Evidence[]; ms: number }> {
  const t0 = performance.now();
  const r = await post(`${app.url}/v1/decide`, { goal: 'breaker test', checks });
  return { status: r.status, verdict: r.body.verdict, evidence: r.body.evidence, ms: performance.now() - t0 };
}

t.test('through the service (checks on the main thread)', async (t) => {
  const cg = await startCoinGecko();
  t.teardown(() => cg.close());
  for (let i = 0; i < 20; i++) cg.setPrice(`coin-${i}`, 'usd', 1);
  const app = await startTestApp({ PRICE_API_URL: cg.url, ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => app.close());
  const price = (i: number) => ({ type: 'price', asset_id: `coin-${i}` });
  const calls = () => cg.stats.byPath['/simple/price'] ?? 0;

  t.equal(await gauge(app, 'price_provider', 'closed'), 1, 'every upstream starts closed in the scrape');

  t.test('a caller URL on the provider host opens its own breaker, not the provider one', async (t) => {
    cg.faultOn('/ping', { reset: true });
    t.teardown(() => void cg.faultOn('/ping', null));
    const target = { type: 'http', url: `${cg.url}/ping` };
    for (let i = 0; i < FAILURES_TO_OPEN; i++) {
      const r = await decide(app, [target]);
      t.equal(r.evidence[0].reason, 'upstream_unreachable', `failure ${i + 1} reached the target`);
    }
    const before = cg.stats.byPath['/ping'];
    const open = await decide(app, [target]);
    t.match(open, { status: 200, verdict: 'wait', evidence: [{ status: 'error', reason: 'circuit_open' }] });
    t.equal(cg.stats.byPath['/ping'], before, 'the target saw nothing more');
    const provider = await decide(app, [price(0)]);
    t.match(provider.evidence[0], { status: 'pass' }, 'the provider on the same host:port is still called');
    t.ok(await gaugeBecomes(app, 'http_target', 'open'), 'http_target open in /metrics');
    t.equal(await gauge(app, 'price_provider', 'open'), 0, 'price_provider not open');
  });

  t.test('a failing provider: open, fast, probe, close', async (t) => {
    cg.faultOn('/simple/price', { status: 500 });
    for (let i = 1; i <= FAILURES_TO_OPEN; i++) {
      const r = await decide(app, [price(i)]);
      t.match(r.evidence[0], { status: 'error', reason: 'upstream_http_error' }, `failure ${i}`);
    }
    const openedAt = performance.now();
    t.equal(calls(), FAILURES_TO_OPEN + 1, 'every failure reached the provider');

    for (let i = 1; i <= 10; i++) {
      const r = await decide(app, [price(i)]);
      t.match(r, { status: 200, verdict: 'wait', evidence: [{ status: 'error', reason: 'circuit_open' }] });
      t.ok(
        r.evidence[0].retry_after_s! >= 1 && r.evidence[0].retry_after_s! <= COOL_DOWN_MS / 1000,
        'retry_after_s is the cool-down left',
      );
      t.ok(r.evidence[0].latency_ms < 50, `answered without a call (${r.evidence[0].latency_ms} ms)`);
    }
    t.equal(calls(), FAILURES_TO_OPEN + 1, 'no request reached the provider while open');
    t.ok(await gaugeBecomes(app, 'price_provider', 'open'), 'price_provider open in /metrics');

    await sleep(COOL_DOWN_MS - (performance.now() - openedAt) + 50);
    const probes = await Promise.all([11, 12, 13].map((i) => decide(app, [price(i)])));
    t.equal(calls(), FAILURES_TO_OPEN + 2, 'after the cool-down exactly one call went through');
    t.same(
      probes.map((p) => p.evidence[0].reason).sort(),
      ['circuit_open', 'circuit_open', 'upstream_http_error'],
      'the probe failed; the others waited for it',
    );
    const reopenedAt = performance.now();
    t.ok(await gaugeBecomes(app, 'price_provider', 'open'), 'open again after the failed probe');

    cg.faultOn('/simple/price', null);
    t.match(
      (await decide(app, [price(14)])).evidence[0],
      { reason: 'circuit_open' },
      'a failed probe restarts the cool-down',
    );
    await sleep(COOL_DOWN_MS - (performance.now() - reopenedAt) + 50);
    const healed = await decide(app, [price(15)]);
    t.match(healed, { verdict: 'proceed', evidence: [{ status: 'pass' }] }, 'the probe succeeded');
    t.ok(await gaugeBecomes(app, 'price_provider', 'closed'), 'closed in /metrics');
    t.match((await decide(app, [price(16)])).evidence[0], { status: 'pass' }, 'and calls flow again');
    t.equal(calls(), FAILURES_TO_OPEN + 4);
  });
});

t.test('breakers in worker threads reach the main thread metrics', async (t) => {
  const ds = await startDexScreener();
  t.teardown(() => ds.close());
  const threads = 2;
  const app = await startTestApp({ DEX_API_URL: ds.url, POOL_THREADS: String(threads) });
  t.teardown(() => app.close());
  ds.fault = { status: 502 };
  const reasons: string[] = [];
  // The pool gives a check to whichever thread is free, so one thread may see its fifth failure
  // much later than the other: the checks go on until ten answers in a row come from open
  // breakers (200 at most, far more than two breakers of five need).
  let run = 0;
  for (let i = 0; i < 200 && run < 10; i++) {
    const r = await decide(app, [{ type: 'dex_price', chain: 'base', pair_address: `0xpair${i}` }]);
    t.equal(r.status, 200);
    reasons.push(r.evidence[0].reason ?? 'none');
    run = reasons.at(-1) === 'circuit_open' ? run + 1 : 0;
  }
  t.ok(
    ds.stats.requests >= FAILURES_TO_OPEN && ds.stats.requests <= threads * FAILURES_TO_OPEN,
    `each thread stopped after at most ${FAILURES_TO_OPEN} failures (${ds.stats.requests} calls for ${reasons.length} checks)`,
  );
  t.same(reasons.slice(-5), Array(5).fill('circuit_open'), 'the last answers come from the open breakers');
  t.ok(await gaugeBecomes(app, 'dex_provider', 'open'), 'dex_provider open in /metrics');
});

t.test('a caller host whose DNS hangs is not looked up again while open', async (t) => {
  // The service switches breakers on by watching them; this test does the same around safeFetch.
  const states: string[] = [];
  const stop = watchCircuits((label, state) => states.push(`${label}:${state}`));
  t.teardown(stop);
  // Every timer on this path is unref'd (a server keeps the service alive): keep the test alive.
  const alive = setInterval(() => {}, 1000);
  t.teardown(() => clearInterval(alive));
  let lookups = 0;
  const resolver = (): Promise<string[]> => {
    lookups++;
    return new Promise(() => {}); // never answers: only our time limit ends the wait
  };
  const fetchIt = () => safeFetch('http://dns-hangs.example:8080/status', { resolver, timeoutMs: 50 });
  for (let i = 0; i < FAILURES_TO_OPEN; i++) t.match(await fetchIt(), { ok: false, reason: 'upstream_timeout' });
  t.equal(lookups, FAILURES_TO_OPEN);
  const t0 = performance.now();
  const open = await fetchIt();
  t.match(open, { ok: false, reason: 'circuit_open', source: 'dns-hangs.example' });
  t.ok(performance.now() - t0 < 20, 'answered without waiting on DNS');
  t.equal(lookups, FAILURES_TO_OPEN, 'the resolver was not asked again');
  await sleep(50);
  t.same(states, ['http_target:open'], 'reported under the bounded label, never the host');
});
