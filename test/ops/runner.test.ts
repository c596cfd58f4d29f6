/**
 * The suite's runner (test/run.ts, `npm test`): a file passes only when its process exits 0 and its
 * TAP parses as passing; a failed assertion, a nested plan that does not match, a bad exit with every
 * assertion passed, a missing file and a file that spins past its own timeout each fail the run
 * (exit 1) and are named with their reasons; the counts are every assertion's, nested ones included;
 * a process a file leaves behind does not hold the run.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { REPO } from '../helpers/pack.js';

const run = promisify(execFile);
const RUNNER = join(REPO, 'dist', 'test', 'run.js');
// Inside the repository, so that each fixture's `import t from 'tap'` resolves.
mkdirSync(join(REPO, '.tap'), { recursive: true });
const dir = mkdtempSync(join(REPO, '.tap', 'runner-'));
t.teardown(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(join(REPO, '.tap', 'test-results', relative(REPO, dir)), { recursive: true, force: true });
});

const FIXTURES: Record<string, string> = {
  'pass.test.mjs': `import t from 'tap';
t.test('outer', async (t) => { t.test('inner', async (t) => { t.ok(1); t.ok(2); }); t.equal(1, 1); });`,
  'fail.test.mjs': `import t from 'tap';
t.test('a', async (t) => { t.equal(1, 2, 'one is two'); });`,
  'nested-plan.test.mjs': `import t from 'tap';
t.test('outer', async (t) => { t.test('inner', (t) => { t.plan(2); t.pass('one'); t.end(); }); });`,
  'exit.test.mjs': `import t from 'tap';
t.pass('fine'); t.teardown(() => process.exit(3));`,
  'leftover.test.mjs': `import t from 'tap';
import { spawn } from 'node:child_process';
spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30_000)'], { stdio: 'inherit', detached: true }).unref();
t.pass('left a process holding stdout');`,
  'spin.test.mjs': `import t from 'tap';
t.setTimeout(1000);
t.test('spins', async () => { const end = Date.now() + 60_000; while (Date.now() < end); });`,
};
for (const [name, text] of Object.entries(FIXTURES)) writeFileSync(join(dir, name), text);
const rel = (name: string) => relative(REPO, join(dir, name));

async function runner(...names: string[]): Promise<{ code: number; stdout: string; ms: number }> {
  const started = performance.now();
  return run(process.execPath, [RUNNER, ...names.map((n) => join(dir, n))], { cwd: REPO, timeout: 60_000 }).then(
    ({ stdout }) => ({ code: 0, stdout, ms: performance.now() - started }),
    (err: { code?: number; stdout?: string }) => ({
      code: err.code ?? -1,
      stdout: err.stdout ?? '',
      ms: performance.now() - started,
    }),
  );
}

t.test('passing files pass, with every nested assertion counted', async (t) => {
  const { code, stdout } = await runner('pass.test.mjs');
  t.equal(code, 0);
  t.match(stdout, new RegExp(`^ok 1 - ${rel('pass.test.mjs')} # time=`, 'm'));
  t.match(stdout, /^# \{"total":3,"pass":3,"fail":0,"skip":0,"todo":0\}$/m, 'the two nested ones and the outer one');
  t.match(readFileSync(join(REPO, '.tap', 'test-results', `${rel('pass.test.mjs')}.tap`), 'utf8'), /^# \{ total: 3/m);
});

t.test('each way a file can fail fails the run and is named with its reason', async (t) => {
  const { code, stdout } = await runner(
    'pass.test.mjs',
    'fail.test.mjs',
    'nested-plan.test.mjs',
    'exit.test.mjs',
    'missing.test.mjs',
  );
  t.equal(code, 1, 'exit 1');
  t.match(stdout, /^# failed 4 of 5 files:$/m);
  const reasons = (name: string) => {
    const at = stdout.search(new RegExp(`^not ok \\d+ - ${rel(name)} `, 'm'));
    return at < 0 ? '' : stdout.slice(at, stdout.indexOf('  ...', at));
  };
  t.match(reasons('fail.test.mjs'), /"a: not ok 1 one is two"/);
  t.match(reasons('nested-plan.test.mjs'), /"outer > inner: not ok 2 test count\(1\) != plan\(2\)"/);
  t.match(reasons('exit.test.mjs'), /"exit code 3"/, 'every assertion passed, the exit code did not');
  t.match(reasons('missing.test.mjs'), /"exit code 1"/);
  t.match(stdout, new RegExp(`^ok \\d - ${rel('pass.test.mjs')}`, 'm'), 'the passing one still passes');
});

t.test('a process a file leaves behind holding its stdout does not hold the run', async (t) => {
  const { code, stdout, ms } = await runner('leftover.test.mjs');
  t.equal(code, 0);
  t.match(stdout, new RegExp(`^ok 1 - ${rel('leftover.test.mjs')}`, 'm'));
  t.ok(ms < 20_000, `done in ${Math.round(ms)} ms, not when the leftover ends (30 s)`);
});

t.test('a file that spins past its own timeout is ended and fails', async (t) => {
  const { code, stdout, ms } = await runner('spin.test.mjs');
  t.equal(code, 1);
  t.match(stdout, /"timed out after 1000 ms"/, 'the timeout the file set for itself, not the default');
  t.match(stdout, /"ended by SIG(ALRM|KILL)"/);
  t.ok(ms < 30_000, `ended long before its loop would (${Math.round(ms)} ms)`);
});
