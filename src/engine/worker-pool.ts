/**
 * Where checks run: a Piscina pool of worker threads tuned for I/O (many concurrent tasks per
 * thread, bounded queue), or inline on the main thread (POOL_THREADS=0). A request's cold checks
 * go to the pool as ONE task; each check's result streams back to the main thread as soon as it
 * is ready, so a slow check never holds back a fast one.
 */
import { Piscina } from 'piscina';
import type { Config } from '../config.js';
import { runTimedCheck, type ExecItem, type ExecResult } from './timed-check.js';
import { warmUp } from './warm-up.js';

export interface PoolStats {
  queueSize: number;
  utilization: number;
  threads: number;
}

export interface Executor {
  readonly kind: 'pool' | 'inline';
  /** Calls `onResult` once per item; rejects items still open when the worker dies. */
  execute(items: ExecItem[], hardTimeoutMs: number, onResult: (r: ExecResult) => void): Promise<void>;
  stats(): PoolStats;
  /**
   * Resolves once every thread that runs checks has run the warm-up (src/engine/warm-up.ts):
   * each worker of the pool, or the main thread inline.
   */
  ready(): Promise<void>;
  /** How many threads have run the warm-up so far. */
  readonly warmThreads: number;
  close(): Promise<void>;
  /** The pool itself, for operators and fault tests; null inline. */
  readonly pool: Piscina | null;
}

class InlineExecutor implements Executor {
  readonly kind = 'inline' as const;
  readonly pool = null;
  constructor(
    private readonly config: Readonly<Config>,
    private readonly warmChecks: ReadonlyArray<Record<string, unknown>> = [],
  ) {}
  async execute(items: ExecItem[], hardTimeoutMs: number, onResult: (r: ExecResult) => void): Promise<void> {
    await Promise.all(items.map(async (it) => onResult(await runTimedCheck(it, this.config, hardTimeoutMs))));
  }
  stats(): PoolStats {
    return { queueSize: 0, utilization: 0, threads: 0 };
  }
  #warmed: Promise<void> | null = null;
  warmThreads = 0;
  /** The main thread's own warm-up (src/engine/warm-up.ts), once. */
  ready(): Promise<void> {
    this.#warmed ??= warmUp(this.config, this.warmChecks).then(
      () => {
        this.warmThreads = 1;
      },
      () => undefined,
    );
    return this.#warmed;
  }
  async close(): Promise<void> {}
}

class PoolExecutor implements Executor {
  readonly kind = 'pool' as const;
  readonly pool: Piscina;
  private readonly started: Promise<void>;
  /** Until every worker has loaded, checks run inline, so start-up never waits on the pool. */
  private warm = false;
  private readonly inline: InlineExecutor;
  constructor(config: Readonly<Config>, warmChecks: ReadonlyArray<Record<string, unknown>>) {
    this.inline = new InlineExecutor(config, warmChecks);
    this.pool = new Piscina({
      filename: new URL('../../workers/check-worker.js', import.meta.url).href,
      minThreads: config.poolThreads,
      maxThreads: config.poolThreads,
      concurrentTasksPerWorker: config.poolConcurrency,
      maxQueue: config.poolMaxQueue,
      idleTimeout: 60_000,
      workerData: { config, warmChecks },
    });
    // A dying worker is replaced by piscina; its tasks are rejected and answered as errors.
    this.pool.on('error', () => {});
    // Each check's result comes back on its worker's own channel to this thread, tagged with its
    // task (workers/check-worker.ts): one channel per worker for the pool's life, where a channel
    // made, transferred and closed per task cost the event loop 20 to 50 µs a request.
    this.pool.on('message', (m: { task?: number; results?: ExecResult[] }) => {
      // A readiness task's results (task -1) belong to no request: they only warm this path.
      if (typeof m?.task !== 'number' || !Array.isArray(m.results)) return;
      const deliver = this.#tasks.get(m.task);
      if (deliver) for (const r of m.results) deliver(r);
    });
    // Piscina marks its first workers ready before they have loaded the check modules. Each
    // thread runs the warm-up (src/engine/warm-up.ts) while it loads them, and the pool counts as
    // ready once every thread has answered a task, so no caller's check waits on a thread that is
    // still loading or compiling.
    this.started = this.#warmEveryThread(config.poolThreads).then(
      () => {
        this.warm = true;
      },
      () => undefined, // a pool destroyed while warming up is not an error of its own
    );
  }

  /**
   * One readiness task per thread at a time (piscina's balancer gives each to an idle thread)
   * until every thread has answered one, which it does once loaded and warm; bounded, since a pool
   * that keeps replacing threads must still start.
   */
  async #warmEveryThread(threads: number): Promise<void> {
    const seen = new Set<number>();
    for (let round = 0; round < 4 && seen.size < threads; round++) {
      const ids = await Promise.all(Array.from({ length: threads }, () => this.pool.run({ warm: true })));
      for (const id of ids) seen.add(id as number);
    }
    this.warmThreads = seen.size;
  }

  warmThreads = 0;

  ready(): Promise<void> {
    return this.started;
  }

  /** Tasks whose results are still streaming back, by the key their results carry. */
  readonly #tasks = new Map<number, (r: ExecResult) => void>();
  #nextTask = 0;

  execute(items: ExecItem[], hardTimeoutMs: number, onResult: (r: ExecResult) => void): Promise<void> {
    if (!this.warm) return this.inline.execute(items, hardTimeoutMs, onResult);
    return new Promise<void>((resolve) => {
      const open = new Set(items.map((i) => i.id));
      const task = this.#nextTask++;
      const finish = () => {
        this.#tasks.delete(task);
        resolve();
      };
      this.#tasks.set(task, (r) => {
        if (!open.delete(r.id)) return;
        onResult(r);
        if (open.size === 0) finish();
      });
      this.pool.run({ items, hardTimeoutMs, task }).catch((err: Error) => {
        // Let results already posted by the worker arrive, then answer the rest as errors.
        setImmediate(() => {
          const saturated = /queue/i.test(err?.message ?? '');
          for (const id of open) {
            onResult({
              id,
              latencyMs: 0,
              outcome: saturated
                ? {
                    status: 'error',
                    reason: 'pool_saturated',
                    message: 'The check queue is full; retry shortly.',
                    source: null,
                    ttl_s: 0,
                    retry_after_s: 1,
                  }
                : {
                    status: 'error',
                    reason: 'worker_crashed',
                    message: `The worker running this check stopped: ${err?.message ?? 'unknown cause'}.`,
                    source: null,
                    ttl_s: 0,
                    retry_after_s: 1,
                  },
            });
          }
          open.clear();
          finish();
        });
      });
    });
  }

  stats(): PoolStats {
    return { queueSize: this.pool.queueSize, utilization: this.pool.utilization, threads: this.pool.threads.length };
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

/**
 * `warmChecks`: check bodies each thread's warm-up runs besides its own (src/engine/warm-up.ts),
 * such as the checks the service's guards plan.
 */
export function createExecutor(
  config: Readonly<Config>,
  warmChecks: ReadonlyArray<Record<string, unknown>> = [],
): Executor {
  return config.poolThreads === 0 ? new InlineExecutor(config, warmChecks) : new PoolExecutor(config, warmChecks);
}
