/**
 * One behaviour suite for every Store implementation. Each store test file supplies a harness
 * that makes fresh, empty databases and can dump every table.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { generateApiKey } from '../../src/billing/keys.js';
import { openStore } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import type {
  NewApiKey,
  NewPayment,
  PaymentRecord,
  PaymentState,
  PaymentUpdateFields,
  Store,
} from '../../src/store/types.js';

export interface Harness {
  name: string;
  newUrl(): Promise<string>;
  dump(url: string): Promise<Record<string, unknown[]>>;
}

export function newKey(email: string, over: Partial<NewApiKey> = {}): NewApiKey & { raw: string } {
  const k = generateApiKey();
  return {
    id: randomUUID(),
    keyHash: k.hash,
    prefix: k.prefix,
    email,
    plan: 'Basic',
    requestedPlan: null,
    company: null,
    fullName: null,
    useCase: null,
    website: null,
    raw: k.key,
    ...over,
  };
}

export function newPayment(over: Partial<NewPayment> = {}): NewPayment {
  return {
    id: randomUUID(),
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    payer: '0x' + randomBytes(20).toString('hex'),
    nonce: '0x' + randomBytes(32).toString('hex'),
    payTo: '0x' + '11'.repeat(20),
    value: '10000',
    network: 'eip155:8453',
    x402Version: 2,
    payload: JSON.stringify({ signature: '0x' + 'ab'.repeat(65) }),
    validBefore: Math.floor(Date.now() / 1000) + 120,
    resource: 'http://127.0.0.1/v1/x402/decide',
    ...over,
  };
}

/**
 * 300 counts asked in one turn of the event loop against a limit of 150, over two months of one
 * key: November gets 200 asks and December 100. Each store counts them in groups; every caller must
 * still get what counting it alone, in the order asked, would have given.
 */
export async function countOneTurn(t: Test, store: Store, keyId: string): Promise<void> {
  const results = await Promise.all(
    Array.from({ length: 300 }, (_, i) => store.consumeQuota(keyId, i % 3 === 0 ? '2026-12' : '2026-11', 150)),
  );
  const nov = results.filter((_, i) => i % 3 !== 0);
  const dec = results.filter((_, i) => i % 3 === 0);
  t.equal(nov.filter((r) => r.allowed).length, 150, 'November: exactly the limit allowed');
  t.same(
    nov.filter((r) => r.allowed).map((r) => r.used),
    Array.from({ length: 150 }, (_, i) => i + 1),
    'each allowed count saw its own number, in the order asked',
  );
  t.ok(
    nov.filter((r) => !r.allowed).every((r) => r.used === 150),
    'the refused ones see the full count',
  );
  t.same(
    dec.map((r) => r.used),
    Array.from({ length: 100 }, (_, i) => i + 1),
    'December: all 100 allowed, in order',
  );
}

const workerPath = fileURLToPath(new URL('./quota-worker.js', import.meta.url));

/** Runs `n` concurrent consumeQuota calls in a separate OS process; resolves when it is ready, fires on `go`. */
function quotaProcess(url: string, keyId: string, period: string, limit: number, n: number) {
  const child = spawn(process.execPath, [workerPath, url, keyId, period, String(limit), String(n)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  const ready = new Promise<void>((resolve) => {
    child.stdout.on('data', (d: string) => {
      out += d;
      if (out.includes('ready\n')) resolve();
    });
  });
  const done = once(child, 'exit').then(([code]) => {
    if (code !== 0) throw new Error(`quota worker exited ${code}: ${out}`);
    return JSON.parse(out.slice(out.indexOf('ready\n') + 6)) as { allowed: number; denied: number };
  });
  return { ready, done, go: () => child.stdin.end('go\n') };
}

export function storeSuite(h: Harness): void {
  let url = '';
  let store: Store;
  t.before(async () => {
    url = await h.newUrl();
    store = await openStore({ databaseUrl: url });
  });
  t.teardown(() => store?.close());

  t.test(`${h.name}: migrations are recorded once and re-running them changes nothing`, async (t) => {
    await store.migrate();
    await store.migrate();
    const second = await openStore({ databaseUrl: url });
    await second.close();
    const dump = await h.dump(url);
    t.same(
      dump.schema_migrations.map((r) => Number((r as { version: number }).version)),
      MIGRATIONS.map((m) => m.version),
    );
  });

  t.test(
    `${h.name}: three stores migrating one fresh database at once all succeed, each migration applied once`,
    async (t) => {
      const fresh = await h.newUrl();
      const stores = await Promise.all([
        openStore({ databaseUrl: fresh }),
        openStore({ databaseUrl: fresh }),
        openStore({ databaseUrl: fresh }),
      ]);
      await Promise.all(stores.map((s) => s.close()));
      t.equal((await h.dump(fresh)).schema_migrations.length, MIGRATIONS.length);
    },
  );

  t.test(`${h.name}: the attestation key is kept by the first caller; racing stores all get that one`, async (t) => {
    const fresh = await h.newUrl();
    const stores = await Promise.all([1, 2, 3].map(() => openStore({ databaseUrl: fresh })));
    try {
      const candidates = Array.from({ length: 12 }, (_, i) => ({
        privateKey: `0x${String(i + 1)
          .padStart(2, '0')
          .repeat(32)}`,
        address: `0x${String(i + 1)
          .padStart(2, '0')
          .repeat(20)}`,
      }));
      const got = await Promise.all(candidates.map((c, i) => stores[i % 3].attestationKey(c)));
      t.equal(new Set(got.map((g) => g.privateKey)).size, 1, 'every caller got the same key');
      const winner = candidates.find((c) => c.privateKey === got[0].privateKey);
      t.ok(winner, 'it is one of the candidates');
      t.same(got[0], winner, 'with its address');
      const later = await stores[0].attestationKey({ privateKey: `0x${'ee'.repeat(32)}`, address: '0xother' });
      t.same(later, winner, 'a later candidate does not replace it');
      t.equal((await h.dump(fresh)).attestation_keys.length, 1, 'one row');
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  t.test(`${h.name}: one active key per e-mail, case-insensitive and trimmed`, async (t) => {
    const a = newKey('Alice@Example.com');
    t.equal(await store.createApiKey(a), true);
    t.equal(await store.createApiKey(newKey('  alice@example.COM ')), false, 'second key for the same address refused');
    const found = await store.findApiKeyByHash(a.keyHash);
    t.match(found, { id: a.id, prefix: a.prefix, email: 'alice@example.com', plan: 'Basic', revokedAt: null });
    t.ok(found!.createdAt instanceof Date && Math.abs(found!.createdAt.getTime() - Date.now()) < 60_000);
    t.equal(await store.findApiKeyByHash('0'.repeat(64)), null);

    t.equal(await store.revokeApiKey(a.prefix), 1, 'revoked by prefix');
    t.equal(await store.revokeApiKey(a.id), 0, 'already revoked');
    t.ok((await store.findApiKeyByHash(a.keyHash))!.revokedAt instanceof Date);
    const b = newKey('alice@example.com', { requestedPlan: 'DeFi', company: 'Acme', website: 'https://acme.test' });
    t.equal(await store.createApiKey(b), true, 'a new key once the old one is revoked');
    t.match(await store.findApiKeyByHash(b.keyHash), {
      requestedPlan: 'DeFi',
      company: 'Acme',
      website: 'https://acme.test',
    });

    t.equal(await store.setPlan(b.id, 'Execution'), 1);
    t.equal((await store.findApiKeyByHash(b.keyHash))!.plan, 'Execution');
    t.equal(await store.setPlan(a.id, 'DeFi'), 0, 'a revoked key keeps its plan');
    t.equal(await store.setPlan('nobody', 'DeFi'), 0);
    await t.rejects(store.setPlan(b.id, 'Gold' as never), /unknown plan/);
    const ids = (await store.listApiKeys()).map((k) => k.id);
    t.ok(ids.includes(a.id) && ids.includes(b.id));
  });

  t.test(`${h.name}: the raw key is nowhere in the database`, async (t) => {
    const k = newKey('secret-holder@example.com');
    await store.createApiKey(k);
    await store.consumeQuota(k.id, '2026-11', 10);
    const text = JSON.stringify(await h.dump(url));
    t.ok(text.includes(k.keyHash), 'the dump does contain the hash, so the search is real');
    t.notOk(text.includes(k.raw), 'raw key absent');
    t.notOk(text.includes(k.raw.slice(4)), 'random part absent');
  });

  t.test(`${h.name}: quota counts up to the limit, per key and month, and refunds`, async (t) => {
    const k = newKey('quota@example.com');
    const other = newKey('quota2@example.com');
    await store.createApiKey(k);
    await store.createApiKey(other);
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await store.consumeQuota(k.id, '2026-11', 3));
    t.same(seen, [
      { allowed: true, used: 1, limit: 3 },
      { allowed: true, used: 2, limit: 3 },
      { allowed: true, used: 3, limit: 3 },
      { allowed: false, used: 3, limit: 3 },
    ]);
    t.equal(await store.getUsage(k.id, '2026-11'), 3);
    t.same(
      await store.consumeQuota(k.id, '2026-12', 3),
      { allowed: true, used: 1, limit: 3 },
      'a new month starts at zero',
    );
    t.same(await store.consumeQuota(other.id, '2026-11', 3), { allowed: true, used: 1, limit: 3 }, 'keys do not share');
    await store.refundQuota(k.id, '2026-11');
    t.same(
      await store.consumeQuota(k.id, '2026-11', 3),
      { allowed: true, used: 3, limit: 3 },
      'a refunded call can be used again',
    );
    t.same(
      await store.consumeQuota(k.id, '2026-11', 5),
      { allowed: true, used: 4, limit: 5 },
      'a raised limit (plan change) applies at once',
    );
    await store.refundQuota(k.id, '2027-01');
    t.equal(await store.getUsage(k.id, '2027-01'), 0, 'refund of an uncounted month does nothing');
    t.same(
      await store.consumeQuota(k.id, '2027-02', 0),
      { allowed: false, used: 0, limit: 0 },
      'a zero limit allows nothing',
    );
  });

  t.test(`${h.name}: 50 concurrent calls with 5 left: exactly 5 allowed`, async (t) => {
    const k = newKey('burst@example.com');
    await store.createApiKey(k);
    for (let i = 0; i < 5; i++) await store.consumeQuota(k.id, '2026-11', 10);
    const results = await Promise.all(Array.from({ length: 50 }, () => store.consumeQuota(k.id, '2026-11', 10)));
    t.equal(results.filter((r) => r.allowed).length, 5);
    t.equal(results.filter((r) => !r.allowed).length, 45);
    t.same(
      results
        .filter((r) => r.allowed)
        .map((r) => r.used)
        .sort((a, b) => a - b),
      [6, 7, 8, 9, 10],
      'each allowed call saw its own count',
    );
    t.equal(await store.getUsage(k.id, '2026-11'), 10);
  });

  t.test(`${h.name}: two OS processes share one quota`, async (t) => {
    const k = newKey('two-procs@example.com');
    await store.createApiKey(k);
    for (let i = 0; i < 5; i++) await store.consumeQuota(k.id, '2026-11', 10);
    const procs = [quotaProcess(url, k.id, '2026-11', 10, 25), quotaProcess(url, k.id, '2026-11', 10, 25)];
    await Promise.all(procs.map((p) => p.ready));
    for (const p of procs) p.go();
    const [a, b] = await Promise.all(procs.map((p) => p.done));
    t.equal(a.allowed + b.allowed, 5, `allowed ${a.allowed} + ${b.allowed}`);
    t.equal(a.denied + b.denied, 45);
    t.equal(await store.getUsage(k.id, '2026-11'), 10);
  });

  t.test(`${h.name}: signups are counted per client and hour bucket`, async (t) => {
    const r = [];
    for (let i = 0; i < 3; i++) r.push(await store.countSignup('203.0.113.9', '2026-11-03T14', 2));
    t.same(
      r.map((x) => x.allowed),
      [true, true, false],
    );
    t.equal(r[2].used, 2);
    t.equal((await store.countSignup('203.0.113.10', '2026-11-03T14', 2)).allowed, true, 'another client');
    t.equal((await store.countSignup('203.0.113.9', '2026-11-03T15', 2)).allowed, true, 'the next hour');
  });

  t.test(`${h.name}: a payment authorization is claimed once, also under 50 concurrent claims`, async (t) => {
    const p = newPayment();
    t.equal(await store.claimPayment(p), true);
    t.equal(
      await store.claimPayment({ ...p, id: randomUUID(), payer: p.payer.toUpperCase().replace('0X', '0x') }),
      false,
      'same triple, other case: a replay',
    );
    t.equal(
      await store.claimPayment({ ...p, id: randomUUID(), nonce: '0x' + randomBytes(32).toString('hex') }),
      true,
      'another nonce',
    );
    const q = newPayment();
    const claims = await Promise.all(Array.from({ length: 50 }, () => store.claimPayment({ ...q, id: randomUUID() })));
    t.equal(claims.filter(Boolean).length, 1);
    const got = await store.getPayment(p.id);
    t.match(got, {
      id: p.id,
      asset: p.asset.toLowerCase(),
      payer: p.payer,
      nonce: p.nonce,
      payTo: p.payTo,
      value: '10000',
      network: 'eip155:8453',
      x402Version: 2,
      payload: p.payload,
      validBefore: p.validBefore,
      state: 'verified',
      txHash: null,
      attempts: 0,
      lastError: null,
      resource: p.resource,
    });
    t.ok(got!.createdAt instanceof Date && got!.updatedAt instanceof Date);
    t.equal(await store.getPayment(randomUUID()), null);
    await t.rejects(
      store.claimPayment(newPayment({ value: '0.01' })),
      /integer string/,
      'money is integer atomic units',
    );
  });

  t.test(
    `${h.name}: a payer's balance covers its payments not yet settled, counted once under concurrent claims`,
    async (t) => {
      const payer = '0x' + randomBytes(20).toString('hex');
      const pay = () => newPayment({ payer });
      const PRICE = 10_000n;
      const first = pay();
      t.equal(await store.claimCoveredPayment(first, 2n * PRICE), 'claimed');
      t.equal(await store.claimCoveredPayment(pay(), 2n * PRICE), 'claimed', 'the balance covers two');
      t.equal(await store.claimCoveredPayment(pay(), 2n * PRICE), 'uncovered', 'not a third');
      t.equal(await store.claimCoveredPayment({ ...first, id: randomUUID() }, 0n), 'replay', 'a replay is a replay');
      t.equal(await store.claimCoveredPayment(newPayment(), 2n * PRICE), 'claimed', 'another payer owes nothing yet');
      await store.updatePayment(first.id, ['verified'], 'settling');
      t.equal(await store.claimCoveredPayment(pay(), 2n * PRICE), 'uncovered', 'a payment being settled still counts');
      await store.updatePayment(first.id, ['settling'], 'settled');
      t.equal(
        await store.claimCoveredPayment(pay(), 2n * PRICE),
        'claimed',
        'a settled payment counts no more: a balance of two covers the open one and one more',
      );
      // 40 claims at once against a balance for 7: the payer's claims are taken in line.
      const racer = '0x' + randomBytes(20).toString('hex');
      const claims = await Promise.all(
        Array.from({ length: 40 }, () => store.claimCoveredPayment(newPayment({ payer: racer }), 7n * PRICE)),
      );
      t.equal(claims.filter((c) => c === 'claimed').length, 7, 'exactly seven claimed');
      t.equal(claims.filter((c) => c === 'uncovered').length, 33);
      const failed = newPayment({ payer: racer });
      t.equal(await store.claimCoveredPayment(failed, 8n * PRICE), 'claimed');
      await store.updatePayment(failed.id, ['verified'], 'failed');
      t.equal(
        await store.claimCoveredPayment(newPayment({ payer: racer }), 8n * PRICE),
        'claimed',
        'a failed payment owes nothing',
      );
      await t.rejects(store.claimCoveredPayment(newPayment({ value: '1.5' }), PRICE), /integer string/);
      // Payments of different values (a price that changed) are summed exactly, whatever their size.
      const mixed = '0x' + randomBytes(20).toString('hex');
      const BIG = 10n ** 30n;
      for (const value of [PRICE, PRICE, 3n * PRICE, BIG])
        t.equal(
          await store.claimCoveredPayment(newPayment({ payer: mixed, value: String(value) }), BIG + 5n * PRICE),
          'claimed',
        );
      t.equal(
        await store.claimCoveredPayment(newPayment({ payer: mixed, value: '1' }), BIG + 5n * PRICE),
        'uncovered',
        'a balance of exactly what is owed covers nothing more',
      );
      t.equal(
        await store.claimCoveredPayment(newPayment({ payer: mixed, value: '1' }), BIG + 5n * PRICE + 1n),
        'claimed',
        'one more atomic unit covers one more',
      );
    },
  );

  t.test(`${h.name}: payment state transitions are compare-and-set`, async (t) => {
    const p = newPayment();
    await store.claimPayment(p);
    const moves = await Promise.all(
      Array.from({ length: 50 }, () =>
        store.updatePayment(p.id, ['verified'], 'settling', { incrementAttempts: true }),
      ),
    );
    t.equal(moves.filter(Boolean).length, 1, 'one settler wins the payment');
    t.match(await store.getPayment(p.id), { state: 'settling', attempts: 1 });
    t.equal(await store.updatePayment(p.id, ['verified'], 'settled'), false, 'wrong from-state');
    t.equal(
      await store.updatePayment(p.id, ['settling'], 'settling', { lastError: 'rpc timeout', incrementAttempts: true }),
      true,
    );
    t.match(await store.getPayment(p.id), { state: 'settling', attempts: 2, lastError: 'rpc timeout' });
    t.equal(
      await store.updatePayment(p.id, ['verified', 'settling'], 'settled', {
        txHash: '0x' + 'cd'.repeat(32),
        lastError: null,
      }),
      true,
    );
    t.match(await store.getPayment(p.id), {
      state: 'settled',
      txHash: '0x' + 'cd'.repeat(32),
      lastError: null,
      attempts: 2,
    });
    t.equal(await store.updatePayment(p.id, [], 'failed'), false);
    t.equal(await store.updatePayment(randomUUID(), ['verified'], 'failed'), false);
    await t.rejects(store.updatePayment(p.id, ['settled'], 'lost' as never), /unknown payment state/);
  });

  t.test(`${h.name}: updates written together leave each payment as one at a time would`, async (t) => {
    // Two identical sets of payments in the same starting states: one moved by updatePayment one
    // call at a time, the other by one updatePayments call. Rows and answers must agree.
    const steps: Array<{
      start: PaymentState[];
      from: PaymentState[];
      to: PaymentState;
      fields?: PaymentUpdateFields;
    }> = [
      { start: [], from: ['verified'], to: 'settling', fields: { incrementAttempts: true } },
      { start: [], from: ['settling'], to: 'settled' }, // wrong from-state: no change
      {
        start: ['settling'],
        from: ['settling'],
        to: 'settled',
        fields: { txHash: `0x${'ab'.repeat(32)}`, lastError: null },
      },
      {
        start: ['settling'],
        from: ['settling'],
        to: 'settling',
        fields: { lastError: 'rpc timeout', refundAttempt: true },
      },
      { start: ['settling', 'settling'], from: ['verified', 'settling'], to: 'failed', fields: { lastError: 'gone' } },
      { start: [], from: [], to: 'failed' }, // no from-state: no change
      { start: ['settling'], from: ['settling'], to: 'settling', fields: { txHash: `0x${'cd'.repeat(32)}` } },
    ];
    const prepare = async (): Promise<string[]> => {
      const ids: string[] = [];
      for (const step of steps) {
        const p = newPayment();
        await store.claimPayment(p);
        for (const st of step.start)
          await store.updatePayment(p.id, ['verified', 'settling'], st, {
            incrementAttempts: true,
            lastError: 'earlier',
          });
        ids.push(p.id);
      }
      return ids;
    };
    const one = await prepare();
    const together = await prepare();
    const singly: boolean[] = [];
    for (const [i, step] of steps.entries())
      singly.push(await store.updatePayment(one[i], step.from, step.to, step.fields));
    // The first payment appears twice: the second update sees the first one's result.
    const batch = steps.map((step, i) => ({ id: together[i], from: step.from, to: step.to, fields: step.fields }));
    batch.push({ id: together[0], from: ['settling'], to: 'settled', fields: { txHash: `0x${'ef'.repeat(32)}` } });
    const answers = await store.updatePayments(batch);
    singly.push(await store.updatePayment(one[0], ['settling'], 'settled', { txHash: `0x${'ef'.repeat(32)}` }));
    t.same(answers, singly, 'the same answers in the same places');
    t.same(answers, [true, false, true, true, true, false, true, true]);
    const shape = (r: PaymentRecord | null) =>
      r && { state: r.state, attempts: r.attempts, txHash: r.txHash, lastError: r.lastError };
    for (let i = 0; i < steps.length; i++)
      t.same(shape(await store.getPayment(together[i])), shape(await store.getPayment(one[i])), `payment ${i}`);
    t.same(await store.updatePayments([]), []);
    await t.rejects(
      store.updatePayments([
        { id: together[1], from: ['verified'], to: 'settling' },
        { id: together[5], from: ['verified'], to: 'lost' as never },
      ]),
      /unknown payment state/,
    );
    t.match(await store.getPayment(together[1]), { state: 'verified' }, 'nothing written when one update is invalid');
  });

  t.test(`${h.name}: unsettled payments are listed by age; states are counted`, async (t) => {
    const fresh = await h.newUrl();
    const s = await openStore({ databaseUrl: fresh });
    t.teardown(() => s.close());
    const [a, b, c, d] = [newPayment(), newPayment(), newPayment(), newPayment()];
    for (const p of [a, b, c, d]) await s.claimPayment(p);
    await s.updatePayment(b.id, ['verified'], 'settling');
    await s.updatePayment(c.id, ['verified'], 'settled');
    await s.updatePayment(d.id, ['verified'], 'failed');
    await new Promise((r) => setTimeout(r, 30));
    t.same((await s.listUnsettledPayments(20, 10)).map((p) => p.id).sort(), [a.id, b.id].sort());
    t.equal((await s.listUnsettledPayments(20, 1)).length, 1, 'limit');
    t.same(await s.listUnsettledPayments(60_000, 10), [], 'none older than a minute');
    t.same(await s.countPaymentsByState(), { verified: 1, settling: 1, settled: 1, failed: 1 });
  });

  t.test(`${h.name}: a payment identifier is taken once, keeps its answer, and expires`, async (t) => {
    const payer = '0x' + randomBytes(20).toString('hex');
    const pid = `pay_${randomBytes(12).toString('hex')}`;
    const ask = (fingerprint: string, owner: string, ttlMs = 60_000) =>
      store.claimPaymentId({ payer, pid, fingerprint, owner, ttlMs });
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => ask('fp-a', `owner-${i}`)));
    t.equal(claims.filter((c) => c.kind === 'new').length, 1, 'one of 20 concurrent attempts takes the id');
    t.ok(
      claims.every((c) => c.kind === 'new' || c.kind === 'pending'),
      'the others see it in flight',
    );
    const owner = `owner-${claims.findIndex((c) => c.kind === 'new')}`;
    t.same(await ask('fp-b', 'other'), { kind: 'conflict' }, 'another request under the same id');
    t.equal(
      await store.completePaymentId(payer, pid, 'not-the-owner', answer()),
      false,
      'only the owner keeps an answer',
    );
    t.equal(await store.completePaymentId(payer, pid, owner, answer()), true);
    t.same(await ask('fp-a', 'later'), { kind: 'done', answer: answer() });
    t.same(await ask('fp-b', 'later'), { kind: 'conflict' });
    await store.releasePaymentId(payer, pid, owner);
    t.same(await ask('fp-a', 'later'), { kind: 'done', answer: answer() }, 'an answered id is not released');
    t.same(
      await store.claimPaymentId({
        payer: '0x' + '22'.repeat(20),
        pid,
        fingerprint: 'fp-b',
        owner: 'x',
        ttlMs: 60_000,
      }),
      { kind: 'new' },
      'ids are per payer',
    );

    const pid2 = `pay_${randomBytes(12).toString('hex')}`;
    t.same(await store.claimPaymentId({ payer, pid: pid2, fingerprint: 'fp', owner: 'o1', ttlMs: 60_000 }), {
      kind: 'new',
    });
    await store.releasePaymentId(payer, pid2, 'o1');
    t.same(
      await store.claimPaymentId({ payer, pid: pid2, fingerprint: 'fp-other', owner: 'o2', ttlMs: 20 }),
      { kind: 'new' },
      'a released id is free again',
    );
    await new Promise((r) => setTimeout(r, 40));
    t.same(
      await store.claimPaymentId({ payer, pid: pid2, fingerprint: 'fp-third', owner: 'o3', ttlMs: 60_000 }),
      { kind: 'new' },
      'an expired id is free again',
    );

    function answer() {
      return { status: 200, body: '{"verdict":"proceed"}', receipt: 'eyJ9', paymentId: 'p-1' };
    }
  });

  t.test(
    `${h.name}: a screening list of a million addresses round-trips in chunks; a new version replaces it`,
    async (t) => {
      const size = 1_000_000;
      const keys = new Uint8Array(size * 20);
      for (let i = 0; i < keys.length; i++) keys[i] = (i * 31 + 7) % 251;
      const tags = new Uint8Array(new Uint32Array(size).map((_, i) => i % 3).buffer);
      const row = (hash: string, k: Uint8Array) => ({
        name: 'feed',
        kind: 'blocklist' as const,
        source: 'https://feeds.example/list.txt',
        date: null,
        size: k.byteLength / 20,
        hash,
        keys: k,
        tags: tags.subarray(0, (k.byteLength / 20) * 4),
        table: '[{"reason":null},{"reason":"a"},{"reason":"b"}]',
        changedAt: 1000,
        confirmedAt: 2000,
        checkedAt: 2000,
        status: 'ok' as const,
        error: null,
      });
      t.equal(await store.screeningList('feed'), null, 'nothing stored yet');
      await store.putScreeningList(row('h1', keys), 'me');
      const got = await store.screeningList('feed');
      t.equal(got?.size, size);
      t.ok(Buffer.from(got!.keys).equals(Buffer.from(keys)), 'every key byte back');
      t.ok(Buffer.from(got!.tags).equals(Buffer.from(tags)), 'every tag byte back');
      t.same(
        (await store.screeningListHeads()).map((x) => [x.name, x.hash, x.size, x.confirmedAt]),
        [['feed', 'h1', size, 2000]],
      );
      const small = keys.slice(0, 20 * 10);
      await store.putScreeningList(row('h2', small), 'me');
      const second = await store.screeningList('feed');
      t.equal(second?.hash, 'h2');
      t.ok(Buffer.from(second!.keys).equals(Buffer.from(small)));
      const chunks = (await h.dump(url)).screening_list_chunks;
      t.same(
        [...new Set(chunks.map((c) => (c as { hash: string }).hash))],
        ['h2'],
        "the old version's chunks are gone",
      );
    },
  );

  t.test(`${h.name}: one refresh lease per list at a time, due only after the interval`, async (t) => {
    const stores = [store, await openStore({ databaseUrl: url }), await openStore({ databaseUrl: url })];
    try {
      const now = 10_000_000_000;
      const won = await Promise.all(
        stores.map((s, i) => s.claimScreeningRefresh('lease', `o${i}`, now, 60_000, now - 3600_000)),
      );
      t.equal(won.filter(Boolean).length, 1, 'exactly one instance takes it');
      const owner = `o${won.indexOf(true)}`;
      t.notOk(await store.claimScreeningRefresh('lease', 'late', now + 1000, 60_000, now - 3600_000), 'held');
      await store.markScreeningRefresh('lease', owner, now + 2000, 'failed', 'HTTP 503');
      const head = (await store.screeningListHeads()).find((x) => x.name === 'lease');
      t.match(head, { status: 'failed', error: 'HTTP 503', checkedAt: now + 2000 });
      t.notOk(await store.claimScreeningRefresh('lease', 'soon', now + 3000, 60_000, now + 1000), 'not due yet');
      t.ok(await store.claimScreeningRefresh('lease', 'later', now + 9000, 60_000, now + 5000), 'due again');
    } finally {
      await Promise.all(stores.slice(1).map((s) => s.close()));
    }
  });

  t.test(`${h.name}: counterparties per account, since a time, pruned`, async (t) => {
    const a = '0x1111111111111111111111111111111111111111';
    const b = '0x2222222222222222222222222222222222222222';
    await store.recordCounterparties('key:1', [a, b], 1000);
    await store.recordCounterparties('key:1', [a], 5000);
    await store.recordCounterparties('key:2', [b], 5000);
    t.same((await store.counterparties('key:1', 0)).sort(), [a, b]);
    t.same(await store.counterparties('key:1', 2000), [a], 'b was last seen before');
    t.same(await store.counterparties('key:2', 0), [b], 'accounts are apart');
    t.equal(await store.pruneCounterparties(2000), 1);
    t.same(await store.counterparties('key:1', 0), [a]);
  });
}
