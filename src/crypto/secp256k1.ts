/**
 * The native secp256k1 binding (libsecp256k1, through the `secp256k1` package's prebuilt
 * N-API addon), loaded without ethers so the paths that only sign never load the JS curve.
 * Null where no prebuilt binding loads; callers then use ethers' curve (same answers, slower).
 */
import { createRequire } from 'node:module';

/** The order of secp256k1's group. */
export const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

export interface NativeSecp256k1 {
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed?: boolean): Uint8Array;
  ecdsaSign(msg32: Uint8Array, seckey: Uint8Array): { signature: Uint8Array; recid: number };
  publicKeyCreate(seckey: Uint8Array, compressed?: boolean): Uint8Array;
}

export function loadNativeSecp256k1(): NativeSecp256k1 | null {
  try {
    // The binding alone: the package's default export falls back to a JS curve of its own.
    return createRequire(import.meta.url)('secp256k1/bindings') as NativeSecp256k1;
  } catch {
    return null;
  }
}
