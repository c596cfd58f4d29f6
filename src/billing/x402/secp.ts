/**
 * secp256k1 for the paid path: recovering a payment's signer and signing settlement transactions.
 * libsecp256k1 through the `secp256k1` package's prebuilt binding does a recovery in about 0.05 ms;
 * the pure-JS curve inside ethers takes about 1.6 ms on the same machine, on the main thread, for
 * every paid request. Where no prebuilt binding loads (a platform without one), ethers' curve is
 * used: same answers, slower. `SECP_BACKEND` says which one is in use.
 */
import { SigningKey, getBytes, hexlify, recoverAddress as jsRecoverAddress } from 'ethers';
import { keccak256 } from '../../crypto/keccak.js';
// ethers' hashes in this thread through the WebAssembly keccak (src/crypto/ethers-keccak.ts).
import '../../crypto/ethers-keccak.js';
import { loadNativeSecp256k1 as loadNative } from '../../crypto/secp256k1.js';
import type { RawTxSignature } from './raw-tx.js';

let native = loadNative();

export const SECP_BACKEND: 'native' | 'js' = native === null ? 'js' : 'native';

/** Tests: run the same calls on ethers' curve, or back on the binding. */
export function useJsCurve(on: boolean): void {
  native = on ? null : loadNative();
}

/** `n` bytes from 0x-prefixed hex, refused unless it is exactly that. */
function hexBytes(hex: string, n: number, what: string): Buffer {
  if (hex.length !== 2 + 2 * n || !/^0x[0-9a-fA-F]*$/.test(hex)) throw new Error(`${what} is ${n} bytes of hex`);
  return Buffer.from(hex.slice(2), 'hex');
}

/**
 * The address (lower-case) that signed `digest` (32 bytes, hex) with the 65-byte `signature`
 * (r ‖ s ‖ v, v 27 or 28); throws when the signature recovers to no key. The address is the last
 * 20 bytes of the keccak256 of the recovered public key, hashed by the WebAssembly keccak.
 */
export function recoverSigner(digest: string, signature: string): string {
  if (native === null) return jsRecoverAddress(digest, signature).toLowerCase();
  const bytes = hexBytes(signature, 65, 'a signature');
  const v = bytes[64];
  if (v !== 27 && v !== 28) throw new Error('v must be 27 or 28');
  const pub = native.ecdsaRecover(bytes.subarray(0, 64), v - 27, hexBytes(digest, 32, 'a digest'), false);
  return `0x${keccak256(pub.subarray(1)).subarray(12).toString('hex')}`;
}

/**
 * Signs a 32-byte digest with a private key, as ethers' SigningKey.sign does (RFC 6979, low s): r
 * and s as 32 bytes each and y's parity, for a settlement transaction (raw-tx.ts).
 */
export function signDigestBytes(digest: Uint8Array, privateKey: Uint8Array): RawTxSignature {
  if (native === null) {
    const sig = new SigningKey(hexlify(privateKey)).sign(hexlify(digest));
    return { r: getBytes(sig.r), s: getBytes(sig.s), yParity: sig.yParity };
  }
  const { signature, recid } = native.ecdsaSign(digest, privateKey);
  return { r: signature.subarray(0, 32), s: signature.subarray(32, 64), yParity: recid === 1 ? 1 : 0 };
}
