/**
 * The verdict signer (docs/attestations.md §1-3): holds the key, signs each answer's `Verdict`
 * (low s; nonces prepared ahead by the signing thread in the default `prepared` mode, RFC 6979
 * nonces by libsecp256k1 otherwise), writes the attestation's JSON with it, and describes itself
 * for /v1/capabilities.
 *
 * The key lives in a private field: it is not an enumerable property, so neither JSON, a log
 * line nor util.inspect of an Attester can show it.
 */
import { randomBytes } from 'node:crypto';
import { keccak256 } from '../crypto/keccak.js';
import { SECP256K1_N, loadNativeSecp256k1 } from '../crypto/secp256k1.js';
import { JSON_TEXT } from '../wire.js';
import { PreparedPool } from './prepared.js';
import { SignThread, type SignJob, type Signed } from './sign-thread.js';
import {
  DOMAIN_NAME,
  DOMAIN_VERSION,
  VERDICT_TYPES,
  ZERO32,
  actionHash,
  policyHashBytes,
  verdictDigest,
  type ActionFields,
  type VerdictFields,
  RISK_CODES,
  VERDICT_CODES,
} from './verdict.js';

const native = loadNativeSecp256k1();
// ethers' curve only where no prebuilt binding loads: it is a large module to start.
const ethers = native === null ? await import('ethers') : null;

/** What an answer carries as `attestation`. */
export interface Attestation {
  signer: string;
  signature: string;
  typed_data: {
    domain: { name: string; version: string; chainId: number };
    types: typeof VERDICT_TYPES;
    primaryType: 'Verdict';
    message: Record<keyof VerdictFields, string>;
  };
  /** JSON.stringify of the above, made with it (src/wire.ts). */
  readonly [JSON_TEXT]?: string;
}

/** The typed data's constant parts as JSON, the domain's per chain id. */
const TYPES_JSON = JSON.stringify(VERDICT_TYPES);
const domainJson = new Map<number, string>();
function domainText(chainId: number): string {
  let t = domainJson.get(chainId);
  if (t === undefined) {
    t = JSON.stringify({ name: DOMAIN_NAME, version: DOMAIN_VERSION, chainId });
    domainJson.set(chainId, t);
  }
  return t;
}

/** The part of an answer the signature covers. */
export interface Answer {
  verdict: 'proceed' | 'wait' | 'block';
  risk: 'low' | 'medium' | 'high';
  confidence: number;
  expires_in: number;
}

export interface AttestInput {
  /** A value unique to this answer; its keccak256 is the signed `id`. */
  answerId: string;
  /** The request body bytes as received. */
  body: Uint8Array;
  chainId: number;
  transaction?: ActionFields | null;
  /**
   * The hash of the policy version the answer was made under (0x + 64 hex, or 32 bytes); 32 zero
   * bytes when absent. A malformed one makes `attest` reject rather than sign without it.
   */
  policyHash?: string | Buffer | null;
  /** Unix seconds; now by default. */
  issuedAt?: number;
  /** keccak256(answerId), when the caller has made it already (a reservation's id). */
  idHash?: Buffer | null;
}

const hex = (b: Uint8Array): string =>
  `0x${(Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength)).toString('hex')}`;
/** The zero word's hex: the action hash of a decide and the policy hash of an answer under no policy. */
const ZERO32_HEX = hex(ZERO32);
const wordHex = (b: Buffer): string => (b === ZERO32 ? ZERO32_HEX : hex(b));

/** The hex of a policy hash's bytes, which policyHashBytes shares between the answers signing one version. */
const POLICY_HEX = new WeakMap<Buffer, string>();
function policyWordHex(b: Buffer): string {
  if (b === ZERO32) return ZERO32_HEX;
  let text = POLICY_HEX.get(b);
  if (text === undefined) {
    text = hex(b);
    POLICY_HEX.set(b, text);
  }
  return text;
}

/** EIP-55 checksummed address of a 20-byte value. */
function checksum(addr: Buffer): string {
  const lower = addr.toString('hex');
  const h = keccak256(Buffer.from(lower, 'ascii')).toString('hex');
  let out = '0x';
  for (let i = 0; i < 40; i++) out += Number.parseInt(h[i], 16) >= 8 ? lower[i].toUpperCase() : lower[i];
  return out;
}

export function isPrivateKey(key: string): boolean {
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) return false;
  const k = BigInt(key);
  return k > 0n && k < SECP256K1_N;
}

/** A fresh secp256k1 private key, 0x hex. */
export function newPrivateKey(): string {
  for (;;) {
    const k = `0x${randomBytes(32).toString('hex')}`;
    if (isPrivateKey(k)) return k;
  }
}

/** The checksummed address of a private key (0x hex). */
export function addressOf(privateKey: string): string {
  const key = Buffer.from(privateKey.slice(2), 'hex');
  const pub =
    native !== null
      ? Buffer.from(native.publicKeyCreate(key, false))
      : Buffer.from(ethers!.getBytes(new ethers!.SigningKey(privateKey).publicKey));
  return checksum(keccak256(pub.subarray(1)).subarray(12));
}

/**
 * Where answers are signed (docs/attestations.md, "Where the signature is made"): `prepared` on
 * the calling thread from a nonce the signing thread prepared ahead (src/attest/prepared.ts), the
 * usual way when none is ready; `inline` on the calling thread; `thread` always on the signing
 * thread (src/attest/sign-thread.ts); `auto` on the signing thread unless the batch it holds has
 * waited more than AUTO_LAG_MS, i.e. the thread is not getting a core, and then on the calling
 * thread until it catches up.
 */
export type SigningMode = 'prepared' | 'auto' | 'thread' | 'inline';
export const SIGNING_MODES: readonly SigningMode[] = ['prepared', 'auto', 'thread', 'inline'];

/**
 * A batch of eight takes the thread about half a millisecond; one held twice as long means the
 * thread is waiting for a core, and an answer signed here costs less than waiting behind it.
 */
export const AUTO_LAG_MS = 1;
/**
 * Once the thread has lagged, `auto` signs on the calling thread for this long before it tries the
 * thread again: each answer handed over costs a message each way and the thread's wake-up, which on
 * a machine busier than its cores is the lag itself, so going back at once would pay it again.
 */
export const AUTO_HOLD_MS = 250;

export interface AttesterOptions {
  /** Sign on a thread of its own (src/attest/sign-thread.ts); default: on the calling thread. */
  thread?: boolean;
  /** With `thread`: `thread` (default), `auto` or `prepared`; `inline` is the same as no thread. */
  mode?: SigningMode;
  /** `auto`'s bound on the thread's lag in ms (default AUTO_LAG_MS). */
  lagMs?: number;
  /** How long `auto` stays on the calling thread after a lag, in ms (default AUTO_HOLD_MS). */
  holdMs?: number;
}

export class Attester {
  readonly address: string;
  readonly #key: Buffer;
  readonly #thread: SignThread | null;
  /** `prepared`: the nonces prepared by the thread, which then signs nothing itself. */
  readonly #pool: PreparedPool | null;
  readonly #auto: boolean;
  readonly #lagMs: number;
  readonly #holdMs: number;
  /** `prepared`: the thread that prepares the nonces. */
  readonly #prepareThread: SignThread | null;
  /** performance.now() until which `auto` signs on the calling thread. */
  #hereUntil = 0;
  /**
   * Answers signed on the signing thread, on the calling thread the usual way, and on the calling
   * thread from a prepared nonce, so far.
   */
  readonly signedOn = { thread: 0, caller: 0, prepared: 0 };

  /**
   * Where answers are signed, for the start-up log: `prepared` with the nonces addon or in
   * JavaScript (docs/attestations.md, "Where the signature is made"), `thread`, `auto` or `inline`.
   */
  get signing(): string {
    if (this.#pool !== null) return this.#pool.native ? 'prepared (nonces addon)' : 'prepared (JavaScript)';
    if (this.#thread === null) return 'inline';
    return this.#auto ? 'auto' : 'thread';
  }

  constructor(privateKey: string, opts: AttesterOptions = {}) {
    if (!isPrivateKey(privateKey)) throw new Error('the attestation key is not a secp256k1 private key');
    this.#key = Buffer.from(privateKey.slice(2), 'hex');
    this.address = addressOf(privateKey);
    const threaded = opts.thread === true && opts.mode !== 'inline';
    const thread =
      threaded && native !== null ? new SignThread(privateKey, { background: opts.mode === 'prepared' }) : null;
    this.#pool = thread !== null && opts.mode === 'prepared' ? new PreparedPool((n) => thread.prepare(n)) : null;
    this.#thread = this.#pool === null ? thread : null;
    this.#prepareThread = this.#pool === null ? null : thread;
    this.#auto = opts.mode === 'auto';
    this.#lagMs = opts.lagMs ?? AUTO_LAG_MS;
    this.#holdMs = opts.holdMs ?? AUTO_HOLD_MS;
  }

  /** Whether this answer goes to the signing thread (`auto`: unless it lags, or lagged lately). */
  #onThread(thread: SignThread): boolean {
    if (!this.#auto) return true;
    const now = performance.now();
    if (now < this.#hereUntil) return false;
    if (thread.lagMs(now) <= this.#lagMs) return true;
    this.#hereUntil = now + this.#holdMs;
    return false;
  }

  /** The signature of `answer` for `input`, with the typed data it signs. */
  async attest(answer: Answer, input: AttestInput): Promise<Attestation> {
    const issuedAt = input.issuedAt ?? Math.floor(Date.now() / 1000);
    const verdict = VERDICT_CODES[answer.verdict];
    const risk = RISK_CODES[answer.risk];
    const confidenceBps = Math.round(answer.confidence * 10000);
    const expiresAt = issuedAt + answer.expires_in;
    const action = input.transaction ? actionHash(input.chainId, input.transaction) : ZERO32;
    const policy = policyHashBytes(input.policyHash);
    // On the signing thread the hashes are made there too; a thread that failed (it should not)
    // leaves all of it to this one: slower, same answer.
    const job = {
      chainId: input.chainId,
      verdict,
      risk,
      confidenceBps,
      issuedAt,
      expiresAt,
      actionHash: action,
      policyHash: policy,
    };
    const thread = this.#thread;
    const signed =
      thread?.alive && this.#onThread(thread)
        ? await thread
            .sign({ ...job, answerId: input.answerId, body: input.body })
            .then((s) => {
              this.signedOn.thread++;
              return s;
            })
            .catch(() => this.#signHere(job, input))
        : this.#signHere(job, input);
    const id = hex(signed.id);
    const requestHash = hex(signed.requestHash);
    const actionHex = wordHex(action);
    const policyHex = policyWordHex(policy);
    // Every value below is hex, a decimal integer or a fixed name: nothing to escape.
    const json =
      `{"signer":"${this.address}","signature":"${signed.signature}","typed_data":{"domain":${domainText(input.chainId)},` +
      `"types":${TYPES_JSON},"primaryType":"Verdict","message":{"id":"${id}","verdict":"${verdict}","risk":"${risk}",` +
      `"confidenceBps":"${confidenceBps}","requestHash":"${requestHash}","actionHash":"${actionHex}",` +
      `"policyHash":"${policyHex}","issuedAt":"${issuedAt}","expiresAt":"${expiresAt}"}}}`;
    const attestation: Attestation = {
      signer: this.address,
      signature: signed.signature,
      typed_data: {
        domain: { name: DOMAIN_NAME, version: DOMAIN_VERSION, chainId: input.chainId },
        types: VERDICT_TYPES,
        primaryType: 'Verdict',
        message: {
          id,
          verdict: String(verdict),
          risk: String(risk),
          confidenceBps: String(confidenceBps),
          requestHash,
          actionHash: actionHex,
          policyHash: policyHex,
          issuedAt: String(issuedAt),
          expiresAt: String(expiresAt),
        },
      },
    };
    Object.defineProperty(attestation, JSON_TEXT, { value: json });
    return attestation;
  }

  /** The hashes and the signature made on the calling thread. */
  #signHere(job: Omit<SignJob, 'answerId' | 'body'>, input: Pick<AttestInput, 'answerId' | 'body' | 'idHash'>): Signed {
    const fields: VerdictFields = {
      id: input.idHash ?? keccak256(Buffer.from(input.answerId, 'utf8')),
      verdict: job.verdict,
      risk: job.risk,
      confidenceBps: job.confidenceBps,
      requestHash: keccak256(input.body),
      actionHash: job.actionHash,
      policyHash: job.policyHash,
      issuedAt: job.issuedAt,
      expiresAt: job.expiresAt,
    };
    return {
      id: fields.id,
      requestHash: fields.requestHash,
      signature: this.#sign(verdictDigest(job.chainId, fields)),
    };
  }

  /** r ‖ s ‖ v (27 or 28), 0x hex: 65 bytes, s in the lower half of the order. */
  #sign(digest: Buffer): string {
    const prepared = this.#pool?.sign(digest) ?? null;
    if (prepared !== null) {
      this.signedOn.prepared++;
      return prepared;
    }
    this.signedOn.caller++;
    if (native === null) return ethers!.Signature.from(new ethers!.SigningKey(this.#key).sign(digest)).serialized;
    const { signature, recid } = native.ecdsaSign(digest, this.#key);
    return `${hex(signature)}${(27 + recid).toString(16)}`;
  }

  /**
   * Resolves once the signing thread (if any) is up. One that failed to start leaves the signing
   * to the calling thread: slower, same answers.
   */
  async ready(): Promise<void> {
    await this.#thread?.ready().catch(() => undefined);
    const preparer = this.#prepareThread;
    if (preparer !== null && this.#pool !== null) {
      const up = await preparer.ready().then(
        () => true,
        () => false,
      );
      // The pool is full before the first answer (about 65 to 120 ms of that thread, beside the other
      // threads' warm-up), so no chunk is being made while the first callers are answered.
      if (up) await this.#pool.fill();
    }
  }

  /** Stops the signing thread, if any, and zeroes the prepared nonces it left. */
  async close(): Promise<void> {
    this.#pool?.close();
    await this.#thread?.close();
    await this.#prepareThread?.close();
  }

  toJSON(): Record<string, string> {
    return { address: this.address };
  }
}
