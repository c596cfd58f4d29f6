/**
 * Child processes of the bench: servers that report their URL over IPC once listening, and the
 * load generator that takes one job and answers with its figures. Every wait is bounded.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LoadJob, LoadResult } from './load.js';

export interface Child {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

function waitForMessage<T>(proc: ChildProcess, what: string, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${what}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    proc.once('message', (m) => {
      clearTimeout(timer);
      resolve(m as T);
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what}: exited (${code ?? signal}) before answering`));
    });
  });
}

/** Stops a child with SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
function stopper(proc: ChildProcess, graceMs = 5000): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      proc.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      proc.kill('SIGTERM');
    });
}

/**
 * Where server children write a V8 CPU profile of their whole life (`--profile=DIR`), or null.
 * Each writes `CPU.<date>.<pid>.<thread>.<n>.cpuprofile` when it exits, one per thread; open them
 * in Chrome DevTools (Performance) or any .cpuprofile viewer.
 */
let profileDir: string | null = null;

export function profileServersInto(dir: string): void {
  profileDir = dir;
}

/** Forks a server script (compiled, next to this file) that sends `{url}` once it listens. */
export async function startServerChild(
  script: string,
  env: Record<string, string>,
  stdio: 'ignore' | 'inherit' = 'ignore',
): Promise<Child> {
  const proc = fork(here(script), [], {
    execArgv:
      profileDir === null ? process.execArgv : [...process.execArgv, '--cpu-prof', `--cpu-prof-dir=${profileDir}`],
    env: { ...process.env, ...env },
    stdio: [stdio === 'inherit' ? 'inherit' : 'ignore', stdio, 'inherit', 'ipc'],
  });
  const m = await waitForMessage<{ url?: string; error?: string }>(proc, script, 30_000);
  if (m.url === undefined) throw new Error(`${script}: ${m.error ?? 'no url'}`);
  return { url: m.url, proc, stop: stopper(proc) };
}

/** Runs one load job in a fresh process, so autocannon never shares an event loop with a server. */
export async function runLoadInChild(job: LoadJob): Promise<LoadResult> {
  const proc = fork(here('./load.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const answer = waitForMessage<{ result?: LoadResult; error?: string }>(
    proc,
    'load',
    (job.warmupSec + job.durationSec) * 1000 + 30_000,
  );
  proc.send(job);
  const m = await answer;
  if (m.result === undefined) throw new Error(`load: ${m.error ?? 'no result'}`);
  return m.result;
}

/**
 * CPU seconds a process has used (user + system, all its threads), or with `eventLoop` only its
 * main thread's (the thread whose id is the process's: the event loop), from /proc on Linux; null
 * elsewhere. CPU per request holds still when other work shares the cores, unlike req/s; the event
 * loop's share is what bounds a cached answer's throughput, the other threads run beside it.
 */
export function cpuSeconds(pid: number | undefined, eventLoop = false): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(eventLoop ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at state; utime, stime are 14, 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks / 100 : null; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}
