/**
 * Runs one list refresh in a thread of its own (workers/list-worker.ts) and waits for its answer.
 * The thread has its own heap limit; if it dies (out of memory on a hostile list, a bug), the
 * refresh is a failure and the service goes on with the list it has (docs/screening.md §3).
 */
import { Worker } from 'node:worker_threads';
import type { FetchListRequest } from './fetch.js';
import type { PackedList } from './list.js';

export type WorkerResult =
  | { ok: true; packed: PackedList; date: string | null; malformed: number; format: string; bytes: number }
  | { ok: false; reason: string; message: string };

/** Heap of the list thread: a million-address feed parses in well under this. */
const LIST_THREAD_HEAP_MB = 768;

export function refreshInThread(req: FetchListRequest): Promise<WorkerResult> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: WorkerResult) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    const w = new Worker(new URL('../../workers/list-worker.js', import.meta.url), {
      workerData: req,
      resourceLimits: { maxOldGenerationSizeMb: LIST_THREAD_HEAP_MB },
    });
    w.unref();
    w.once('message', (m: WorkerResult) => {
      done(m);
      void w.terminate();
    });
    w.once('error', (err) =>
      done({ ok: false, reason: 'unparsable', message: `the list thread failed: ${err.message}` }),
    );
    w.once('exit', (code) =>
      done({ ok: false, reason: 'unparsable', message: `the list thread exited (code ${code}) without a list` }),
    );
  });
}
