/**
 * The prepared-nonce addon (native/nonces, built by `npm ci` from the libsecp256k1 source the
 * `secp256k1` package ships): per nonce k, k·G with libsecp256k1's blinded constant-time comb, the
 * points made affine and the nonces inverted in batches, so a prepared entry costs about k·G alone;
 * and the signature finished from an entry without BigInt (src/attest/prepared.ts,
 * docs/attestations.md §3). Null where the addon was not built; callers then use the JavaScript
 * path, which makes the same entries.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** One entry: r ‖ k⁻¹ ‖ k⁻¹·r·d (32 bytes each, big-endian) ‖ the parity of k·G's y (1 byte). */
export const ENTRY_BYTES = 97;

export interface NativeNonces {
  /** Blinds this thread's context with 32 bytes of the CSPRNG; prepare() refuses to run before. */
  randomize(seed: Uint8Array): void;
  /**
   * Entries for the 32-byte private key `key`, one per 32-byte nonce in `candidates` (those not in
   * 1..n-1 are skipped), written to `out` in order; returns how many.
   */
  prepare(key: Uint8Array, candidates: Uint8Array, out: Uint8Array): number;
  /** The signature of `digest` from entry `index` of `entries` (0x r ‖ s ‖ v, low s), null if s is 0; zeroes the entry. */
  finish(entries: Uint8Array, index: number, digest: Uint8Array): string | null;
  readonly entryBytes: number;
}

/** Where the build leaves it: from dist/src/crypto/ (the running service) or src/crypto/. */
const PLACES = ['../../../native/nonces/build/Release/nonces.node', '../../native/nonces/build/Release/nonces.node'];

let loaded: NativeNonces | null | undefined;

export function loadNativeNonces(): NativeNonces | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  const require = createRequire(import.meta.url);
  for (const place of PLACES) {
    const file = fileURLToPath(new URL(place, import.meta.url));
    if (!existsSync(file)) continue;
    try {
      const addon = require(file) as NativeNonces;
      if (addon.entryBytes === ENTRY_BYTES) loaded = addon;
    } catch {
      // Built for another node, or damaged: the JavaScript path.
    }
    break;
  }
  return loaded;
}
