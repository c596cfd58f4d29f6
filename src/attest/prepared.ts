/**
 * Signatures from prepared nonces (docs/attestations.md, "Where the signature is made",
 * `prepared`). An ECDSA signature is s = k⁻¹·(z + r·d) mod n, where r is the x coordinate of k·G.
 * Everything except z, the digest, can be made before the answer exists: the signing thread draws
 * random nonces k, multiplies each by the generator (libsecp256k1, constant time), and sends back
 * per nonce r, a = k⁻¹ and b = k⁻¹·r·d, so that the answer's own thread finishes the signature as
 * s = a·z + b mod n: one multiplication and one addition, well under a microsecond, against some
 * 30 to 45 µs for the whole signature. Both halves run in the `nonces` addon when it is built
 * (src/crypto/nonces.ts: a prepared entry then costs about one k·G, the affine conversions and
 * inverses made in batches), else in JavaScript with the same entries.
 *
 * The rules that keep it sound:
 * - k is 32 bytes of the operating system's CSPRNG (`crypto.randomBytes`), rejected unless
 *   0 < k < n, so it is uniform; no nonce is derived from another.
 * - Each prepared entry is used once: the pool moves past it and zeroes it in its chunk before
 *   the signature leaves. Entries live only in this process's memory (the signing thread and the
 *   answers' thread), are never stored, logged or sent elsewhere, and are zeroed when the signer
 *   closes.
 * - A nonce whose point has x ≥ n (recovery ids 2 and 3, probability about 2⁻¹²⁸) is dropped, so
 *   every signature recovers with v 27 or 28; s is normalised to the lower half of the order.
 * - When no entry is ready the caller signs the usual way (libsecp256k1, RFC 6979 nonces).
 */
import { randomBytes } from 'node:crypto';
import { ENTRY_BYTES, type NativeNonces, loadNativeNonces } from '../crypto/nonces.js';
import { type NativeSecp256k1, SECP256K1_N } from '../crypto/secp256k1.js';

const HALF_N = SECP256K1_N >> 1n;

/**
 * Prepared entries, as the signing thread sends them (the buffer is transferred, not copied):
 * `count` entries of ENTRY_BYTES, each r ‖ k⁻¹ ‖ k⁻¹·r·d mod n (32 bytes each, big-endian) ‖ the
 * recovery id of k·G (the parity of its y).
 */
export interface PreparedChunk {
  entries: Uint8Array;
  count: number;
}

const big = (b: Uint8Array, from = 0, to = b.byteLength): bigint =>
  BigInt(`0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex', from, to)}`);

const put = (out: Buffer, at: number, v: bigint) => out.write(v.toString(16).padStart(64, '0'), at, 32, 'hex');

function modpow(base: bigint, exp: bigint, m: bigint): bigint {
  let r = 1n;
  let b = base % m;
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) r = (r * b) % m;
    b = (b * b) % m;
  }
  return r;
}

/**
 * `count` prepared entries for the private key `key` (32 bytes), made on the signing thread. With
 * the addon (`nonces`, src/crypto/nonces.ts, its context already randomised) the points and the
 * inverses are made in C; without it, here: k·G by the binding, one at a time, and the inverses
 * together (Montgomery's trick: one exponentiation and three multiplications per entry). Both
 * write the same entries.
 */
export function prepareNonces(
  native: NativeSecp256k1,
  key: Uint8Array,
  count: number,
  nonces: NativeNonces | null = null,
): PreparedChunk {
  const entries = new Uint8Array(new ArrayBuffer(ENTRY_BYTES * count));
  if (nonces !== null) {
    const candidates = randomBytes(32 * count);
    // A candidate outside 1..n-1, or a point with x ≥ n, is skipped (about 2⁻¹²⁸ each): the chunk
    // may hold fewer entries than asked, never a biased one.
    const made = nonces.prepare(key, candidates, entries);
    candidates.fill(0);
    return { entries, count: made };
  }
  const d = big(key);
  const ks: bigint[] = [];
  const rs: bigint[] = [];
  const recid = new Uint8Array(count);
  let pool = randomBytes(32 * count);
  let at = 0;
  while (ks.length < count) {
    if (at === pool.length) {
      pool.fill(0);
      pool = randomBytes(32 * (count - ks.length));
      at = 0;
    }
    const kb = pool.subarray(at, at + 32);
    at += 32;
    const k = big(kb);
    if (k === 0n || k >= SECP256K1_N) continue;
    const point = native.publicKeyCreate(kb, true);
    const x = big(point, 1, 33);
    if (x === 0n || x >= SECP256K1_N) continue;
    recid[ks.length] = point[0] & 1;
    ks.push(k);
    rs.push(x);
  }
  pool.fill(0);
  const prefix: bigint[] = new Array(count);
  let acc = 1n;
  for (let i = 0; i < count; i++) {
    prefix[i] = acc;
    acc = (acc * ks[i]) % SECP256K1_N;
  }
  let inv = modpow(acc, SECP256K1_N - 2n, SECP256K1_N);
  const out = Buffer.from(entries.buffer);
  for (let i = count - 1; i >= 0; i--) {
    const kInv = (inv * prefix[i]) % SECP256K1_N;
    inv = (inv * ks[i]) % SECP256K1_N;
    const e = ENTRY_BYTES * i;
    put(out, e, rs[i]);
    put(out, e + 32, kInv);
    put(out, e + 64, (((kInv * rs[i]) % SECP256K1_N) * d) % SECP256K1_N);
    out[e + 96] = recid[i];
  }
  return { entries, count };
}

/**
 * The signature of `digest` (32 bytes) from entry `i` of `chunk`: r ‖ s ‖ v (27 or 28) as 0x hex,
 * s = k⁻¹·z + k⁻¹·r·d in the lower half of the order. Null in the one case it cannot sign (s = 0,
 * probability about 2⁻²⁵⁶). The entry is zeroed either way. With the addon, in C; without it,
 * here.
 */
export function finishSignature(
  chunk: PreparedChunk,
  i: number,
  digest: Uint8Array,
  nonces: NativeNonces | null = null,
): string | null {
  if (nonces !== null) return nonces.finish(chunk.entries, i, digest);
  const e = ENTRY_BYTES * i;
  const entries = chunk.entries;
  let s = (big(entries, e + 32, e + 64) * big(digest) + big(entries, e + 64, e + 96)) % SECP256K1_N;
  let recid = entries[e + 96] & 1;
  const r = Buffer.from(entries.buffer, entries.byteOffset, entries.byteLength).toString('hex', e, e + 32);
  entries.fill(0, e, e + ENTRY_BYTES);
  if (s === 0n) return null;
  if (s > HALF_N) {
    s = SECP256K1_N - s;
    recid ^= 1;
  }
  return `0x${r}${s.toString(16).padStart(64, '0')}${(27 + recid).toString(16)}`;
}

/** Where the entries come from: the signing thread (SignThread.prepare). */
export type PrepareSource = (count: number) => Promise<PreparedChunk>;

export interface PreparedPoolOptions {
  /**
   * Entries asked for in one message (default 1024: 16 to 30 ms of the signing thread). Fewer,
   * longer runs of that thread cost the answers' thread less than many short ones: on the 2-core
   * bench machine, chunks of 32 left it idle while waiting for the load generator that shares the
   * second core, chunks of 1024 did not (docs/attestations.md §3).
   */
  chunk?: number;
  /** Entries kept ready or on their way (default 4096). */
  target?: number;
  /** What finishes the signatures: the addon (default, when built) or null for JavaScript. */
  nonces?: NativeNonces | null;
}

/** A chunk with the index of its next unused entry. */
interface Held {
  chunk: PreparedChunk;
  next: number;
}

/**
 * The prepared entries on the answers' thread, refilled from the signing thread as they are used.
 * `sign` never waits: with none ready it answers null and the caller signs the usual way.
 */
export class PreparedPool {
  readonly #source: PrepareSource;
  /** The addon that finishes signatures, or null: finished in JavaScript. */
  readonly #nonces: NativeNonces | null;
  readonly #chunk: number;
  readonly #target: number;
  readonly #held: Held[] = [];
  #ready = 0;
  #asked = 0;
  /** The asks on their way. */
  readonly #inFlight = new Set<Promise<void>>();
  #closed = false;
  #failed = false;
  /** Signatures made from prepared entries, and those asked for while none was ready. */
  readonly counts = { prepared: 0, missed: 0 };

  constructor(source: PrepareSource, opts: PreparedPoolOptions = {}) {
    this.#source = source;
    this.#nonces = opts.nonces === undefined ? loadNativeNonces() : opts.nonces;
    this.#chunk = opts.chunk ?? 1024;
    this.#target = opts.target ?? 4096;
  }

  /** Whether the addon finishes the signatures (else JavaScript). */
  get native(): boolean {
    return this.#nonces !== null;
  }

  /** Entries ready now. */
  get ready(): number {
    return this.#ready;
  }

  /**
   * Asks for entries until the ready and the asked-for ones reach `upTo` (default: the target);
   * resolves when every ask on its way, these and earlier ones, has come or failed.
   */
  fill(upTo = this.#target): Promise<void> {
    const limit = Math.min(upTo, this.#target);
    while (!this.#closed && !this.#failed && this.#ready + this.#asked < limit) {
      this.#asked += this.#chunk;
      const ask = this.#source(this.#chunk)
        .then(
          (chunk) => {
            this.#asked -= this.#chunk;
            const n = chunk.count;
            if (this.#closed || !(n > 0) || chunk.entries.byteLength < n * ENTRY_BYTES) {
              chunk.entries.fill(0);
              return;
            }
            this.#held.push({ chunk, next: 0 });
            this.#ready += n;
          },
          () => {
            // A thread that cannot prepare (closed, failed) leaves every later answer to the usual way.
            this.#asked -= this.#chunk;
            this.#failed = true;
          },
        )
        .finally(() => this.#inFlight.delete(ask));
      this.#inFlight.add(ask);
    }
    return Promise.all(this.#inFlight).then(() => undefined);
  }

  /** The signature of `digest` (32 bytes) from the next prepared entry; null when none is ready. */
  sign(digest: Uint8Array): string | null {
    if (this.#ready === 0) {
      this.counts.missed++;
      void this.fill();
      return null;
    }
    const held = this.#held[0];
    const i = held.next++;
    this.#ready--;
    if (held.next === held.chunk.count) this.#held.shift();
    if (this.#ready + this.#asked <= this.#target - this.#chunk) void this.fill();
    const signature = finishSignature(held.chunk, i, digest, this.#nonces);
    if (signature !== null) this.counts.prepared++;
    return signature;
  }

  /** Zeroes and drops every unused entry; later calls answer null. */
  close(): void {
    this.#closed = true;
    for (const held of this.#held.splice(0)) held.chunk.entries.fill(0);
    this.#ready = 0;
  }
}
