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
