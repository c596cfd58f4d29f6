/**
 * The signed verdict (docs/attestations.md §1): the EIP-712 domain and the `Verdict` type, and
 * their encoding done by hand. The type hashes and each chain's domain separator are computed
 * once; an answer costs one 320-byte struct hash, one 66-byte digest hash and one signature.
 */
import { keccak256, keccak256Into } from '../crypto/keccak.js';

export const DOMAIN_NAME = 'Preflight';
/** Version 2 signs the policy hash (docs/attestations.md §1); version 1 had no `policyHash`. */
export const DOMAIN_VERSION = '2';

/** The `types` of the typed data, as eth_signTypedData_v4 and the verifiers take them. */
export const VERDICT_TYPES = Object.freeze({
  Verdict: Object.freeze([
    { name: 'id', type: 'bytes32' },
    { name: 'verdict', type: 'uint8' },
    { name: 'risk', type: 'uint8' },
    { name: 'confidenceBps', type: 'uint16' },
    { name: 'requestHash', type: 'bytes32' },
    { name: 'actionHash', type: 'bytes32' },
    { name: 'policyHash', type: 'bytes32' },
    { name: 'issuedAt', type: 'uint64' },
    { name: 'expiresAt', type: 'uint64' },
  ]),
});

export const VERDICT_TYPE =
  'Verdict(bytes32 id,uint8 verdict,uint8 risk,uint16 confidenceBps,bytes32 requestHash,bytes32 actionHash,bytes32 policyHash,uint64 issuedAt,uint64 expiresAt)';
export const DOMAIN_TYPE = 'EIP712Domain(string name,string version,uint256 chainId)';

export const VERDICT_CODES = Object.freeze({ proceed: 0, wait: 1, block: 2 } as const);
export const RISK_CODES = Object.freeze({ low: 0, medium: 1, high: 2 } as const);

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');
const VERDICT_TYPEHASH = keccak256(utf8(VERDICT_TYPE));
const DOMAIN_TYPEHASH = keccak256(utf8(DOMAIN_TYPE));
const NAME_HASH = keccak256(utf8(DOMAIN_NAME));
const VERSION_HASH = keccak256(utf8(DOMAIN_VERSION));

export const ZERO32 = Buffer.alloc(32);

/** A non-negative integer below 2^256 as a 32-byte big-endian word at `out[off..off+32)`. */
function writeUint(out: Buffer, off: number, n: number | bigint): void {
  out.fill(0, off, off + 32);
  if (typeof n === 'number' && n <= Number.MAX_SAFE_INTEGER) {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`not a uint64 this encoder takes: ${n}`);
    // Byte by byte: writeUInt32BE validates its arguments on every call, which costs more here.
    const hi = Math.floor(n / 2 ** 32);
    const lo = n % 2 ** 32;
    out[off + 24] = hi >>> 24;
    out[off + 25] = (hi >>> 16) & 0xff;
    out[off + 26] = (hi >>> 8) & 0xff;
    out[off + 27] = hi & 0xff;
    out[off + 28] = lo >>> 24;
    out[off + 29] = (lo >>> 16) & 0xff;
    out[off + 30] = (lo >>> 8) & 0xff;
    out[off + 31] = lo & 0xff;
    return;
  }
  let v = BigInt(n);
  for (let i = off + 31; i >= off && v > 0n; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
}

const separators = new Map<number, Buffer>();

/** keccak256(abi.encode(typeHash(EIP712Domain), keccak("Preflight"), keccak("2"), chainId)), once per chain. */
export function domainSeparator(chainId: number): Buffer {
  let sep = separators.get(chainId);
  if (sep === undefined) {
    const b = Buffer.alloc(128);
    DOMAIN_TYPEHASH.copy(b, 0);
    NAME_HASH.copy(b, 32);
    VERSION_HASH.copy(b, 64);
    writeUint(b, 96, chainId);
    sep = keccak256(b);
    separators.set(chainId, sep);
  }
  return sep;
}

export interface VerdictFields {
  id: Buffer;
  verdict: number;
  risk: number;
  confidenceBps: number;
  requestHash: Buffer;
  actionHash: Buffer;
  /** The policy version's hash the answer was made under; 32 zero bytes without a policy. */
  policyHash: Buffer;
  issuedAt: number;
  expiresAt: number;
}

/** The EIP-712 digest: keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(Verdict)). */
export function verdictDigest(chainId: number, v: VerdictFields): Buffer {
  const s = Buffer.allocUnsafe(320);
  VERDICT_TYPEHASH.copy(s, 0);
  v.id.copy(s, 32);
  writeUint(s, 64, v.verdict);
  writeUint(s, 96, v.risk);
  writeUint(s, 128, v.confidenceBps);
  v.requestHash.copy(s, 160);
  v.actionHash.copy(s, 192);
  v.policyHash.copy(s, 224);
  writeUint(s, 256, v.issuedAt);
  writeUint(s, 288, v.expiresAt);
  const d = Buffer.allocUnsafe(66);
  d[0] = 0x19;
  d[1] = 0x01;
  domainSeparator(chainId).copy(d, 2);
  keccak256Into(s, d, 34);
  return keccak256(d);
}

/** The transaction an answer is about (a GuardRequest's `transaction`), as the action hash reads it. */
export interface ActionFields {
  from: string;
  to?: string | null;
  value?: string | null;
  data?: string | null;
}

function writeAddress(out: Buffer, off: number, address: string | null | undefined): void {
  out.fill(0, off, off + 32);
  if (address) out.write(address.slice(2), off + 12, 20, 'hex');
}

/**
 * keccak256(abi.encode(uint256 chainId, address from, address to, uint256 value, bytes32 keccak256(data))),
 * `to` the zero address for a deployment, `value` decimal or 0x hex (default 0), `data` 0x hex (default empty).
 */
export function actionHash(chainId: number, tx: ActionFields): Buffer {
  const b = Buffer.alloc(160);
  writeUint(b, 0, chainId);
  writeAddress(b, 32, tx.from);
  writeAddress(b, 64, tx.to);
  const value = tx.value === undefined || tx.value === null || tx.value === '' ? 0n : BigInt(tx.value);
  writeUint(b, 96, value);
  const data = tx.data && tx.data.length > 2 ? Buffer.from(tx.data.slice(2), 'hex') : Buffer.alloc(0);
  keccak256(data).copy(b, 128);
  return keccak256(b);
}

/**
 * Policy hashes already read, by their text. Every answer under a policy version signs that
 * version's hash, the same string each time; the regular expression and the hex decoding cost more
 * than the rest of the policy's part of the signature. The buffers are shared: callers copy them
 * and never write to them.
 */
const POLICY_HASHES = new Map<string, Buffer>();
const POLICY_HASHES_MAX = 1024;

/**
 * The signed `policyHash` of an answer: the policy version's hash as 0x + 64 hex digits or 32
 * bytes, 32 zero bytes when there is none. Anything else throws: a hash that cannot be signed as
 * given must not be signed as zero, which would free the answer from the policy it was made under.
 * A string's bytes are shared with every other answer signing the same string (read only).
 */
export function policyHashBytes(hash: string | Uint8Array | null | undefined): Buffer {
  if (hash === undefined || hash === null) return ZERO32;
  if (typeof hash === 'string') {
    let bytes = POLICY_HASHES.get(hash);
    if (bytes === undefined) {
      if (!/^0x[0-9a-fA-F]{64}$/.test(hash)) throw new Error('a policy hash is 0x and 64 hex digits');
      bytes = Buffer.from(hash.slice(2), 'hex');
      if (POLICY_HASHES.size >= POLICY_HASHES_MAX) POLICY_HASHES.clear();
      POLICY_HASHES.set(hash, bytes);
    }
    return bytes;
  }
  if (hash.byteLength !== 32) throw new Error('a policy hash is 32 bytes');
  return Buffer.from(hash.buffer, hash.byteOffset, 32);
}
