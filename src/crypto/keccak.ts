/**
 * keccak256 over bytes, for the attestation on every answer. The `keccak` package's prebuilt
 * N-API binding hashes a 400-byte body in about 3 µs; the pure-JS keccak inside ethers takes about
 * 28 µs on the same machine, and an answer needs four hashes. Where no prebuilt binding loads,
 * ethers' keccak is used: same digests, slower. `KECCAK_BACKEND` says which one is in use.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

interface KeccakState {
  initialize(rate: number, capacity: number, delimitedSuffix: null, hashBitLength: number): void;
  absorb(data: Uint8Array): void;
  absorbLastFewBits(bits: number): void;
  squeeze(length: number): Buffer;
}
type KeccakStateCtor = new () => KeccakState;

function loadNative(): KeccakStateCtor | null {
  try {
    const pkg = createRequire(import.meta.url).resolve('keccak/package.json');
    // The binding alone, loaded as `keccak/bindings` loads it, without the stream class around it.
    const ctor = createRequire(pkg)('node-gyp-build')(dirname(pkg)) as unknown;
    return typeof ctor === 'function' ? (ctor as KeccakStateCtor) : null;
  } catch {
    return null;
  }
}

const Native = loadNative();
// ethers loads only where the binding does not: it is a large module to start.
const ethers = Native === null ? await import('ethers') : null;

let state: KeccakState | null = null;

export const KECCAK_BACKEND: 'native' | 'js' = Native === null ? 'js' : 'native';

/** keccak256 (Ethereum's, padding 0x01) of `data`: 32 bytes. */
export function keccak256(data: Uint8Array): Buffer {
  if (Native === null) return Buffer.from(ethers!.getBytes(ethers!.keccak256(data)));
  // One state, re-initialised per hash: this function runs to completion, so no two hashes share it.
  if (state === null) state = new Native();
  const k = state;
  k.initialize(1088, 512, null, 256);
  k.absorb(data);
  k.absorbLastFewBits(0x01);
  return k.squeeze(32);
}
