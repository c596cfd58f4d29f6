/** The operator command line, run as operators run it: the compiled script in its own process. */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { runKeysCli } from '../../src/cli/keys.js';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import { newKey } from '../store/suite.js';

const CLI = fileURLToPath(new URL('../../src/cli/keys.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'pf-cli-'));
const DATABASE_URL = `sqlite:${join(dir, 'keys.db')}`;
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH ?? '', DATABASE_URL, ...env } },
      (error, out, err) => {
        resolve({ code: error ? Number(error.code) : 0, out, err });
      },
    );
  });
}

const store = await openStore({ databaseUrl: DATABASE_URL });
const a = newKey('ops-a@example.com', { requestedPlan: 'Execution' });
const b = newKey('ops-b@example.com');
await store.createApiKey(a);
await store.createApiKey(b);
await store.consumeQuota(a.id, new Date().toISOString().slice(0, 7), 100);
await store.close();

function capture() {
  const io = {
    lines: [] as string[],
    errors: [] as string[],
    out: (l: string) => io.lines.push(l),
    err: (l: string) => io.errors.push(l),
  };
  return io;
}

t.test("the compiled script lists every key with plan and this month's use, and no secrets", async (t) => {
  const r = await cli(['list']);
  t.equal(r.code, 0, r.err);
  t.match(r.out, /^ID\s+PREFIX\s+EMAIL\s+PLAN\s+REQUESTED\s+USED \d{4}-\d{2}\s+CREATED\s+STATUS/);
  t.match(
    r.out,
    new RegExp(`${a.id}\\s+${a.prefix}\\s+ops-a@example.com\\s+Basic\\s+Execution\\s+1/100\\s+\\S+\\s+active`),
  );
  t.match(r.out, /2 key\(s\), 2 active/);
  t.notMatch(r.out, a.keyHash);
});

t.test('the compiled script: usage error, unreachable database, bad configuration', async (t) => {
  const [none, down, cfg] = await Promise.all([
    cli([]),
    cli(['list'], { DATABASE_URL: 'postgres://ops:s3cret@127.0.0.1:1/keys' }),
    cli(['list'], { DATABASE_URL: 'mysql://x' }),
  ]);
  t.same([none.code, /^usage: keys list/.test(none.err)], [2, true]);
  t.equal(down.code, 3);
  t.match(down.err, /cannot reach PostgreSQL at postgres:\/\/ops@127\.0\.0\.1:1\/keys \(DATABASE_URL\).*ECONNREFUSED/);
  t.notMatch(down.err, /s3cret/);
  t.same([cfg.code, /DATABASE_URL must be sqlite/.test(cfg.err)], [3, true]);
});

t.test('set-plan by prefix, revoke by the full key, JSON listing', async (t) => {
  const s = await openStore({ databaseUrl: DATABASE_URL });
  t.teardown(() => s.close());
  const config = loadConfig({ DATABASE_URL, PLAN_LIMITS: 'DeFi=5000' });
  const run = async (...args: string[]) => {
    const io = capture();
    return { code: await runKeysCli(args, s, config, io), out: io.lines.join('\n'), err: io.errors.join('\n') };
  };
  t.same(await run('set-plan', a.prefix, 'DeFi'), {
    code: 0,
    out: 'set 1 key(s) to DeFi (5000 calls a month)',
    err: '',
  });
  const rv = await run('revoke', b.raw);
  t.equal(rv.code, 0);
  t.notMatch(rv.out + rv.err, b.raw.slice(4), 'the key is not echoed');
  const json = JSON.parse((await run('list', '--json')).out);
  t.match(
    json.keys.find((k: { id: string }) => k.id === a.id),
    { prefix: a.prefix, email: 'ops-a@example.com', plan: 'DeFi', used: 1, limit: 5000, revoked_at: null },
  );
  t.ok(json.keys.find((k: { id: string }) => k.id === b.id).revoked_at);
  t.same(
    [(await run('revoke', b.id)).code, (await run('set-plan', b.id, 'DeFi')).code],
    [1, 1],
    'a revoked key matches nothing',
  );
  t.same(await run('set-plan', a.id, 'Gold'), {
    code: 2,
    out: '',
    err: 'unknown plan "Gold": one of Basic, DeFi, Execution',
  });
  t.equal((await run('delete', a.id)).code, 2);
  t.equal((await run('list', '--yaml')).code, 2);
});
