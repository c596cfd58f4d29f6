/**
 * keccak256 over bytes, for the attestation on every answer and every hash the scanners make.
 * hash-wasm's WebAssembly keccak: one call in and one out per hash, about 0.8 µs for a 32-byte
 * input and 2.2 µs for a 426-byte request body on the bench machine, against 1.7 and 3.4 µs for
 * the `keccak` package's native binding (four N-API calls per hash) and about 28 µs for the pure
 * JS keccak inside ethers. An answer needs four of them (docs/attestations.md §3).
 */
import { createKeccak } from 'hash-wasm';

const hasher = await createKeccak(256);

/** keccak256 (Ethereum's, padding 0x01) of `data`: 32 bytes. */
export function keccak256(data: Uint8Array): Buffer {
  // One hasher, re-initialised per hash: this function runs to completion, so no two hashes share it.
  hasher.init();
  hasher.update(data);
  // Copied into a pooled Buffer: the 32-byte digest is a typed array V8 keeps on its heap, and
  // reading its `.buffer` to wrap it would move it to a backing store of its own (about 0.6 µs,
  // more than the copy, and memory the collector then tracks apart).
  return Buffer.from(hasher.digest('binary'));
}

/** keccak256 of `data` written at `out[offset..offset+32)`, for a hash that is only part of a larger input. */
export function keccak256Into(data: Uint8Array, out: Uint8Array, offset: number): void {
  hasher.init();
  hasher.update(data);
  out.set(hasher.digest('binary'), offset);
}
