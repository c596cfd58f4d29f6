/**
 * Redis goes away under load and comes back: two service processes share a redis-server this test
 * starts on a free loopback port and kills with SIGKILL mid-load. No answer is a 5xx, none comes
 * later than its deadline, /health and /metrics say degraded while Redis is away, and once it is
 * back the fleet shares again without a restart. Also: a Redis that answers too slowly is
 * bypassed within its timeout.
 */
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnService, type ServiceProcess } from '../helpers/spawn.js';
import { startCoinGecko } from '../emulators/coingecko.js';

const BIN = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const DEADLINE_MS = 1000;
/** Client-side slack over the deadline on a loaded 2-core machine: the answer's own work and the loopback. */
const SLACK_MS = 400;

const present = spawnSync(BIN, ['--version'], { encoding: 'utf8' });
if (present.error !== undefined || present.status !== 0) {
  const why = `${BIN} is not installed (Debian package redis-server)`;
  if (process.env.CI === 'true') t.fail(`redis-server is required in CI: ${why}`);
  else t.plan(0, `skipped: ${why}`);
} else {
  const freePort = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address() as net.AddressInfo;
        s.close(() => resolve(port));
      });
    });
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'preflight-redis-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  let redis: ChildProcess | null = null;
  const startRedis = async (): Promise<void> => {
    redis = spawn(
      BIN,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const c = net.connect(port, '127.0.0.1', () => {
          c.end();
          resolve(true);
        });
        c.once('error', () => resolve(false));
      });
      if (up) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('redis-server did not start');
  };
  const killRedis = async (): Promise<void> => {
    const r = redis as ChildProcess | null;
    if (r === null || r.exitCode !== null) return;
    const gone = new Promise((resolve) => r.once('exit', resolve));
    r.kill('SIGKILL');
    await gone;
  };
  await startRedis();
  t.teardown(killRedis);

  const cg = await startCoinGecko();
  t.teardown(() => cg.close());
  const env = {
    REDIS_URL: `redis://127.0.0.1:${port}/0`,
    BILLING: 'off',
    POOL_THREADS: '1',
    PRICE_API_URL: cg.url,
    REQUEST_DEADLINE_MS: String(DEADLINE_MS),
    // Above the default 50 ms, for a loaded test machine; still well inside the deadline.
    REDIS_TIMEOUT_MS: '250',
  };
  const fleet: ServiceProcess[] = await Promise.all([spawnService(env), spawnService(env)]);
  t.teardown(async () => {
    for (const s of fleet) s.child.kill('SIGTERM');
    await Promise.all(fleet.map((s) => s.exited));
  });

  const decide = async (svc: ServiceProcess, asset: string) => {
    const started = performance.now();
    const res = await fetch(`${svc.url}/v1/decide`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ goal: 'redis down', checks: [{ type: 'price', asset_id: asset }] }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json()) as { evidence?: Array<{ status: string; cached: boolean }> };
    return { status: res.status, ms: performance.now() - started, evidence: body.evidence?.[0] };
  };
  const health = async (svc: ServiceProcess) =>
    (await (await fetch(`${svc.url}/health`)).json()) as { status: string; shared_cache?: string };
  const metric = async (svc: ServiceProcess, name: string) => {
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? null : Number(line.split(' ')[1]);
  };
  for (let i = 0; i < 40; i++) cg.setPrice(`asset-${i}`, 'usd', 1 + i);
  // The port opens before the service is loaded; its /health names the fleet cache once it is.
  for (const svc of fleet) {
    for (let i = 0; i < 300 && (await health(svc)).shared_cache !== 'ok'; i++)
      await new Promise((r) => setTimeout(r, 100));
  }

  t.test('sharing works before the kill', async (t) => {
    for (let i = 0; i < 300 && (await health(fleet[0])).shared_cache !== 'ok'; i++)
      await new Promise((r) => setTimeout(r, 100));
    t.match(await health(fleet[0]), { status: 'ok', shared_cache: 'ok' }, '/health names the fleet cache');
    await decide(fleet[0], 'asset-0');
    t.equal((await decide(fleet[1], 'asset-0')).evidence?.cached, true);
    t.equal(await metric(fleet[0], 'preflight_shared_cache_up'), 1);
  });

  t.test('Redis killed mid-load: no 5xx, nothing past its deadline, degraded, then shared again', async (t) => {
    const answers: Array<{ status: number; ms: number }> = [];
    let stop = false;
    let n = 0;
    const client = async (c: number) => {
      while (!stop) {
        // A mix of warm and cold checks on both instances.
        const asset = `asset-${(n++ * 7 + c) % 40}`;
        answers.push(await decide(fleet[c % 2], asset));
      }
    };
    const load = Promise.all([0, 1, 2, 3].map(client));
    await new Promise((r) => setTimeout(r, 700));
    const atKill = answers.length;
    await killRedis();
    await new Promise((r) => setTimeout(r, 300));
    const during = await Promise.all(fleet.map(health));
    t.same(
      during.map((h) => h.status),
      ['degraded', 'degraded'],
      '/health says degraded while Redis is away (still 200)',
    );
    t.equal(await metric(fleet[0], 'preflight_shared_cache_up'), 0, 'the gauge says so too');
    await new Promise((r) => setTimeout(r, 1000));
    const whileDown = answers.length - atKill;
    await startRedis();
    // Back: ioredis reconnects by itself within a second or so.
    let back = false;
    for (let i = 0; i < 60 && !back; i++) {
      back = (await Promise.all(fleet.map(health))).every((h) => h.status === 'ok');
      if (!back) await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await load;
    t.ok(back, 'both instances report ok again without a restart');
    t.ok(atKill > 0 && whileDown > 0, `served before (${atKill}) and while Redis was away (${whileDown})`);
    t.same(
      answers.filter((a) => a.status >= 500),
      [],
      `no 5xx in ${answers.length} answers`,
    );
    t.same(
      answers.filter((a) => a.status !== 200),
      [],
      'every answer a 200',
    );
    const late = answers.filter((a) => a.ms > DEADLINE_MS + SLACK_MS);
    t.same(late, [], `none later than the ${DEADLINE_MS} ms deadline (+${SLACK_MS} ms slack)`);

    const fresh = `fresh-${randomBytes(3).toString('hex')}`;
    cg.setPrice(fresh, 'usd', 5);
    cg.resetStats();
    await decide(fleet[1], fresh);
    t.equal((await decide(fleet[0], fresh)).evidence?.cached, true, 'sharing resumed');
    t.equal(cg.stats.requests, 1, 'one upstream request for both');
  });

  t.test('a Redis that stops answering is bypassed within the command timeout', async (t) => {
    // SIGSTOP: the port stays open and the connection up, but nothing answers.
    const r = redis as ChildProcess | null;
    t.ok(r);
    if (r === null) return;
    r.kill('SIGSTOP');
    t.teardown(() => r.kill('SIGCONT'));
    const asset = `stalled-${randomBytes(3).toString('hex')}`;
    cg.setPrice(asset, 'usd', 3);
    const first = await decide(fleet[0], asset);
    t.equal(first.status, 200);
    t.equal(first.evidence?.status, 'pass', 'answered from upstream');
    t.ok(first.ms < DEADLINE_MS, `promptly (${Math.round(first.ms)} ms)`);
    const next = await decide(fleet[0], `${asset}-b`);
    t.equal(next.evidence?.status, 'fail', 'an unknown asset is still judged (fail unknown_asset)');
    t.equal((await health(fleet[0])).status, 'degraded', 'a stalled Redis counts as degraded');
    r.kill('SIGCONT');
  });
}
