/**
 * secp256k1 for the paid path: recovering a payment's signer and signing settlement transactions.
 * libsecp256k1 through the `secp256k1` package's prebuilt binding does a recovery in about 0.05 ms;
 * the pure-JS curve inside ethers takes about 1.6 ms on the same machine, on the main thread, for
 * every paid request. Where no prebuilt binding loads (a platform without one), ethers' curve is
 * used: same answers, slower. `SECP_BACKEND` says which one is in use.
 */
import { SigningKey, computeAddress, getBytes, hexlify, recoverAddress as jsRecoverAddress } from 'ethers';
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

/**
 * The address that signed `digest` (32 bytes, hex) with the 65-byte `signature` (r ‖ s ‖ v,
 * v 27 or 28), checksummed; throws when the signature recovers to no key.
 */
export function recoverSigner(digest: string, signature: string): string {
  if (native === null) return jsRecoverAddress(digest, signature);
  const bytes = getBytes(signature);
  if (bytes.length !== 65) throw new Error('a signature is 65 bytes');
  const v = bytes[64];
  if (v !== 27 && v !== 28) throw new Error('v must be 27 or 28');
  const pub = native.ecdsaRecover(bytes.subarray(0, 64), v - 27, getBytes(digest), false);
  return computeAddress(hexlify(pub));
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
