/**
 * The settler's transactions as bytes: an EIP-1559 (type 2) transaction, or an EIP-155 legacy one
 * where the node gives no EIP-1559 fees, encoded in RLP for its signing hash and for
 * `eth_sendRawTransaction`. Settlement builds one per paid call; with ethers' `Transaction` (whose
 * fields pass through hex text several times) the build, hashes and signature took about 0.58 ms of
 * the event loop, with these encoders about 0.11 ms, most of it the signature (docs/x402.md §5).
 * Tests compare both encodings and hashes with ethers' and viem's over random transactions.
 */
import { keccak256 } from '../../crypto/keccak.js';

export interface RawTxFields {
  chainId: bigint;
  nonce: number;
  gasLimit: bigint;
  /** 20 bytes, 0x-prefixed hex. */
  to: string;
  value: bigint;
  /** 0x-prefixed hex, an even number of digits. */
  data: string;
  /** EIP-1559 fees, or a legacy gas price. */
  fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint };
}

/** A signature over the signing hash: r and s as 32 bytes each, and y's parity. */
export interface RawTxSignature {
  r: Uint8Array;
  s: Uint8Array;
  yParity: 0 | 1;
}

const EMPTY = new Uint8Array(0);

/** A non-negative integer as RLP wants it: big-endian, no leading zero bytes (zero is empty). */
function uintBytes(n: bigint): Uint8Array {
  if (n < 0n) throw new RangeError('a transaction field is never negative');
  if (n === 0n) return EMPTY;
  let hex = n.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  return Buffer.from(hex, 'hex');
}

/** 32 bytes read as an integer, then minimal (a signature's r and s). */
function trimmed(b: Uint8Array): Uint8Array {
  let i = 0;
  while (i < b.length && b[i] === 0) i++;
  return b.subarray(i);
}

function hexBytes(hex: string, what: string, length?: number): Uint8Array {
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new TypeError(`${what} must be 0x-prefixed hex bytes`);
  const b = Buffer.from(hex.slice(2), 'hex');
  if (length !== undefined && b.length !== length) throw new TypeError(`${what} must be ${length} bytes`);
  return b;
}

/** The length prefix of a string (0x80) or a list (0xc0) of `len` bytes. */
function prefix(len: number, offset: 0x80 | 0xc0): Uint8Array {
  if (len < 56) return Uint8Array.of(offset + len);
  const lenBytes = uintBytes(BigInt(len));
  const out = new Uint8Array(1 + lenBytes.length);
  out[0] = offset + 55 + lenBytes.length;
  out.set(lenBytes, 1);
  return out;
}

function encodeString(b: Uint8Array): Uint8Array[] {
  if (b.length === 1 && b[0] < 0x80) return [b];
  return [prefix(b.length, 0x80), b];
}

/** RLP of a flat list of byte strings, with empty lists among them (an access list). */
function encodeList(items: Array<Uint8Array | 'emptyList'>, head: number | null): Buffer {
  const parts: Uint8Array[] = [];
  for (const item of items) {
    if (item === 'emptyList') parts.push(Uint8Array.of(0xc0));
    else parts.push(...encodeString(item));
  }
  let len = 0;
  for (const p of parts) len += p.length;
  const pre = prefix(len, 0xc0);
  return Buffer.concat(head === null ? [pre, ...parts] : [Uint8Array.of(head), pre, ...parts]);
}

function fieldsOf(tx: RawTxFields): { items: Array<Uint8Array | 'emptyList'>; typed: boolean } {
  if (!Number.isSafeInteger(tx.nonce) || tx.nonce < 0) throw new RangeError('the nonce must be a safe integer');
  const to = hexBytes(tx.to, 'to', 20);
  const data = hexBytes(tx.data, 'data');
  const nonce = uintBytes(BigInt(tx.nonce));
  if ('maxFeePerGas' in tx.fees) {
    return {
      typed: true,
      items: [
        uintBytes(tx.chainId),
        nonce,
        uintBytes(tx.fees.maxPriorityFeePerGas),
        uintBytes(tx.fees.maxFeePerGas),
        uintBytes(tx.gasLimit),
        to,
        uintBytes(tx.value),
        data,
        'emptyList',
      ],
    };
  }
  return {
    typed: false,
    items: [nonce, uintBytes(tx.fees.gasPrice), uintBytes(tx.gasLimit), to, uintBytes(tx.value), data],
  };
}

/** The hash the settler signs: keccak256 of the unsigned encoding (EIP-1559, or EIP-155 for legacy). */
export function signingHash(tx: RawTxFields): Buffer {
  const { items, typed } = fieldsOf(tx);
  if (typed) return keccak256(encodeList(items, 0x02));
  return keccak256(encodeList([...items, uintBytes(tx.chainId), EMPTY, EMPTY], null));
}

/** The signed transaction as `eth_sendRawTransaction` takes it, 0x-prefixed hex. */
export function signedRawTx(tx: RawTxFields, sig: RawTxSignature): string {
  if (sig.r.length !== 32 || sig.s.length !== 32) throw new TypeError('r and s are 32 bytes each');
  const { items, typed } = fieldsOf(tx);
  const r = trimmed(sig.r);
  const s = trimmed(sig.s);
  const bytes = typed
    ? encodeList([...items, uintBytes(BigInt(sig.yParity)), r, s], 0x02)
    : encodeList([...items, uintBytes(tx.chainId * 2n + 35n + BigInt(sig.yParity)), r, s], null);
  return `0x${bytes.toString('hex')}`;
}
