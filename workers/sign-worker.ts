/**
 * The verdict signer's thread (src/attest/sign-thread.ts): takes a batch of packed answers (see
 * packJob), makes each one's id, request hash and EIP-712 digest and signs the digest with
 * libsecp256k1 (RFC 6979 nonces, low s), and answers the batch with id ‖ requestHash ‖ r ‖ s ‖ v
 * per answer (v 27 or 28), in order. The key arrives once, in workerData, and never leaves.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadNativeSecp256k1 } from '../src/crypto/secp256k1.js';
import { keccak256 } from '../src/crypto/keccak.js';
import { verdictDigest } from '../src/attest/verdict.js';
import { JOB_HEADER_BYTES, SIGNED_BYTES } from '../src/attest/sign-thread.js'; // the job layout: packJob

const native = loadNativeSecp256k1();
if (native === null) throw new Error('the native secp256k1 binding did not load');
const key = Buffer.from((workerData as { key: string }).key.slice(2), 'hex');

parentPort!.on('message', (batch: ArrayBuffer) => {
  const b = Buffer.from(batch);
  const outs: Buffer[] = [];
  for (let at = 0; at < b.length; ) {
    const idLen = b.readUInt32BE(at + 60);
    const bodyLen = b.readUInt32BE(at + 64);
    const idStart = at + JOB_HEADER_BYTES;
    const id = keccak256(b.subarray(idStart, idStart + idLen));
    const requestHash = keccak256(b.subarray(idStart + idLen, idStart + idLen + bodyLen));
    const digest = verdictDigest(b.readDoubleBE(at), {
      id,
      verdict: b[at + 8],
      risk: b[at + 9],
      confidenceBps: b.readUInt16BE(at + 10),
      requestHash,
      actionHash: b.subarray(at + 28, at + 60),
      policyHash: b.subarray(at + 68, at + 100),
      issuedAt: b.readDoubleBE(at + 12),
      expiresAt: b.readDoubleBE(at + 20),
    });
    const { signature, recid } = native.ecdsaSign(digest, key);
    const out = Buffer.allocUnsafe(SIGNED_BYTES);
    id.copy(out, 0);
    requestHash.copy(out, 32);
    out.set(signature, 64);
    out[128] = 27 + recid;
    outs.push(out);
    at = idStart + idLen + bodyLen;
  }
  const all = Buffer.concat(outs);
  const buf = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  parentPort!.postMessage(buf, [buf]);
});
// Loaded and listening: the service starts serving only after this, so no answer waits for a boot.
parentPort!.postMessage('ready');
