/**
 * The hand-written EIP-712 encoding against ethers' encoder: libsecp256k1 and ethers both derive
 * nonces by RFC 6979, so for the same key and typed data they must produce the same signature
 * byte for byte. Also on the signing thread, whose batches (at most eight answers each, several in
 * flight at once) must keep each answer's signature and policy hash. A policy hash that is not 32
 * bytes is refused, never signed as zero.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { Wallet, verifyTypedData } from 'ethers';
import { Attester } from '../../src/attest/attester.js';

const key = `0x${randomBytes(32).toString('hex')}`;
const wallet = new Wallet(key);
const inline = new Attester(key);
const threaded = new Attester(key, { thread: true });
t.teardown(() => threaded.close());

const VERDICTS = ['proceed', 'wait', 'block'] as const;
const RISKS = ['low', 'medium', 'high'] as const;

t.test('the signer is the key address', async (t) => {
  t.equal(inline.address, wallet.address);
  t.notOk(JSON.stringify(inline).includes(key.slice(2)), 'JSON of the signer has no key');
});

t.test('signatures equal ethers signTypedData over the same typed data, inline and on the thread', async (t) => {
  const inputs = Array.from({ length: 60 }, (_, i) => ({
    answer: {
      verdict: VERDICTS[i % 3],
      risk: RISKS[(i >> 1) % 3],
      confidence: ((i * 37) % 10001) / 10000,
      expires_in: [0, 1, 30, 300, 86400][i % 5],
    },
    input: {
      answerId: `answer-${i}-${i % 7 === 0 ? 'réponse-✓' : ''}${randomBytes(4).toString('hex')}`,
      body: randomBytes(i * 50),
      chainId: [8453, 1, 0, 42161, 11155111, 2 ** 40][i % 6],
      issuedAt: 1_700_000_000 + i * 1000,
      // Under no policy (absent or null), a policy hash in hex of either case, or as 32 bytes.
      policyHash: [undefined, null, `0x${randomBytes(32).toString('hex')}`, randomBytes(32), `0x${'AB'.repeat(32)}`][
        i % 5
      ],
      transaction:
        i % 2
          ? {
              from: Wallet.createRandom().address,
              to: i % 4 === 1 ? null : Wallet.createRandom().address,
              value: i % 3 ? String(10n ** BigInt(i)) : `0x${(i * 1234567).toString(16)}`,
              data: `0x${randomBytes(i).toString('hex')}`,
            }
          : null,
    },
  }));
  await threaded.ready();
  const threadedAll = await Promise.all(inputs.map(({ answer, input }) => threaded.attest(answer, input)));
  for (let i = 0; i < inputs.length; i++) {
    const a = await inline.attest(inputs[i].answer, inputs[i].input);
    const { domain, types, message } = a.typed_data;
    const expected = await wallet.signTypedData(domain, { Verdict: [...types.Verdict] }, message);
    t.equal(a.signature, expected, `#${i}: the inline signature is ethers' signature`);
    t.equal(threadedAll[i].signature, expected, `#${i}: so is the one from the signing thread`);
    t.same(threadedAll[i].typed_data, a.typed_data, `#${i}: the thread's hashes are the same typed data`);
    const p = inputs[i].input.policyHash;
    const want =
      p === undefined || p === null
        ? `0x${'00'.repeat(32)}`
        : typeof p === 'string'
          ? p.toLowerCase()
          : `0x${p.toString('hex')}`;
    t.equal(message.policyHash, want, `#${i}: the signed policy hash is the one given, zero without one`);
    t.equal(
      verifyTypedData(domain, { Verdict: [...types.Verdict] }, message, a.signature),
      wallet.address,
      `#${i}: ethers recovers the signer`,
    );
  }
});

t.test('a malformed policy hash is refused, not signed as zero', async (t) => {
  await threaded.ready();
  const answer = { verdict: 'proceed', risk: 'low', confidence: 1, expires_in: 60 } as const;
  const base = { answerId: 'bad-policy', body: Buffer.from('{}'), chainId: 8453 };
  for (const bad of [
    '',
    '0x',
    `0x${'0'.repeat(63)}`,
    `0x${'0'.repeat(66)}`,
    `${'0'.repeat(64)}`,
    `0x${'g'.repeat(64)}`,
  ]) {
    await t.rejects(inline.attest(answer, { ...base, policyHash: bad }), /policy hash/, `"${bad}"`);
    await t.rejects(threaded.attest(answer, { ...base, policyHash: bad }), /policy hash/, `"${bad}" on the thread`);
  }
  for (const bad of [Buffer.alloc(31), Buffer.alloc(33), Buffer.alloc(0)])
    await t.rejects(inline.attest(answer, { ...base, policyHash: bad }), /policy hash/, `${bad.length} bytes`);
});

t.test('with its thread gone, the signer signs on the calling thread: same signatures', async (t) => {
  const own = new Attester(key, { thread: true });
  await own.ready();
  const answer = { verdict: 'proceed', risk: 'low', confidence: 1, expires_in: 60 } as const;
  const input = { answerId: 'after-close', body: Buffer.from('{}'), chainId: 8453, issuedAt: 1_800_000_000 };
  const before = await own.attest(answer, input);
  await own.close();
  const after = await own.attest(answer, input);
  t.equal(after.signature, before.signature);
  t.equal(after.signature, (await inline.attest(answer, input)).signature);
});

t.test(
  'auto: while the thread holds a batch longer than the bound, answers are signed here; same signatures',
  async (t) => {
    // A bound of 0 ms: any batch still on the thread counts as late, so a burst is shared between
    // the two threads; with the default bound a quiet machine signs everything on the thread.
    const shared = new Attester(key, { thread: true, mode: 'auto', lagMs: 0, holdMs: 60_000 });
    const quiet = new Attester(key, { thread: true, mode: 'auto' });
    t.teardown(() => Promise.all([shared.close(), quiet.close()]));
    await Promise.all([shared.ready(), quiet.ready()]);
    const burst = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        answer: { verdict: VERDICTS[i % 3], risk: RISKS[i % 3], confidence: 0.5, expires_in: 60 },
        input: { answerId: `auto-${i}`, body: randomBytes(200), chainId: 8453, issuedAt: 1_750_000_000 + i },
      }));
    const inputs = burst(64);
    // A first batch goes out (eight answers are posted at once, in this turn); while it is on the
    // thread, the rest of the burst, asked for in the same turn, is signed here.
    const first = inputs.slice(0, 8).map(({ answer, input }) => shared.attest(answer, input));
    const rest = inputs.slice(8).map(({ answer, input }) => shared.attest(answer, input));
    const all = await Promise.all([...first, ...rest]);
    t.ok(shared.signedOn.thread >= 8, `${shared.signedOn.thread} signed on the thread`);
    t.ok(shared.signedOn.caller > 0, `${shared.signedOn.caller} signed on the calling thread`);
    t.equal(shared.signedOn.thread + shared.signedOn.caller, 64);
    for (let i = 0; i < inputs.length; i++) {
      const { domain, types, message } = all[i].typed_data;
      t.equal(
        all[i].signature,
        await wallet.signTypedData(domain, { Verdict: [...types.Verdict] }, message),
        `#${i}: ethers' signature`,
      );
    }
    for (const { answer, input } of burst(16)) await quiet.attest(answer, input);
    t.same(quiet.signedOn, { thread: 16, caller: 0, prepared: 0 }, 'one at a time, nothing waits: all on the thread');
    // After a lag it stays on the calling thread for the hold, even with the thread idle again ...
    const before = { ...shared.signedOn };
    for (const { answer, input } of burst(4)) await shared.attest(answer, input);
    t.same(
      shared.signedOn,
      { thread: before.thread, caller: before.caller + 4, prepared: 0 },
      'held on the calling thread',
    );
    // ... and with no hold, goes back to the thread as soon as the thread has caught up.
    const back = new Attester(key, { thread: true, mode: 'auto', lagMs: 0, holdMs: 0 });
    t.teardown(() => back.close());
    await back.ready();
    const b = burst(16);
    // In one turn, as above: the first batch cannot be back before the rest is asked for.
    const firstBatch = b.slice(0, 8).map(({ answer, input }) => back.attest(answer, input));
    await Promise.all([...firstBatch, ...b.slice(8).map(({ answer, input }) => back.attest(answer, input))]);
    t.ok(back.signedOn.caller > 0, 'lagging: signed here');
    const onThread = back.signedOn.thread;
    for (const { answer, input } of burst(3)) await back.attest(answer, input);
    t.equal(back.signedOn.thread, onThread + 3, 'caught up: on the thread again');
  },
);

t.test('inline mode starts no thread', async (t) => {
  const here = new Attester(key, { thread: true, mode: 'inline' });
  const a = await here.attest(
    { verdict: 'proceed', risk: 'low', confidence: 1, expires_in: 60 },
    { answerId: 'inline', body: Buffer.from('{}'), chainId: 8453, issuedAt: 1_800_000_000 },
  );
  t.same(here.signedOn, { thread: 0, caller: 1, prepared: 0 });
  const { domain, types, message } = a.typed_data;
  t.equal(a.signature, await wallet.signTypedData(domain, { Verdict: [...types.Verdict] }, message));
  await here.close();
});
