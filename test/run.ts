/**
 * The suite's runner (`npm test`): every compiled test file in a Node process of its own, `jobs` at
 * a time, each one's TAP parsed by tap's own parser (tap-parser) and saved under .tap/test-results,
 * the whole printed as one TAP stream with the files as its subtests, exit 1 on any failure.
 *
 * Why not `tap`'s runner: it starts every test process, every process a test starts and every
 * thread those start with @tapjs/processinfo's module hooks, which send each module loaded to a
 * hooks thread and measure its lines for coverage. This project uses neither coverage nor `--changed`,
 * and on a 2-core host the suite took 807 s under tap's runner and 405 s under this one (one run
 * each, same commit). A test file is still a plain tap test: `npx tap dist/test/x.test.js` runs one alone.
 *
 * Settings come from package.json's "tap" section: `jobs`, `timeout` (seconds a file may run; a file
 * that sets its own with `t.setTimeout` gets that instead, as tap's runner does) and `include`
 * (`<dir>/**\/*<suffix>` patterns). Arguments, if any, are the files to run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FinalResults, Parser } from 'tap-parser';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RESULTS = join(ROOT, '.tap', 'test-results');

interface TapSettings {
  jobs?: number;
  timeout?: number;
  include?: string[];
}

const settings = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { tap?: TapSettings }).tap ?? {};
const jobs = Math.max(1, Number(process.env.TAP_JOBS) || settings.jobs || 2);
const timeoutS = Number(process.env.TAP_TIMEOUT) || settings.timeout || 30;

/** The files the include patterns name, in path order, node_modules left out. */
function included(patterns: readonly string[]): string[] {
  const files = new Set<string>();
  for (const pattern of patterns) {
    const m = /^([^*]+)\/\*\*\/\*([^*/]+)$/.exec(pattern);
    if (!m) throw new Error(`test/run.ts reads include patterns of the form <dir>/**/*<suffix>, not ${pattern}`);
    const [, dir, suffix] = m;
    let names: string[];
    try {
      names = readdirSync(join(ROOT, dir), { recursive: true }) as string[];
    } catch {
      continue;
    }
    for (const name of names)
      if (name.endsWith(suffix) && !name.split('/').includes('node_modules')) files.add(join(dir, name));
  }
  return [...files].sort();
}

interface Outcome {
  ok: boolean;
  total: number;
  pass: number;
  fail: number;
  skip: number;
  todo: number;
  ms: number;
  why: string[];
}

/** Why a (sub)test's results are not ok, each reason prefixed with `at`. */
function reasons(r: FinalResults, at: string): string[] {
  if (r.ok) return [];
  const out: string[] = [];
  if (r.bailout) out.push(`${at}bailed out: ${r.bailout}`);
  if (r.plan && r.plan.end !== r.count && !r.plan.skipAll)
    out.push(`${at}plan 1..${r.plan.end}, ${r.count} test points`);
  for (const f of r.failures) out.push(`${at}not ok ${f.id ?? ''} ${f.name ?? ''}`.trim());
  return out;
}

/** Runs one file: its outcome, its TAP and its stderr. */
function runFile(file: string, jobId: number): Promise<{ outcome: Outcome; tap: string; stderr: string }> {
  const started = performance.now();
  const key = randomUUID();
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, file)], {
    cwd: ROOT,
    env: {
      ...process.env,
      TAP: '1',
      TAP_TIMEOUT: String(timeoutS),
      TAP_JOB_ID: String(jobId),
      TAP_CHILD_KEY: key,
    },
    // tap's root sends the timeouts a file sets for itself over the IPC channel.
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const parser = new Parser();
  const why: string[] = [];
  const tapChunks: Buffer[] = [];
  const errChunks: Buffer[] = [];
  let timedOut = false;
  // The file's own timer reports a timeout first; this one ends a process too busy to.
  let limitMs = timeoutS * 1000;
  let timer: NodeJS.Timeout;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGALRM');
      setTimeout(() => child.kill('SIGKILL'), 2000).unref();
    }, limitMs + 5000);
  };
  arm();
  // The root's own counts (every assertion, nested ones included), as tap prints them last.
  const counts = { total: 0, pass: 0, fail: 0, skip: 0, todo: 0 };
  child.on('message', (msg: { setTimeout?: unknown; key?: unknown }) => {
    if (msg?.key === key && typeof msg.setTimeout === 'number') {
      limitMs = msg.setTimeout;
      arm();
    }
  });
  parser.on('comment', (c: string) => {
    if (/^# \{ total: /.test(c))
      for (const [, k, v] of c.matchAll(/(\w+): (\d+)/g)) if (k in counts) counts[k as keyof typeof counts] = Number(v);
  });
  const nested: string[] = [];
  const watch = (p: Parser, path: string[]) => {
    p.on('child', (c: Parser) => watch(c, [...path, c.name || '(unnamed)']));
    if (path.length > 0) p.on('complete', (r: FinalResults) => nested.push(...reasons(r, `${path.join(' > ')}: `)));
  };
  watch(parser, []);
  const done = new Promise<FinalResults>((resolve) => parser.on('complete', resolve));
  child.stdout?.on('data', (b: Buffer) => {
    tapChunks.push(b);
    parser.write(b);
  });
  child.stderr?.on('data', (b: Buffer) => errChunks.push(b));
  // A process a test left behind can hold the file's stdout open after the file's process has
  // ended: its output is then read for 2 s more, not waited for.
  child.on('exit', () => {
    setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
    }, 2000).unref();
  });
  return new Promise((resolve) => {
    child.on('close', async (code, signal) => {
      clearTimeout(timer);
      parser.end();
      const r = await done;
      // tap can exit 1 with every assertion counted as passed (a nested plan that does not match, a
      // bail-out inside a subtest): the nested reasons come first, each named by its subtests' path.
      why.push(...nested, ...reasons(r, ''));
      if (timedOut) why.push(`timed out after ${limitMs} ms`);
      if (code !== 0) why.push(signal ? `ended by ${signal}` : `exit code ${code}`);
      if (r.count === 0 && !r.plan?.skipAll) why.push('no test points');
      const ok = why.length === 0 && r.ok;
      resolve({
        outcome: {
          ok,
          ...counts,
          ms: performance.now() - started,
          why,
        },
        tap: Buffer.concat(tapChunks).toString('utf8'),
        stderr: Buffer.concat(errChunks).toString('utf8'),
      });
    });
  });
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => (l === '' ? l : `    ${l}`))
    .join('\n');

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const files = args.length > 0 ? args.map((a) => relative(ROOT, resolve(a))) : included(settings.include ?? []);
  if (files.length === 0) {
    console.log('not ok 1 - no test files found');
    return 1;
  }
  if (args.length === 0) rmSync(RESULTS, { recursive: true, force: true });
  console.log('TAP version 14');
  const started = performance.now();
  const totals = { total: 0, pass: 0, fail: 0, skip: 0, todo: 0 };
  const failed: string[] = [];
  let next = 0;
  let reported = 0;
  const worker = async (jobId: number) => {
    while (next < files.length) {
      const i = next++;
      const file = files[i];
      const { outcome, tap, stderr } = await runFile(file, jobId);
      const saved = join(RESULTS, `${file.replace(/^(\.\.\/)+/, '')}.tap`);
      mkdirSync(dirname(saved), { recursive: true });
      writeFileSync(saved, tap);
      for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += outcome[k];
      reported++;
      const time = `# time=${outcome.ms.toFixed(3)}ms`;
      process.stdout.write(`# Subtest: ${file}\n${indent(tap.replace(/^TAP version \d+\n/, ''))}\n`);
      if (outcome.ok) {
        console.log(`ok ${reported} - ${file} ${time}`);
      } else {
        failed.push(file);
        console.log(`not ok ${reported} - ${file} ${time}`);
        console.log(`  ---\n  why:\n${outcome.why.map((w) => `    - ${JSON.stringify(w)}`).join('\n')}\n  ...`);
        if (stderr.trim() !== '') process.stderr.write(`--- stderr of ${file}\n${stderr}\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, (_, j) => worker(j)));
  console.log(`1..${files.length}`);
  if (failed.length > 0)
    console.log(`# failed ${failed.length} of ${files.length} files:\n${failed.map((f) => `#   ${f}`).join('\n')}`);
  console.log(`# ${JSON.stringify(totals)}`);
  console.log(`# time=${(performance.now() - started).toFixed(3)}ms`);
  return failed.length > 0 ? 1 : 0;
}

process.exitCode = await main();
