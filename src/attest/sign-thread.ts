/**
 * Signing off the event loop. One libsecp256k1 signature costs about 45 µs of CPU, as much as
 * the rest of a cached decide: on the main thread it would halve the service's throughput. The
 * answers made in one turn of the event loop go to a signing thread in messages of at most eight
 * (workers/sign-worker.ts; MAX_BATCH) and come back the same way; the answers wait for that round
 * trip, the event loop does not. The thread also makes the answer's hashes (its id, the request
 * body's hash and the EIP-712 digest), so the event loop only packs the fields. The bench
 * measures it (`decide-cached` against `decide-cached-unsigned`).
 */
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import type { PreparedChunk } from './prepared.js';

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

/** How long close() lets the thread finish the message it is on before terminating it. */
const CLOSE_GRACE_MS = 10_000;

interface Batch {
  resolve: Array<(signed: Signed) => void>;
  reject: Array<(err: Error) => void>;
  /** performance.now() when it was posted to the thread. */
  sentAt: number;
}

export class SignThread {
  readonly #worker: Worker;
  #jobs: Buffer[] = [];
  #current: Batch = { resolve: [], reject: [], sentAt: 0 };
  #bytes = 0;
  readonly #inFlight: Batch[] = [];
  #failed: Error | null = null;
  #scheduled = false;
  readonly #ready: Promise<void>;
  #up = false;
  #exited = false;
  /** Prepared nonces (src/attest/prepared.ts) come on a port of their own, in the order asked. */
  readonly #prepared: MessagePort;
  readonly #preparing: Array<{ resolve: (c: PreparedChunk) => void; reject: (err: Error) => void }> = [];

  /**
   * `background`: the thread only prepares nonces, at the lowest priority
   * (workers/sign-worker.ts), and signs nothing itself.
   */
  constructor(privateKey: string, opts: { background?: boolean } = {}) {
    const { port1, port2 } = new MessageChannel();
    this.#worker = new Worker(new URL('../../workers/sign-worker.js', import.meta.url), {
      workerData: { key: privateKey, prepared: port2, background: opts.background === true },
      transferList: [port2],
    });
    this.#worker.unref();
    this.#prepared = port1;
    port1.unref();
    port1.on('message', (out: PreparedChunk) => this.#preparing.shift()?.resolve(out));
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
      for (const p of this.#preparing.splice(0)) p.reject(err);
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', (code) => {
      this.#exited = true;
      fail(new Error(`the signing thread exited (${code})`));
    });
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

  /**
   * How long, in ms, the oldest batch still on the thread has been there (0: none). A busy machine
   * can leave the thread waiting for a core for milliseconds; the attester then signs on its own
   * thread rather than queue behind it (src/attest/attester.ts, `auto`).
   */
  lagMs(now: number): number {
    return this.#inFlight.length === 0 ? 0 : now - this.#inFlight[0].sentAt;
  }

  /** The answer's hashes and signature, from the signing thread. */
  sign(job: SignJob): Promise<Signed> {
    if (this.#failed) return Promise.reject(this.#failed);
    const packed = packJob(job);
    return new Promise<Signed>((resolve, reject) => {
      this.#jobs.push(packed);
      this.#bytes += packed.byteLength;
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

  /** `count` prepared nonces for the answers' thread (src/attest/prepared.ts). */
  prepare(count: number): Promise<PreparedChunk> {
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise<PreparedChunk>((resolve, reject) => {
      this.#preparing.push({ resolve, reject });
      this.#prepared.postMessage(count);
    });
  }

  #flush(): void {
    if (this.#jobs.length === 0) return;
    const batch = this.#current;
    // The packed jobs copied once, into a buffer of exactly their size that is then transferred
    // rather than cloned.
    const buf = new ArrayBuffer(this.#bytes);
    const all = new Uint8Array(buf);
    let at = 0;
    for (const j of this.#jobs) {
      all.set(j, at);
      at += j.byteLength;
    }
    this.#jobs = [];
    this.#bytes = 0;
    this.#current = { resolve: [], reject: [], sentAt: 0 };
    if (this.#failed) {
      for (const r of batch.reject) r(this.#failed);
      return;
    }
    batch.sentAt = performance.now();
    this.#inFlight.push(batch);
    this.#worker.postMessage(buf, [buf]);
  }

  /**
   * Ends the thread between two of its messages (workers/sign-worker.ts): a thread terminated while
   * it is inside the native binding takes the process down with it. A thread still loading reads
   * the request once it listens. One that has not ended after CLOSE_GRACE_MS is terminated.
   */
  async close(): Promise<void> {
    this.#failed ??= new Error('the signing thread is closed');
    for (const p of this.#preparing.splice(0)) p.reject(this.#failed);
    this.#prepared.close();
    if (this.#exited) return;
    const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
    // Held until it has ended, so a caller awaiting close() is not left behind by an empty loop.
    this.#worker.ref();
    this.#worker.postMessage('close');
    const late = setTimeout(() => void this.#worker.terminate(), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(late);
  }
}
