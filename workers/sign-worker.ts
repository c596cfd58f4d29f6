/**
 * The verdict signer's thread (src/attest/sign-thread.ts): signs batches of 32-byte digests with
 * libsecp256k1 (RFC 6979 nonces, low s) and answers each batch with its 65-byte signatures
 * (r ‖ s ‖ v, v 27 or 28), in order. The key arrives once, in workerData, and never leaves.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadNativeSecp256k1 } from '../src/crypto/secp256k1.js';

const native = loadNativeSecp256k1();
if (native === null) throw new Error('the native secp256k1 binding did not load');
const key = Buffer.from((workerData as { key: string }).key.slice(2), 'hex');

parentPort!.on('message', (digests: ArrayBuffer) => {
  const n = digests.byteLength / 32;
  const out = new Uint8Array(n * 65);
  for (let i = 0; i < n; i++) {
    const { signature, recid } = native.ecdsaSign(new Uint8Array(digests, i * 32, 32), key);
    out.set(signature, i * 65);
    out[i * 65 + 64] = 27 + recid;
  }
  parentPort!.postMessage(out.buffer, [out.buffer]);
});
// Loaded and listening: the service starts serving only after this, so no answer waits for a boot.
parentPort!.postMessage('ready');
