/**
 * What the store keeps about answers (docs/policies.md §9, §10), on SQLite and on PostgreSQL:
 * Idempotency-Key claims (one taker, the kept answer, conflicts, a crashed attempt's lease, the
 * owner-only release), verdict pages (newest first, keyset cursors that neither skip nor repeat,
 * filters, a reservation's state read live) and retention.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openStore } from '../../src/store/index.js';
import type { Store, VerdictQuery, VerdictRecord } from '../../src/store/types.js';
import { pgAdmin } from '../helpers/pg.js';
import { newKey } from './suite.js';
import { verdictRow } from '../helpers/verdict-row.js';

const hex32 = () => `0x${randomBytes(32).toString('hex')}`;

const row = verdictRow;

const page = (accountId: string, over: Partial<VerdictQuery> = {}): VerdictQuery => ({
  accountId,
  limit: 50,
  before: null,
  keyId: null,
  verdict: null,
  since: null,
  ...over,
});

function suite(name: string, newUrl: () => Promise<string>): void {
  let store: Store;
  let account = '';
  t.before(async () => {
    store = await openStore({ databaseUrl: await newUrl() });
    const k = newKey(`${randomUUID()}@example.com`);
    await store.createApiKey(k);
    account = k.id;
  });
  t.teardown(() => store?.close());

  t.test(`${name}: an Idempotency-Key is taken once, keeps its answer, and refuses another request`, async (t) => {
    const ask = { accountId: account, key: `k-${randomUUID()}`, fingerprint: 'fp-a', leaseMs: 60_000 };
    const claims = await Promise.all(
      Array.from({ length: 8 }, () => store.claimIdempotencyKey({ ...ask, owner: randomUUID() })),
    );
    t.equal(claims.filter((c) => c.kind === 'new').length, 1, 'one attempt takes the key');
    t.equal(claims.filter((c) => c.kind === 'pending').length, 7, 'the others see it being served');
    t.same(await store.claimIdempotencyKey({ ...ask, fingerprint: 'fp-b', owner: randomUUID() }), {
      kind: 'conflict',
    });
    // Only the owning attempt may keep an answer or free the key.
    t.equal(
      await store.completeIdempotencyKey(account, ask.key, 'someone-else', { status: 200, body: '{}' }, 1000),
      false,
    );
    const owner = randomUUID();
    const fresh = { ...ask, key: `k-${randomUUID()}`, owner };
    t.same(await store.claimIdempotencyKey(fresh), { kind: 'new' });
    await store.releaseIdempotencyKey(account, fresh.key, 'someone-else');
    t.same(await store.claimIdempotencyKey({ ...fresh, owner: randomUUID() }), { kind: 'pending' });
    t.equal(
      await store.completeIdempotencyKey(account, fresh.key, owner, { status: 200, body: '{"v":1}' }, 60_000),
      true,
    );
    t.same(await store.claimIdempotencyKey({ ...fresh, owner: randomUUID() }), {
      kind: 'done',
      status: 200,
      body: '{"v":1}',
    });
    // The same key in another account is another key.
    t.same(await store.claimIdempotencyKey({ ...fresh, accountId: randomUUID(), owner: randomUUID() }), {
      kind: 'new',
    });
  });

  t.test(`${name}: a released key is taken again; a crashed attempt's lease runs out`, async (t) => {
    const key = `k-${randomUUID()}`;
    const first = randomUUID();
    t.same(
      await store.claimIdempotencyKey({ accountId: account, key, fingerprint: 'f', owner: first, leaseMs: 60_000 }),
      {
        kind: 'new',
      },
    );
    await store.releaseIdempotencyKey(account, key, first);
    t.same(
      await store.claimIdempotencyKey({ accountId: account, key, fingerprint: 'f', owner: randomUUID(), leaseMs: 50 }),
      { kind: 'new' },
    );
    await new Promise((r) => setTimeout(r, 80));
    t.same(
      await store.claimIdempotencyKey({ accountId: account, key, fingerprint: 'g', owner: randomUUID(), leaseMs: 50 }),
      { kind: 'new' },
      'past its lease the key is free again, even for another request',
    );
  });

  t.test(`${name}: pages are newest first and a cursor walk neither skips nor repeats`, async (t) => {
    const acct = randomUUID();
    const base = Date.now() - 60_000;
    // Ties on `at` on purpose: the id breaks them.
    const rows = Array.from({ length: 23 }, (_, i) => row(acct, base + Math.floor(i / 3) * 1000));
    await store.appendVerdicts(rows.slice(0, 10));
    await store.appendVerdicts(rows.slice(10));
    await store.appendVerdicts(rows.slice(0, 2)); // a retried batch changes nothing
    const seen: string[] = [];
    let before: VerdictQuery['before'] = null;
    for (let pages = 0; pages < 10; pages++) {
      const got = await store.verdictPage(page(acct, { limit: 5, before }));
      seen.push(...got.map((g) => g.id));
      if (got.length < 5) break;
      before = { at: got[4].at, id: got[4].id };
    }
    const expected = [...rows].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1)).map((r) => r.id);
    t.same(seen, expected, 'every row once, newest first, ties by id');
    t.same(await store.verdictPage(page(randomUUID())), [], 'another account sees none');
  });

  t.test(`${name}: filters by key, verdict and time; the reservation's state is read live`, async (t) => {
    const acct = randomUUID();
    const now = Date.now();
    const a = row(acct, now - 3000, { keyId: 'key-a', keyName: 'payments', verdict: 'block', risk: 'high' });
    const b = row(acct, now - 2000, {
      keyId: 'key-b',
      verdict: 'wait',
      failureModes: ['policy:policy_limit_exceeded'],
    });
    const policy = { name: 'payments', version: 3, hash: hex32() };
    const c = row(acct, now - 1000, { keyId: 'key-a', policy, reservedUsd: 300 });
    await store.appendVerdicts([a, b, c]);
    t.same(
      (await store.verdictPage(page(acct, { keyId: 'key-a' }))).map((r) => r.id),
      [c.id, a.id],
    );
    t.same(
      (await store.verdictPage(page(acct, { verdict: 'wait' }))).map((r) => r.failureModes),
      [['policy:policy_limit_exceeded']],
    );
    t.same(
      (await store.verdictPage(page(acct, { since: now - 2000 }))).map((r) => r.id),
      [c.id, b.id],
    );
    t.same(
      (await store.verdictPage(page(acct, { keyId: 'key-a', verdict: 'block' })))[0],
      { ...a, reservation: null },
      'a row without a reservation reads back whole, reservation null',
    );

    // The reservation made under the answer's id: its state follows, the reserved amount stays.
    const k = newKey(`${randomUUID()}@example.com`);
    await store.createApiKey(k);
    const start = now - (now % 86_400_000);
    const limit = {
      id: 'daily',
      windowKey: 'day',
      bucket: start,
      from: start,
      step: 86_400_000,
      maxUsd: 1000,
      maxCount: null,
    };
    const r = await store.reserve({
      id: c.id,
      accountId: k.id,
      policy: 'payments',
      limits: [limit],
      usd: 300,
      at: c.at, // as the service makes them: the reservation and its verdict row share (at, id)
      expiresAt: now + 60_000,
      chain: 'base',
      actor: `0x${'11'.repeat(20)}`,
    });
    t.equal(r.ok, true);
    let [got] = await store.verdictPage(page(acct, { keyId: 'key-a', limit: 1 }));
    t.equal(got.reservation, 'reserved');
    t.same(got.policy, policy);
    await store.settleReservation({ id: c.id, at: c.at }, 'released');
    [got] = await store.verdictPage(page(acct, { keyId: 'key-a', limit: 1 }));
    t.equal(got.reservation, 'released');
    t.equal(got.reservedUsd, 300, 'what was reserved stays on the row');
  });

  t.test(`${name}: a reservation's verdict row is written in its transaction, only when it is accepted`, async (t) => {
    const k = newKey(`${randomUUID()}@example.com`);
    await store.createApiKey(k);
    const now = Date.now();
    const start = now - (now % 86_400_000);
    const limits = [
      { id: 'daily', windowKey: 'day', bucket: start, from: start, step: 86_400_000, maxUsd: 500, maxCount: null },
    ];
    const ask = (usd: number, over: Partial<VerdictRecord> = {}) => {
      const v = row(k.id, now, { reservedUsd: usd, policy: { name: 'ops', version: 1, hash: hex32() }, ...over });
      return {
        id: v.id,
        accountId: k.id,
        policy: 'ops',
        limits,
        usd,
        at: now,
        expiresAt: null,
        chain: 'base',
        actor: null,
        verdict: v,
      };
    };
    const a = ask(300);
    const b = ask(300);
    const [fits, over] = await Promise.all([store.reserve(a), store.reserve(b)]);
    t.same([fits.ok, over.ok], [true, false], 'the first fits, the second does not');
    const rows = await store.verdictPage(page(k.id));
    t.same(rows, [{ ...a.verdict, reservation: 'committed' }], 'only the accepted reservation wrote its row, whole');
    const dry = ask(100);
    t.equal((await store.reserve({ ...dry, dryRun: true })).ok, true);
    t.equal((await store.verdictPage(page(k.id))).length, 1, 'a dry run writes no row');
    // The same row again (a retried write) is not doubled.
    await store.appendVerdicts([a.verdict]);
    t.equal((await store.verdictPage(page(k.id))).length, 1);
  });

  t.test(`${name}: retention deletes old rows and expired Idempotency-Key answers, in bounded rounds`, async (t) => {
    const acct = randomUUID();
    const now = Date.now();
    const old = Array.from({ length: 7 }, () => row(acct, now - 31 * 86_400_000));
    const recent = row(acct, now - 1000);
    await store.appendVerdicts([...old, recent]);
    const key = `k-${randomUUID()}`;
    await store.claimIdempotencyKey({ accountId: acct, key, fingerprint: 'f', owner: 'o', leaseMs: 1 });
    await new Promise((r) => setTimeout(r, 5));
    const first = await store.pruneKept(Date.now(), now - 30 * 86_400_000, 5);
    t.equal(first.verdicts, 5, 'at most `max` a round');
    const second = await store.pruneKept(Date.now(), now - 30 * 86_400_000, 5);
    t.equal(second.verdicts, 2);
    t.ok(first.idempotency + second.idempotency >= 1, 'the expired key is gone');
    t.same(
      (await store.verdictPage(page(acct))).map((r) => r.id),
      [recent.id],
    );
  });
}

const dir = mkdtempSync(join(tmpdir(), 'pf-kept-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
suite('sqlite', async () => `sqlite:${join(dir, `db${++n}.db`)}`);

const admin = await pgAdmin();
if (typeof admin === 'string') {
  if (process.env.CI === 'true') t.fail(`PostgreSQL is required in CI: ${admin}`);
  else t.comment(`skipped the PostgreSQL half: ${admin}`);
} else {
  const schemas: string[] = [];
  t.teardown(async () => {
    for (const s of schemas) await admin.pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
    await admin.pool.end();
  });
  suite('postgres', async () => {
    const schema = `pf_kept_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin.pool.query(`CREATE SCHEMA ${schema}`);
    schemas.push(schema);
    const u = new URL(admin.url);
    u.searchParams.set('options', `-c search_path=${schema}`);
    return u.toString();
  });
}
