/**
 * Signing off the event loop. One libsecp256k1 signature costs about 45 µs of CPU, as much as
 * the rest of a cached decide: on the main thread it would halve the service's throughput. The
 * digests of the answers made in one turn of the event loop go to a signing thread in one message
 * (workers/sign-worker.ts) and come back as one; the answers wait for that round trip, the event
 * loop does not. The bench measures it (`decide-cached` against `decide-cached-unsigned`).
 */
import { Worker } from 'node:worker_threads';

interface Batch {
  resolve: Array<(signature: string) => void>;
  reject: Array<(err: Error) => void>;
}

export class SignThread {
  readonly #worker: Worker;
  #digests: Buffer[] = [];
  #current: Batch = { resolve: [], reject: [] };
  readonly #inFlight: Batch[] = [];
  #failed: Error | null = null;
  #scheduled = false;
  readonly #ready: Promise<void>;
  #up = false;

  constructor(privateKey: string) {
    this.#worker = new Worker(new URL('../../workers/sign-worker.js', import.meta.url), {
      workerData: { key: privateKey },
    });
    this.#worker.unref();
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#worker.once('message', () => {
        this.#up = true;
        resolve();
      });
      this.#worker.once('error', reject);
      this.#worker.once('exit', (code) => reject(new Error(`the signing thread exited (${code}) while starting`)));
    });
    // Seen by nobody when the thread starts well; a failure is reported through ready().
    this.#ready.catch(() => undefined);
    this.#worker.on('message', (sigs: ArrayBuffer | string) => {
      if (typeof sigs === 'string') return; // 'ready'
      const batch = this.#inFlight.shift();
      if (!batch) return;
      const hex = Buffer.from(sigs).toString('hex');
      for (let i = 0; i < batch.resolve.length; i++) batch.resolve[i](`0x${hex.slice(i * 130, i * 130 + 130)}`);
    });
    const fail = (err: Error): void => {
      this.#failed ??= err;
      for (const b of this.#inFlight.splice(0)) for (const r of b.reject) r(err);
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', (code) => fail(new Error(`the signing thread exited (${code})`)));
  }

  /** Resolves once the thread has loaded and listens; rejects when it failed to start. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /**
   * Whether the thread signs now: false while it is still starting (a cold start on a busy machine
   * takes seconds, which neither start-up nor any answer should wait for) and after it failed or
   * was closed. Meanwhile the caller signs on its own thread.
   */
  get alive(): boolean {
    return this.#up && this.#failed === null;
  }

  /** r ‖ s ‖ v of `digest`, 0x hex, from the signing thread. */
  sign(digest: Buffer): Promise<string> {
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise<string>((resolve, reject) => {
      this.#digests.push(digest);
      this.#current.resolve.push(resolve);
      this.#current.reject.push(reject);
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After the poll phase: every request read in this turn joins the batch.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const digests = Buffer.concat(this.#digests);
    const batch = this.#current;
    this.#digests = [];
    this.#current = { resolve: [], reject: [] };
    if (this.#failed) {
      for (const r of batch.reject) r(this.#failed);
      return;
    }
    this.#inFlight.push(batch);
    // A copy of exactly the batch's bytes, transferred rather than cloned.
    const buf = digests.buffer.slice(digests.byteOffset, digests.byteOffset + digests.byteLength);
    this.#worker.postMessage(buf, [buf]);
  }

  async close(): Promise<void> {
    this.#failed ??= new Error('the signing thread is closed');
    await this.#worker.terminate();
  }
}
