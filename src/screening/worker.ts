/**
 * Runs list refreshes in a thread of their own (workers/list-worker.ts). The thread has its own
 * heap limit; if it dies (out of memory on a hostile list, a bug), the refreshes it was running are
 * failures and the service goes on with the lists it has (docs/screening.md §3). The thread is
 * kept while refreshes come and ends 2 s after the last, so an hourly refresh holds no
 * thread in between.
 */
import { Worker } from 'node:worker_threads';
import type { FetchListRequest } from './fetch.js';
import type { PackedList } from './list.js';

export type WorkerResult =
  | { ok: true; packed: PackedList; date: string | null; malformed: number; format: string; bytes: number }
  | { ok: false; reason: string; message: string };

/** Heap of the list thread: a million-address feed parses in well under this. */
const LIST_THREAD_HEAP_MB = 768;
const IDLE_MS = 2_000;

let thread: { worker: Worker; pending: Map<number, (r: WorkerResult) => void>; idle: NodeJS.Timeout | null } | null =
  null;
let nextId = 0;

function start(): NonNullable<typeof thread> {
  const worker = new Worker(new URL('../../workers/list-worker.js', import.meta.url), {
    resourceLimits: { maxOldGenerationSizeMb: LIST_THREAD_HEAP_MB },
  });
  worker.unref();
  const t = { worker, pending: new Map<number, (r: WorkerResult) => void>(), idle: null as NodeJS.Timeout | null };
  const fail = (message: string) => {
    if (thread === t) thread = null;
    for (const done of t.pending.values()) done({ ok: false, reason: 'unparsable', message });
    t.pending.clear();
  };
  worker.on('message', (m: { id: number; result: WorkerResult }) => {
    const done = t.pending.get(m.id);
    t.pending.delete(m.id);
    done?.(m.result);
    if (t.pending.size === 0 && thread === t) {
      t.idle = setTimeout(() => {
        if (t.pending.size === 0) {
          if (thread === t) thread = null;
          void worker.terminate();
        }
      }, IDLE_MS);
      t.idle.unref();
    }
  });
  worker.on('error', (err) => fail(`the list thread failed: ${err.message}`));
  worker.on('exit', (code) => fail(`the list thread exited (code ${code}) without a list`));
  return t;
}

export function refreshInThread(req: FetchListRequest): Promise<WorkerResult> {
  thread ??= start();
  const t = thread;
  if (t.idle) clearTimeout(t.idle);
  t.idle = null;
  const id = nextId++;
  return new Promise((resolve) => {
    t.pending.set(id, resolve);
    t.worker.postMessage({ id, req });
  });
}
