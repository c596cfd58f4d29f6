/**
 * Signing off the event loop. One libsecp256k1 signature costs about 45 µs of CPU, as much as
 * the rest of a cached decide: on the main thread it would halve the service's throughput. The
 * answers made in one turn of the event loop go to a signing thread in messages of at most eight
 * (workers/sign-worker.ts; MAX_BATCH) and come back the same way; the answers wait for that round
 * trip, the event loop does not. The thread also makes the answer's hashes (its id, the request
 * body's hash and the EIP-712 digest), so the event loop only packs the fields. The bench
 * measures it (`decide-cached` against `decide-cached-unsigned`).
 */
import { Worker } from 'node:worker_threads';

/** What the thread needs to sign one answer (docs/attestations.md §1). */
export interface SignJob {
  chainId: number;
  verdict: number;
  risk: number;
  confidenceBps: number;
  issuedAt: number;
  expiresAt: number;
  actionHash: Buffer;
  policyHash: Buffer;
  /** Its keccak256 is the signed `id`. */
  answerId: string;
  /** The request body bytes as received; its keccak256 is `requestHash`. */
  body: Uint8Array;
}

/** What comes back: the two hashes the message shows, and r ‖ s ‖ v as 0x hex. */
export interface Signed {
  id: Buffer;
  requestHash: Buffer;
  signature: string;
}

/**
 * A job's fixed part, then the answer id's UTF-8 bytes and the body's: chain id (f64 at 0),
 * verdict (u8 at 8), risk (u8 at 9), confidence bps (u16 at 10), issuedAt and expiresAt (f64 at 12
 * and 20), the action hash (32 bytes at 28), the id's and the body's lengths (u32 at 60 and 64),
 * the policy hash (32 bytes at 68).
 */
export const JOB_HEADER_BYTES = 100;
/** Per answer back: id ‖ requestHash ‖ r ‖ s ‖ v. */
export const SIGNED_BYTES = 32 + 32 + 65;

export function packJob(job: SignJob): Buffer {
  const idLen = Buffer.byteLength(job.answerId, 'utf8');
  const b = Buffer.allocUnsafe(JOB_HEADER_BYTES + idLen + job.body.byteLength);
  b.writeDoubleBE(job.chainId, 0);
  b[8] = job.verdict;
  b[9] = job.risk;
  b.writeUInt16BE(job.confidenceBps, 10);
  b.writeDoubleBE(job.issuedAt, 12);
  b.writeDoubleBE(job.expiresAt, 20);
  job.actionHash.copy(b, 28);
  b.writeUInt32BE(idLen, 60);
  b.writeUInt32BE(job.body.byteLength, 64);
  job.policyHash.copy(b, 68);
  b.write(job.answerId, JOB_HEADER_BYTES, idLen, 'utf8');
  b.set(job.body, JOB_HEADER_BYTES + idLen);
  return b;
}

/**
 * The most answers one message carries. A busy turn reads dozens of requests; sent as one batch at
 * the end of the turn, they left the signing thread idle while the event loop worked and the event
 * loop idle while the thread signed, and the connections fell into that lockstep. Sent as soon as
 * eight are waiting, the first signatures come back while the event loop still answers the rest
 * of the turn (bench: the signed cached decide 1.3 to 1.7 times faster over three pairs of runs;
 * one answer per message costs more CPU than it saves).
 */
const MAX_BATCH = 8;

interface Batch {
  resolve: Array<(signed: Signed) => void>;
  reject: Array<(err: Error) => void>;
}

export class SignThread {
  readonly #worker: Worker;
  #jobs: Buffer[] = [];
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
    this.#worker.on('message', (out: ArrayBuffer | string) => {
      if (typeof out === 'string') return; // 'ready'
      const batch = this.#inFlight.shift();
      if (!batch) return;
      const all = Buffer.from(out);
      for (let i = 0; i < batch.resolve.length; i++) {
        const at = i * SIGNED_BYTES;
        batch.resolve[i]({
          id: all.subarray(at, at + 32),
          requestHash: all.subarray(at + 32, at + 64),
          signature: `0x${all.toString('hex', at + 64, at + SIGNED_BYTES)}`,
        });
      }
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

  /** The answer's hashes and signature, from the signing thread. */
  sign(job: SignJob): Promise<Signed> {
    if (this.#failed) return Promise.reject(this.#failed);
    const packed = packJob(job);
    return new Promise<Signed>((resolve, reject) => {
      this.#jobs.push(packed);
      this.#current.resolve.push(resolve);
      this.#current.reject.push(reject);
      if (this.#jobs.length >= MAX_BATCH) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        // After the poll phase: every request read in this turn joins the batch.
        setImmediate(() => {
          this.#scheduled = false;
          this.#flush();
        });
      }
    });
  }

  #flush(): void {
    if (this.#jobs.length === 0) return;
    const jobs = Buffer.concat(this.#jobs);
    const batch = this.#current;
    this.#jobs = [];
    this.#current = { resolve: [], reject: [] };
    if (this.#failed) {
      for (const r of batch.reject) r(this.#failed);
      return;
    }
    this.#inFlight.push(batch);
    // A copy of exactly the batch's bytes, transferred rather than cloned.
    const buf = jobs.buffer.slice(jobs.byteOffset, jobs.byteOffset + jobs.byteLength);
    this.#worker.postMessage(buf, [buf]);
  }

  async close(): Promise<void> {
    this.#failed ??= new Error('the signing thread is closed');
    await this.#worker.terminate();
  }
}
