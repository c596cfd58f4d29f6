/**
 * The verdict signer's thread (src/attest/sign-thread.ts): takes a batch of packed answers (see
 * packJob), makes each one's id, request hash and EIP-712 digest and signs the digest with
 * libsecp256k1 (RFC 6979 nonces, low s), and answers the batch with id ‖ requestHash ‖ r ‖ s ‖ v
 * per answer (v 27 or 28), in order. On a port of its own it prepares nonces for the answers'
 * thread (src/attest/prepared.ts). The key arrives once, in workerData, and never leaves.
 */
import { randomBytes } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { loadNativeSecp256k1 } from '../src/crypto/secp256k1.js';
import { type NativeNonces, loadNativeNonces } from '../src/crypto/nonces.js';
import { keccak256 } from '../src/crypto/keccak.js';
import { verdictDigest } from '../src/attest/verdict.js';
import { prepareNonces } from '../src/attest/prepared.js';
import { JOB_HEADER_BYTES, SIGNED_BYTES } from '../src/attest/sign-thread.js'; // the job layout: packJob

const native = loadNativeSecp256k1();
if (native === null) throw new Error('the native secp256k1 binding did not load');
const data = workerData as { key: string; prepared: MessagePort; background: boolean };
const key = Buffer.from(data.key.slice(2), 'hex');

// A thread that only prepares nonces runs on time no other thread wants (nice 19, on Linux where a
// thread has an id of its own): with the cores busy the pool runs dry and the answers' thread signs
// the usual way, rather than lose its core to work that only saves it time.
if (data.background) {
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19);
  } catch {
    // No /proc, or not Linux: the thread keeps the process's priority.
  }
}

// Prepared nonces (src/attest/prepared.ts): asked for by count, answered in order, the entries'
// buffer transferred. With the addon (src/crypto/nonces.ts), its context is made and blinded with
// fresh CSPRNG bytes on the first ask.
let nonces: NativeNonces | null | undefined;
data.prepared.on('message', (count: number) => {
  if (nonces === undefined) {
    nonces = loadNativeNonces();
    const seed = randomBytes(32);
    nonces?.randomize(seed);
    seed.fill(0);
  }
  const chunk = prepareNonces(native, key, Math.max(1, Math.min(4096, Math.floor(count))), nonces);
  data.prepared.postMessage(chunk, [chunk.entries.buffer as ArrayBuffer]);
});

parentPort!.on('message', (batch: ArrayBuffer | 'close') => {
  // Asked to end (SignThread.close): the thread leaves between two messages, never inside a call to
  // the binding. A thread terminated from outside while the binding builds a result aborts the
  // whole process (the addon's C++ error cannot be thrown into a stopping thread).
  if (batch === 'close') process.exit(0);
  const b = Buffer.from(batch);
  // One answer per job, written in place into the buffer that is transferred back.
  let jobs = 0;
  for (let at = 0; at < b.length; jobs++) at += JOB_HEADER_BYTES + b.readUInt32BE(at + 60) + b.readUInt32BE(at + 64);
  const back = new ArrayBuffer(jobs * SIGNED_BYTES);
  const outs = Buffer.from(back);
  for (let at = 0, n = 0; at < b.length; n++) {
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
    const out = n * SIGNED_BYTES;
    id.copy(outs, out);
    requestHash.copy(outs, out + 32);
    outs.set(signature, out + 64);
    outs[out + 128] = 27 + recid;
    at = idStart + idLen + bodyLen;
  }
  parentPort!.postMessage(back, [back]);
});
// Loaded and listening: the service starts serving only after this, so no answer waits for a boot.
parentPort!.postMessage('ready');
