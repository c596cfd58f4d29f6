/**
 * `--mode=instructions` (bench/README.md, "Instructions per answer"): the cached decide's cost
 * counted in machine instructions, per thread, under valgrind's callgrind. Throughput and CPU time
 * on a shared 2-core host move by more from one round to the next than the differences left to
 * find; an instruction count moves far less (the event loop's by a few per cent between runs),
 * so this is the measure for a change of a few per cent.
 *
 * Each variant of the service (unsigned, signed with prepared nonces, signed on the event loop)
 * runs in its own process under callgrind, loaded on loopback from this process: a warm-up long
 * enough for V8 to settle its optimised code, then an idle window and a window of a fixed number
 * of answers, each counted from zero and dumped, one file per thread; the idle rate is taken off
 * the answers' count. Instructions are not time (a
 * keccak in WebAssembly retires more per nanosecond than a property lookup), and a process under
 * valgrind runs some 50 times slower, so timer-driven work (V8's memory reducer, refreshes of the
 * cache) comes at other points than at full speed: the event loop's count is the figure to read,
 * the other threads' a rough one.
 */
import { fork, execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import type { Upstreams } from './upstreams.js';
import { CACHED_DECIDE, GUARD_SWAP } from './scenarios.js';
import { policyKey } from './policy.js';
import { serviceEnv, signup } from './session.js';

/**
 * The cached decide with the longest deadline the spec allows: a check whose 30 s entry expires
 * during the count is fetched again inside the answer rather than turning it into `wait` under
 * valgrind's pace, so every answer counted is the same `proceed` (a few of them with the refresh).
 */
export const COUNTED_DECIDE = JSON.stringify({ ...JSON.parse(CACHED_DECIDE), context: { deadline_ms: 10_000 } });
/** The bench's cached guard for a swap, with the same longest deadline. */
export const COUNTED_GUARD = JSON.stringify({ ...JSON.parse(GUARD_SWAP), context: { deadline_ms: 10_000 } });

export interface InstructionVariant {
  name: string;
  about: string;
  env: Record<string, string>;
  /** What each answer asks: the cached decide unless said otherwise. */
  path?: string;
  body?: string;
  /** Ask with an agent key bound to the bench's 20-rule, two-limit policy (bench/policy.ts): every answer reserves. */
  policy?: boolean;
  /** Which variant's counts the ratios are taken against. */
  against?: string;
  /**
   * The program counted: the service (bench/service.ts) unless this names the floor, bare node:http
   * + Ajv answering the same cached decide's bytes (bench/floor.ts), which takes no key.
   */
  program?: 'floor';
  /** Counted unless `--only` names others. */
  byDefault: boolean;
}

export const INSTRUCTION_VARIANTS: readonly InstructionVariant[] = [
  // The unsigned cached decide's yardstick in the throughput targets, counted the same way.
  { name: 'floor', about: 'bare node:http + Ajv, the same answer', env: {}, program: 'floor', byDefault: false },
  { name: 'unsigned', about: 'ATTESTATIONS=off', env: { ATTESTATIONS: 'off' }, against: 'floor', byDefault: true },
  { name: 'signed', about: 'the default: prepared nonces', env: {}, against: 'unsigned', byDefault: true },
  {
    name: 'signed-inline',
    about: 'ATTESTATION_SIGNING=inline',
    env: { ATTESTATION_SIGNING: 'inline' },
    against: 'unsigned',
    byDefault: true,
  },
  // The policy's own cost: the same cached guard with and without an agent key bound to a policy.
  {
    name: 'guard-swap',
    about: 'the cached guard, signed',
    env: {},
    path: '/v1/guard',
    body: COUNTED_GUARD,
    byDefault: false,
  },
  {
    name: 'guard-policy',
    about: 'the same under a 20-rule, two-limit policy',
    env: {},
    path: '/v1/guard',
    body: COUNTED_GUARD,
    policy: true,
    against: 'guard-swap',
    byDefault: false,
  },
];

/** Instructions per answer, by thread. */
export interface InstructionCount {
  variant: string;
  about: string;
  /** The variant its ratios are taken against, if any. */
  against?: string;
  answers: number;
  /** Answers that were not a 200 `proceed`: none is expected. */
  unexpected: number;
  eventLoop: number;
  /**
   * The thread that prepares nonces (most of its instructions in libsecp256k1), per nonce it
   * prepared in the window (each answer uses one); 0 when it prepared none.
   */
  signingThread: number;
  noncesPrepared: number;
  /** The idle service's instructions per second under valgrind, taken off the answers' at that rate. */
  idlePerSecond: { eventLoop: number; otherThreads: number };
  /** Every other thread: V8's collector and compiler helpers, the check workers, the checkpoint thread. */
  otherThreads: number;
  all: number;
}

export interface InstructionResult {
  valgrind: string;
  warmup: number;
  answers: number;
  counts: InstructionCount[];
}

interface ThreadCost {
  thread: number;
  total: number;
  /** Self cost per object file (the binary or shared library the code is in). */
  byObject: Map<string, number>;
  /** Calls to the function that multiplies the generator by a nonce: one per nonce prepared. */
  pointMultiplications: number;
}

/**
 * The function the signing thread calls once per nonce it prepares (src/attest/prepared.ts): the
 * `nonces` addon's k·G, or, where the addon is not built, the binding's key-from-scalar
 * multiplication.
 */
const POINT_MULTIPLICATIONS = new Set(['nonce_point', 'secp256k1_ec_pubkey_create']);

/** The object files whose code is the signing thread's: libsecp256k1's binding and the nonces addon. */
const SIGNING_OBJECT = /secp256k1|nonces\.node/;

/**
 * One thread's dump: its total and its instructions per object file. In callgrind's format a cost
 * line after `calls=` is the call's inclusive cost, which belongs to the callee and is skipped here.
 */
export function parseCallgrindThread(text: string): ThreadCost {
  const objects = new Map<string, string>();
  const functions = new Map<string, string>();
  const byObject = new Map<string, number>();
  let callee = '';
  let pointMultiplications = 0;
  let object = '?';
  let afterCall = false;
  let thread = 0;
  let total = 0;
  for (const line of text.split('\n')) {
    const c = line.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) {
      if (afterCall) {
        afterCall = false;
        continue;
      }
      const sp = line.indexOf(' ');
      if (sp < 0) continue;
      const n = Number(line.slice(sp + 1).split(' ')[0]);
      if (Number.isFinite(n)) byObject.set(object, (byObject.get(object) ?? 0) + n);
      continue;
    }
    if (line.startsWith('calls=')) {
      afterCall = true;
      if (POINT_MULTIPLICATIONS.has(callee)) pointMultiplications += Number(line.slice(6).split(' ')[0]) || 0;
    } else if (line.startsWith('cfn=')) {
      const m = /^cfn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m === null) continue;
      if (m[2] !== undefined) functions.set(m[1], m[2]);
      callee = functions.get(m[1]) ?? '';
    } else if (line.startsWith('fn=')) {
      const m = /^fn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m !== null && m[2] !== undefined) functions.set(m[1], m[2]);
    } else if (line.startsWith('ob=') || line.startsWith('cob=')) {
      const m = /^c?ob=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m === null) continue;
      if (m[2] !== undefined) objects.set(m[1], m[2]);
      if (line.startsWith('ob=')) object = objects.get(m[1]) ?? '?';
    } else if (line.startsWith('thread: ')) thread = Number(line.slice(8));
    else if (line.startsWith('totals: ') || line.startsWith('summary: '))
      total = Math.max(total, Number(line.split(' ')[1]));
  }
  return { thread, total, byObject, pointMultiplications };
}

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

/** How long the idle service is counted, to take its timers' cost off the answers' (countOne). */
const IDLE_MS = 10_000;
/** The pause before it, for the prepared nonces used in the warm-up to be made again. */
const SETTLE_MS = 5_000;

/** Dump `part` (callgrind numbers each dump of a process from 1), one thread per file, once complete. */
async function readDump(dir: string, part: number, name: string, stderr: () => string): Promise<ThreadCost[]> {
  const mine = new RegExp(`\\.${part}-\\d+$`);
  // The dump is written once the process next runs; its files are complete when each has its totals.
  for (let waited = 0; ; waited += 250) {
    const files = readdirSync(dir).filter((f) => mine.test(f));
    const texts = files.map((f) => readFileSync(join(dir, f), 'utf8'));
    if (texts.length > 0 && texts.every((t) => /^totals: /m.test(t))) {
      const threads = texts.map(parseCallgrindThread).filter((t) => t.total > 0);
      if (!threads.some((t) => t.thread === 1))
        throw new Error(`${name}: dump ${part} has no count for the event loop`);
      return threads;
    }
    if (waited > 60_000)
      throw new Error(
        `${name}: callgrind wrote no complete dump ${part} within 60 s (files: ${files.join(', ') || 'none'}; ${stderr().slice(-400)})`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A dump's threads in three: the event loop (valgrind's thread 1), the signing thread (most of its
 * instructions in libsecp256k1, through the binding or the nonces addon), and the rest.
 */
function classify(threads: ThreadCost[]): { eventLoop: number; signing: number; nonces: number; otherThreads: number } {
  const out = { eventLoop: 0, signing: 0, nonces: 0, otherThreads: 0 };
  for (const t of threads) {
    const secp = [...t.byObject].reduce((s, [ob, n]) => (SIGNING_OBJECT.test(ob) ? s + n : s), 0);
    if (t.thread === 1) out.eventLoop += t.total;
    else if (secp > t.total / 2) {
      out.signing += t.total;
      out.nonces += t.pointMultiplications;
    } else out.otherThreads += t.total;
  }
  return out;
}

/** The path of `cmd` on PATH, or null. */
export function which(cmd: string): string | null {
  try {
    return execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

/**
 * vgdb names its pipes after the HOST and USER variables of the process under valgrind, and
 * callgrind_control finds them by its own: the service's HOST is its listen address.
 */
function controlEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return env.HOST === undefined ? process.env : { ...process.env, HOST: env.HOST };
}

async function countOne(
  upstreams: Upstreams,
  v: InstructionVariant,
  valgrind: string,
  warmup: number,
  answers: number,
  keep: string | null,
): Promise<InstructionCount> {
  const dir = mkdtempSync(join(tmpdir(), `preflight-cg-${v.name}-`));
  const env = serviceEnv(upstreams, null, v.env);
  const proc = fork(here(v.program === 'floor' ? './floor.js' : './service.js'), [], {
    execPath: valgrind,
    execArgv: [
      '--tool=callgrind',
      // V8 writes code into memory it then runs: valgrind must see those writes.
      '--smc-check=all-non-file',
      '--separate-threads=yes',
      `--callgrind-out-file=${join(dir, 'cg.%p')}`,
      process.execPath,
    ],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${v.name}: not listening within 10 minutes`)), 600_000);
      proc.once('message', (m: { url?: string; error?: string }) => {
        clearTimeout(timer);
        if (m.url) resolve(m.url);
        else reject(new Error(`${v.name}: ${m.error ?? 'no url'}`));
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${v.name}: exited (${code}) under valgrind: ${stderr.slice(-800)}`));
      });
    });
    const owner = v.program === 'floor' ? 'the floor reads no key' : await signup(url);
    if (owner === null) throw new Error(`${v.name}: no API key from signup`);
    const key = v.policy ? await policyKey(url, owner) : owner;
    if (key === null) throw new Error(`${v.name}: no agent key bound to the bench policy`);
    const path = v.path ?? '/v1/decide';
    const payload = v.body ?? COUNTED_DECIDE;
    // One answer at a time: the quota's grouped counts and the access log's one write per turn then
    // hold one answer each in every run, instead of however many the pace under valgrind happened
    // to gather. (The verdict log still commits its rows once a second, some 30 to a commit here.)
    const agent = new Agent({ connections: 1 });
    const send = async (n: number): Promise<number> => {
      let next = 0;
      let unexpected = 0;
      await Promise.all(
        Array.from({ length: 1 }, async () => {
          while (next++ < n) {
            const r = await request(`${url}${path}`, {
              method: 'POST',
              dispatcher: agent,
              headers: { 'content-type': 'application/json', 'x-api-key': key },
              body: payload,
              headersTimeout: 60_000,
              bodyTimeout: 60_000,
            });
            const body = await r.body.text();
            if (r.statusCode !== 200 || !body.includes('"verdict":"proceed"')) unexpected++;
          }
        }),
      );
      return unexpected;
    };
    await send(warmup);
    const control = (arg: string): void => {
      execFileSync('callgrind_control', [arg, String(proc.pid)], { env: controlEnv(env), stdio: 'ignore' });
    };
    // First the idle service: what its timers cost per millisecond (the event-loop delay monitor
    // wakes every 10 ms, the checkpoint thread looks every 100 ms). Under valgrind an answer takes
    // some 50 times longer than at full speed, so without this each answer would carry fifty
    // answers' worth of the idle work. Then the answers, with the idle rate taken off.
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    control('-z');
    let t0 = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    control('-d');
    const idleMs = performance.now() - t0;
    const idle = classify(await readDump(dir, 1, v.name, () => stderr));
    control('-z');
    t0 = performance.now();
    const unexpected = await send(answers);
    control('-d');
    const loadMs = performance.now() - t0;
    await agent.close();
    const loaded = classify(await readDump(dir, 2, v.name, () => stderr));
    const minusIdle = (busy: number, quiet: number): number => Math.max(0, busy - (quiet / idleMs) * loadMs);
    const eventLoop = minusIdle(loaded.eventLoop, idle.eventLoop);
    const otherThreads = minusIdle(loaded.otherThreads, idle.otherThreads);
    const { signing, nonces } = loaded;
    const per = (n: number): number => Math.round(n / answers);
    // The signing thread prepares nonces 1,024 at a time, so a window of answers holds one chunk
    // more or less: its figure is per nonce prepared, and each answer uses one.
    const signingThread = nonces > 0 ? Math.round(signing / nonces) : 0;
    return {
      variant: v.name,
      about: v.about,
      ...(v.against !== undefined ? { against: v.against } : {}),
      answers,
      unexpected,
      eventLoop: per(eventLoop),
      signingThread,
      noncesPrepared: nonces,
      idlePerSecond: {
        eventLoop: Math.round((idle.eventLoop / idleMs) * 1000),
        otherThreads: Math.round((idle.otherThreads / idleMs) * 1000),
      },
      otherThreads: per(otherThreads),
      all: per(eventLoop + otherThreads) + signingThread,
    };
  } finally {
    proc.kill('SIGKILL');
    if (keep !== null)
      for (const f of readdirSync(dir))
        if (/\.2-\d+$/.test(f))
          copyFileSync(join(dir, f), join(keep, `callgrind.${v.name}.${f.replace(/^cg\.\d+\.2-/, 'thread-')}`));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Counts every variant, all at once (each valgrind runs one thread at a time, so two cores carry
 * them side by side). Null with a reason when valgrind or callgrind_control is not installed.
 * With `keep`, each variant's dump of the counted answers is kept there, one file per thread
 * (`callgrind.<variant>.thread-<n>`), for callgrind_annotate.
 */
export async function measureInstructions(
  upstreams: Upstreams,
  quick: boolean,
  only: readonly string[] | null = null,
  keep: string | null = null,
): Promise<InstructionResult | { skipped: string }> {
  const variants = INSTRUCTION_VARIANTS.filter((v) => (only === null ? v.byDefault : only.includes(v.name)));
  if (variants.length === 0)
    throw new Error(
      `--only names no variant of --mode=instructions (${INSTRUCTION_VARIANTS.map((v) => v.name).join(', ')})`,
    );
  const valgrind = which('valgrind');
  if (valgrind === null || which('callgrind_control') === null)
    return { skipped: 'valgrind is not installed (Debian: apt-get install valgrind)' };
  const version = execFileSync(valgrind, ['--version'], { encoding: 'utf8' }).trim();
  const warmup = quick ? 1500 : 4000;
  const answers = quick ? 500 : 2000;
  if (keep !== null) mkdirSync(keep, { recursive: true });
  const counts = await Promise.all(variants.map((v) => countOne(upstreams, v, valgrind, warmup, answers, keep)));
  return { valgrind: version, warmup, answers, counts };
}
