/**
 * Piscina worker: receives plain data (a request's cold checks), runs them concurrently, and
 * posts each result on the task's port as soon as it is ready. Never throws for a check.
 */
import { threadId, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { Config } from '../src/config.js';
import { runTimedCheck, type ExecItem } from '../src/engine/timed-check.js';
import { warmUp } from '../src/engine/warm-up.js';

const config = (workerData as { config: Readonly<Config> }).config;
let warmed: Promise<void> | null = null;

export default async function run(
  task: { items: ExecItem[]; hardTimeoutMs: number; port: MessagePort } | { warm: true },
): Promise<number> {
  if (!('items' in task)) {
    // Warm-up (src/engine/warm-up.ts), once per thread; answers which thread this is.
    warmed ??= warmUp(config).catch(() => undefined);
    await warmed;
    return threadId;
  }
  await Promise.all(
    task.items.map(async (item) => {
      const result = await runTimedCheck(item, config, task.hardTimeoutMs);
      task.port.postMessage(result);
    }),
  );
  task.port.close();
  return task.items.length;
}
