/**
 * A bare signature and its hashes, timed in the bench's own process in the same run as the signed
 * and unsigned cached decides (bench/README.md, "Signing"): what signing an answer cannot cost
 * less than. The same primitives as the service (src/crypto): keccak256 of the answer id, of the
 * request body, of the 320-byte struct and of the 66-byte digest input, then one libsecp256k1
 * signature.
 */
import { randomUUID } from 'node:crypto';
import { keccak256 } from '../src/crypto/keccak.js';
import { loadNativeSecp256k1 } from '../src/crypto/secp256k1.js';
import { CACHED_DECIDE } from './scenarios.js';

export interface BareSignature {
  /** CPU µs per signature, and per answer's four hashes. */
  signUs: number;
  hashesUs: number;
}

export function timeBareSignature(iterations = 4000): BareSignature | null {
  const native = loadNativeSecp256k1();
  if (native === null) return null;
  const key = Buffer.alloc(32, 0x42);
  const body = Buffer.from(CACHED_DECIDE, 'utf8');
  const ids = Array.from({ length: iterations }, () => Buffer.from(randomUUID(), 'utf8'));
  const struct = Buffer.alloc(320, 1);
  const digestIn = Buffer.alloc(66, 2);
  const digests = ids.map((id) => keccak256(id));
  const cpu = (): number => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  let hashes = Number.POSITIVE_INFINITY;
  let sign = Number.POSITIVE_INFINITY;
  // The best of three passes of each: the driver shares the machine with the servers it measures.
  for (let pass = 0; pass < 3; pass++) {
    let t = cpu();
    for (let i = 0; i < iterations; i++) {
      keccak256(ids[i]);
      keccak256(body);
      struct[0] = i & 0xff;
      keccak256(struct);
      digestIn[2] = i & 0xff;
      keccak256(digestIn);
    }
    hashes = Math.min(hashes, (cpu() - t) / iterations);
    t = cpu();
    for (let i = 0; i < iterations; i++) native.ecdsaSign(digests[i], key);
    sign = Math.min(sign, (cpu() - t) / iterations);
  }
  return { signUs: Math.round(sign * 10) / 10, hashesUs: Math.round(hashes * 10) / 10 };
}
