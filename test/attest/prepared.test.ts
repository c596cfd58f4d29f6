/**
 * Signatures from prepared nonces (src/attest/prepared.ts): each one is checked by ethers' and
 * viem's recovery (neither shares code with the signer), every nonce is used once, s is in the lower
 * half of the order, and an empty pool, a closed one or a failed thread fall back to the usual
 * signature rather than wait or fail.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SigningKey, Wallet, verifyTypedData as ethersVerifyTypedData } from 'ethers';
import { recoverAddress, verifyTypedData, type Hex } from 'viem';
import { Attester } from '../../src/attest/attester.js';
import { PreparedPool, finishSignature, prepareNonces } from '../../src/attest/prepared.js';
import { SignThread } from '../../src/attest/sign-thread.js';
import { SECP256K1_N, loadNativeSecp256k1 } from '../../src/crypto/secp256k1.js';
import { ENTRY_BYTES, loadNativeNonces } from '../../src/crypto/nonces.js';

const key = `0x${randomBytes(32).toString('hex')}`;
const wallet = new Wallet(key);
const native = loadNativeSecp256k1();

const rsv = (sig: string) => ({
  r: BigInt(`0x${sig.slice(2, 66)}`),
  s: BigInt(`0x${sig.slice(66, 130)}`),
  v: Number.parseInt(sig.slice(130), 16),
});

const nonces = loadNativeNonces();
if (nonces !== null) nonces.randomize(randomBytes(32));

t.test(
  'the nonces addon is built (npm ci builds it; required in CI)',
  {
    skip: process.env.CI !== 'true' && nonces === null ? 'not built here: the JavaScript path is tested alone' : false,
  },
  async (t) => {
    t.not(nonces, null, 'native/nonces/build/Release/nonces.node loads');
  },
);

// Entries made and finished each way, and across: the two implementations write the same entries.
const ways = [
  { prepare: null, finish: null, name: 'prepared and finished in JavaScript' },
  { prepare: nonces, finish: nonces, name: 'prepared and finished by the addon' },
  { prepare: nonces, finish: null, name: 'prepared by the addon, finished in JavaScript' },
  { prepare: null, finish: nonces, name: 'prepared in JavaScript, finished by the addon' },
];
for (const way of ways) {
  const skip = native === null || ((way.prepare !== null || way.finish !== null) && nonces === null);
  t.test(`${way.name}: signatures that ethers and viem recover to the key`, { skip }, async (t) => {
    const count = 300;
    const chunk = prepareNonces(native!, Buffer.from(key.slice(2), 'hex'), count, way.prepare);
    t.equal(chunk.count, count);
    t.equal(chunk.entries.byteLength, count * ENTRY_BYTES);
    const vs = new Set<number>();
    const rs = new Set<string>();
    for (let i = 0; i < count; i++) {
      const digest = randomBytes(32);
      const sig = finishSignature(chunk, i, digest, way.finish);
      if (sig === null) throw new Error('no signature');
      t.match(sig, /^0x[0-9a-f]{128}(1b|1c)$/, `#${i}: r ‖ s ‖ v, v 27 or 28`);
      const { r, s, v } = rsv(sig);
      vs.add(v);
      rs.add(sig.slice(2, 66));
      t.ok(r > 0n && r < SECP256K1_N && s > 0n && s <= SECP256K1_N >> 1n, `#${i}: r in range, s in the lower half`);
      t.equal(SigningKey.recoverPublicKey(digest, sig), wallet.signingKey.publicKey, `#${i}: ethers recovers the key`);
      t.equal(await recoverAddress({ hash: `0x${digest.toString('hex')}`, signature: sig as Hex }), wallet.address);
      const entry = chunk.entries.subarray(i * ENTRY_BYTES, (i + 1) * ENTRY_BYTES);
      if (!entry.every((b) => b === 0)) t.fail(`#${i}: the entry is zeroed once used`);
    }
    t.equal(rs.size, count, 'a nonce of its own for each');
    t.same([...vs].sort(), [27, 28], 'both recovery ids, with and without s negated');
  });
}

t.test('the addon refuses what it cannot use', { skip: nonces === null }, async (t) => {
  const key32 = Buffer.from(key.slice(2), 'hex');
  const out = new Uint8Array(ENTRY_BYTES * 2);
  t.throws(() => nonces!.prepare(key32.subarray(0, 31), randomBytes(64), out), /32 bytes/, 'a short key');
  t.throws(() => nonces!.prepare(Buffer.alloc(32), randomBytes(64), out), /not a valid/, 'the zero key');
  t.throws(() => nonces!.prepare(Buffer.alloc(32, 0xff), randomBytes(64), out), /not a valid/, 'a key ≥ n');
  t.throws(() => nonces!.prepare(key32, randomBytes(65), out), /multiple of 32/, 'a ragged candidate list');
  t.throws(() => nonces!.prepare(key32, randomBytes(96), out), /an entry per candidate/, 'too little room');
  t.throws(() => nonces!.finish(out, 2, randomBytes(32)), /no such entry/, 'an index past the end');
  t.throws(() => nonces!.finish(out, 0, randomBytes(31)), /32 bytes/, 'a short digest');
  // Candidates outside 1..n-1 are skipped, never used: 0, n and 2²⁵⁶-1 around one good nonce.
  const n = Buffer.from(SECP256K1_N.toString(16), 'hex');
  const candidates = Buffer.concat([Buffer.alloc(32), n, randomBytes(32), Buffer.alloc(32, 0xff)]);
  const entries = new Uint8Array(ENTRY_BYTES * 4);
  t.equal(nonces!.prepare(key32, candidates, entries), 1, 'one entry from four candidates');
  const digest = randomBytes(32);
  const sig = nonces!.finish(entries, 0, digest);
  t.equal(SigningKey.recoverPublicKey(digest, sig!), wallet.signingKey.publicKey);
  t.ok(
    entries.every((b) => b === 0),
    'nothing written past it',
  );
});

t.test('the prepared signer: verified answers, one nonce per answer, same typed data as inline', async (t) => {
  const prepared = new Attester(key, { thread: true, mode: 'prepared' });
  const inline = new Attester(key);
  t.teardown(() => prepared.close());
  await prepared.ready();
  const rs = new Set<string>();
  const n = 1500;
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      prepared.attest(
        { verdict: (['proceed', 'wait', 'block'] as const)[i % 3], risk: 'low', confidence: 0.9, expires_in: 60 },
        {
          answerId: `prepared-${i}`,
          body: randomBytes(i % 500),
          chainId: [8453, 1, 0][i % 3],
          issuedAt: 1_800_000_000 + i,
          policyHash: i % 2 ? `0x${randomBytes(32).toString('hex')}` : null,
        },
      ),
    ),
  );
  for (let i = 0; i < n; i++) {
    const a = answers[i];
    rs.add(a.signature.slice(2, 66));
    if (i % 25 !== 0) continue;
    const { domain, types, message } = a.typed_data;
    t.equal(
      ethersVerifyTypedData(domain, { Verdict: [...types.Verdict] }, message, a.signature),
      wallet.address,
      `#${i}: ethers recovers the signer`,
    );
    t.ok(
      await verifyTypedData({ address: wallet.address as Hex, ...a.typed_data, signature: a.signature as Hex }),
      `#${i}: viem verifies it`,
    );
  }
  t.equal(rs.size, n, 'every answer has an r of its own: no nonce used twice');
  t.ok(prepared.signedOn.prepared > 0, `${prepared.signedOn.prepared} from prepared nonces`);
  t.equal(prepared.signedOn.prepared + prepared.signedOn.caller, n, 'the rest the usual way, none lost');
  t.equal(prepared.signedOn.thread, 0, 'the thread signs nothing itself');
  // The message is the same whichever way the signature is made; only the signature differs.
  const input = { answerId: 'same', body: Buffer.from('{"a":1}'), chainId: 8453, issuedAt: 1_800_000_000 };
  const answer = { verdict: 'proceed', risk: 'low', confidence: 1, expires_in: 30 } as const;
  const p = await prepared.attest(answer, input);
  const q = await inline.attest(answer, input);
  t.same(p.typed_data, q.typed_data);
  t.equal(p.signer, q.signer);
  t.equal(JSON.stringify(p), JSON.stringify({ ...p }), 'its JSON is that of its fields');
});

t.test('an empty pool answers null at once, and the pool refills from the thread', async (t) => {
  const thread = new SignThread(key, { background: true });
  t.teardown(() => thread.close());
  await thread.ready();
  const pool = new PreparedPool((n) => thread.prepare(n), { chunk: 4, target: 8 });
  t.equal(pool.sign(randomBytes(32)), null, 'nothing prepared yet: null, no wait');
  t.same(pool.counts, { prepared: 0, missed: 1 });
  await pool.fill();
  t.equal(pool.ready, 8);
  const digests = Array.from({ length: 12 }, () => randomBytes(32));
  const sigs = digests.map((d) => pool.sign(d));
  t.equal(sigs.filter((s) => s !== null).length, 8, 'eight prepared, used in one turn');
  t.equal(sigs.slice(8).filter((s) => s === null).length, 4, 'then null until more come');
  for (let i = 0; i < 8; i++)
    t.equal(
      await recoverAddress({ hash: `0x${digests[i].toString('hex')}`, signature: sigs[i] as Hex }),
      wallet.address,
    );
  await pool.fill();
  t.ok(pool.ready > 0, 'refilled');
  pool.close();
  t.equal(pool.ready, 0);
  t.equal(pool.sign(randomBytes(32)), null, 'closed: nothing left to sign with');
});

t.test('with its thread gone, the prepared signer signs the usual way', async (t) => {
  const own = new Attester(key, { thread: true, mode: 'prepared' });
  await own.ready();
  await own.close();
  const answer = { verdict: 'block', risk: 'high', confidence: 1, expires_in: 10 } as const;
  const input = { answerId: 'after-close', body: Buffer.from('{}'), chainId: 8453, issuedAt: 1_800_000_000 };
  const a = await own.attest(answer, input);
  t.equal(own.signedOn.caller, 1, 'signed on the calling thread');
  const { domain, types, message } = a.typed_data;
  t.equal(
    a.signature,
    await wallet.signTypedData(domain, { Verdict: [...types.Verdict] }, message),
    "RFC 6979: ethers' own signature",
  );
});

t.test(
  'a signing thread closed while it prepares nonces ends cleanly: the process does not abort',
  { skip: native === null },
  async (t) => {
    // In a process of its own: a thread stopped inside the native binding aborts its whole process.
    const module = new URL('../../src/attest/sign-thread.js', import.meta.url).href;
    const script = `
      const { SignThread } = await import(${JSON.stringify(module)});
      for (let i = 0; i < 40; i++) {
        const thread = new SignThread(${JSON.stringify(key)}, { background: true });
        await thread.ready();
        thread.prepare(512).catch(() => undefined);
        await new Promise((r) => setTimeout(r, i % 5));
        await thread.close();
      }
      console.log('closed 40');`;
    const dir = mkdtempSync(join(tmpdir(), 'sign-close-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'close.mjs'), script);
    const run = spawnSync(process.execPath, [join(dir, 'close.mjs')], { encoding: 'utf8', timeout: 60_000 });
    t.equal(run.signal, null, `no signal (stderr: ${run.stderr.trim().slice(0, 200)})`);
    t.equal(run.status, 0, 'exit code 0');
    t.equal(run.stdout.trim(), 'closed 40');
  },
);
