/**
 * Piscina worker: receives plain data (a request's cold checks), runs them concurrently, and
 * posts each result, tagged with its task, to the main thread as soon as it is ready
 * (src/engine/worker-pool.ts). Never throws for a check.
 */
import { parentPort, threadId, workerData } from 'node:worker_threads';
import type { Config } from '../src/config.js';
import { runTimedCheck, type ExecItem, type ExecResult } from '../src/engine/timed-check.js';
import { warmUp } from '../src/engine/warm-up.js';

const { config, warmChecks } = workerData as {
  config: Readonly<Config>;
  warmChecks?: ReadonlyArray<Record<string, unknown>>;
};
// The warm-up (src/engine/warm-up.ts) runs while piscina loads this module, so a thread is marked
// ready only once it is warm: the pool's first threads and any that replaces one that died.
const warmed = await warmUp(config, warmChecks).catch((): ExecResult[] => []);

export default async function run(
  task: { items: ExecItem[]; hardTimeoutMs: number; task: number } | { warm: true },
): Promise<number> {
  // The pool's readiness task: this thread is loaded and warm; it answers which thread it is, and
  // first sends its warm-up's results back as a task's go (tagged -1: no request's), so that the
  // first real results do not pay for the first message of their kind on either thread.
  if (!('items' in task)) {
    if (warmed.length > 0) parentPort!.postMessage({ task: -1, results: warmed });
    return threadId;
  }
  // Results that finish in the same turn of this thread's event loop go back in one message
  // (checks of one request often do: their upstreams answer together), so the main thread is
  // woken once for them, not once per check; a slower check still follows on its own.
  let ready: ExecResult[] = [];
  const flush = (): void => {
    if (ready.length === 0) return;
    parentPort!.postMessage({ task: task.task, results: ready });
    ready = [];
  };
  await Promise.all(
    task.items.map(async (item) => {
      const result = await runTimedCheck(item, config, task.hardTimeoutMs);
      if (ready.length === 0) setImmediate(flush);
      ready.push(result);
    }),
  );
  flush();
  return task.items.length;
}
