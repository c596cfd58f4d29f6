/**
 * WAL checkpoints off the answers' thread (bench/README.md, "Eighth pass"; README, "Bench").
 *
 * SQLite in WAL mode appends each commit to the `-wal` file; by default the connection whose commit
 * takes the WAL past 1,000 pages copies them into the database file and syncs it, inside that
 * commit. On the service's event loop that is a pause of milliseconds every few thousand answers,
 * and a share of every reservation's cost. Here the store's connection sets
 * `wal_autocheckpoint = 0` and a thread of its own (workers/checkpoint-worker.ts), with a second
 * connection, checkpoints whenever the WAL has changed, every CHECKPOINT_INTERVAL_MS. Its PASSIVE
 * checkpoint, which copies nearly everything, blocks no writer and no reader. Once the WAL holds
 * 1,000 frames it follows with a RESTART checkpoint, which holds the write lock while it copies
 * the few frames left and syncs: a commit that meets it waits that long (the connection's
 * busy_timeout), where before a commit copied and synced a thousand pages itself. Once a
 * checkpoint has copied every frame, the thread also starts the WAL afresh with a commit of its
 * own, so that the header a fresh WAL writes and syncs is not written in the store's next commit.
 *
 * Should the thread fail to start or end unasked, the connection takes checkpoints back
 * (`wal_autocheckpoint = 1000`, SQLite's default): the WAL never grows without bound.
 */
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/** How often the thread looks at the WAL. */
export const CHECKPOINT_INTERVAL_MS = 100;
/** SQLite's own default, restored on the store's connection when the thread is gone. */
const AUTOCHECKPOINT_PAGES = 1000;

export interface CheckpointResult {
  /** 1 when the checkpoint could not finish for a lock held elsewhere. */
  busy: number;
  /** Frames in the WAL. */
  log: number;
  /** Frames copied into the database file. */
  checkpointed: number;
}

type Reply = { id: number; result?: CheckpointResult; error?: string };

export class Checkpointer {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, { resolve: (r: CheckpointResult) => void; reject: (e: Error) => void }>();
  #nextId = 1;
  #closing = false;
  #state: 'starting' | 'running' | 'gone' = 'starting';
  readonly #ready: Promise<void>;

  constructor(
    private readonly db: Database.Database,
    file: string,
    intervalMs = CHECKPOINT_INTERVAL_MS,
  ) {
    this.#worker = new Worker(new URL('../../workers/checkpoint-worker.js', import.meta.url), {
      workerData: { file, intervalMs },
    });
    // Held open while starting, answering or closing; unref'd while it only keeps the WAL short.
    this.#ready = new Promise<void>((resolve) => {
      this.#worker.on('message', (m: 'ready' | 'closed' | Reply) => {
        if (m === 'ready') {
          if (this.#state === 'starting' && this.db.open) {
            this.db.pragma('wal_autocheckpoint = 0');
            this.#state = 'running';
          }
          if (!this.#closing) this.#worker.unref();
          resolve();
          return;
        }
        if (typeof m === 'string') return; // 'closed': close() waits for it
        const w = this.#waiting.get(m.id);
        this.#waiting.delete(m.id);
        if (this.#waiting.size === 0 && !this.#closing) this.#worker.unref();
        if (m.result) w?.resolve(m.result);
        else w?.reject(new Error(`checkpoint failed: ${m.error}`));
      });
      // An error is followed by 'exit'; only the exit changes the state.
      this.#worker.on('error', () => undefined);
      this.#worker.on('exit', () => {
        this.#state = 'gone';
        if (!this.#closing && this.db.open) this.db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
        for (const w of this.#waiting.values()) w.reject(new Error('the checkpoint thread has ended'));
        this.#waiting.clear();
        resolve();
      });
    });
  }

  /** Resolves once the thread runs the checkpoints, or has ended and left them to the connection. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** Whether the thread is running the checkpoints now (false while starting or once gone). */
  get running(): boolean {
    return this.#state === 'running';
  }

  /** A checkpoint at once, on the thread. */
  now(): Promise<CheckpointResult> {
    if (this.#state === 'gone') return Promise.reject(new Error('the checkpoint thread has ended'));
    const id = this.#nextId++;
    return new Promise<CheckpointResult>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage({ op: 'now', id });
    });
  }

  /** Ends the thread once its connection is closed; the store's connection closes after it. */
  async close(): Promise<void> {
    if (this.#state === 'gone') return;
    const starting = this.#state === 'starting';
    this.#closing = true;
    // A thread still starting has checkpointed nothing: it is ended without waiting for it to be up.
    if (starting) {
      await this.#worker.terminate();
      return;
    }
    this.#worker.ref();
    const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
    const closed = new Promise<void>((resolve) => {
      this.#worker.on('message', (m: unknown) => {
        if (m === 'closed') resolve();
      });
      // A thread that does not answer in time is ended all the same.
      setTimeout(resolve, 2000).unref();
    });
    this.#worker.postMessage({ op: 'close' });
    await Promise.race([closed, exited]);
    await this.#worker.terminate();
  }
}
