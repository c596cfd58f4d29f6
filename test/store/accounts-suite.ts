/**
 * Accounts, agent keys, policies and limit reservations (docs/policies.md §1–§3) for every Store
 * implementation: the same suite runs on SQLite and on PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { generateApiKey } from '../../src/billing/keys.js';
import { openStore } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import type { LimitWindow, NewAgentKey, Store } from '../../src/store/types.js';
import { newKey, type Harness } from './suite.js';

export interface AccountsHarness extends Harness {
  /** Runs SQL text (several statements) on the database at `url`, outside the store. */
  exec(url: string, sql: string): Promise<void>;
  /** The SQL dialect of the migrations to replay by hand. */
  dialect: 'sqlite' | 'postgres';
}

function agent(accountId: string, name: string, over: Partial<NewAgentKey> = {}): NewAgentKey {
  const k = generateApiKey();
  return {
    id: randomUUID(),
    keyHash: k.hash,
    prefix: k.prefix,
    accountId,
    name,
    policy: null,
    maxAgentKeys: 100,
    ...over,
  };
}

/** A day limit whose window (one bucket) starts at `since`. */
const day = (since: number, maxUsd: number | null, maxCount: number | null = null): LimitWindow => ({
  id: 'daily',
  windowKey: 'day',
  bucket: since,
  from: since,
  step: 86_400_000,
  maxUsd,
  maxCount,
});

/** A fresh database with the migrations up to `version` applied by hand, as an older release left it. */
/** A time (ms since the epoch) as a SQL literal of the harness's dialect: ms in SQLite, a timestamp in PostgreSQL. */
const timeSql = (h: AccountsHarness, ms: number): string =>
  h.dialect === 'sqlite' ? String(ms) : `to_timestamp(${ms / 1000})`;

async function migratedTo(h: AccountsHarness, version: number): Promise<string> {
  const fresh = await h.newUrl();
  await h.exec(
    fresh,
    h.dialect === 'sqlite'
      ? 'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)'
      : 'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
  );
  for (const m of MIGRATIONS.filter((m) => m.version <= version)) {
    await h.exec(fresh, m[h.dialect]);
    await h.exec(
      fresh,
      h.dialect === 'sqlite'
        ? `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${m.version}, 'old', 0)`
        : `INSERT INTO schema_migrations (version, name) VALUES (${m.version}, 'old')`,
    );
  }
  return fresh;
}

export function accountsSuite(h: AccountsHarness): void {
  let url = '';
  let store: Store;
  t.before(async () => {
    url = await h.newUrl();
    store = await openStore({ databaseUrl: url });
  });
  t.teardown(() => store?.close());

  t.test(
    `${h.name}: a key issued before accounts keeps working as its account's owner key, usage included`,
    async (t) => {
      // The schema as the release before accounts left it, with one key and its month's usage.
      const fresh = await migratedTo(h, 3);
      const old = newKey('old@example.com');
      const created = h.dialect === 'sqlite' ? '1700000000000' : "'2023-11-14T22:13:20Z'";
      await h.exec(
        fresh,
        `INSERT INTO api_keys (id, key_hash, prefix, email, plan, created_at) VALUES ('${old.id}', '${old.keyHash}', '${old.prefix}', 'old@example.com', 'Basic', ${created});
       INSERT INTO key_usage (key_id, period, used) VALUES ('${old.id}', '2026-11', 7);`,
      );
      const s = await openStore({ databaseUrl: fresh });
      try {
        const rec = await s.findApiKeyByHash(old.keyHash);
        t.ok(rec, 'the old key is found');
        t.equal(rec?.accountId, old.id, 'its account id is its own id');
        t.equal(rec?.role, 'owner');
        t.equal(rec?.name, 'owner');
        t.equal(rec?.policy, null);
        t.equal(await s.getUsage(rec!.accountId, '2026-11'), 7, "its month's usage is its account's");
        t.equal((await s.consumeQuota(rec!.accountId, '2026-11', 8)).allowed, true);
        t.equal((await s.consumeQuota(rec!.accountId, '2026-11', 8)).allowed, false, 'the quota carries on from 7');
        t.equal(await s.createApiKey(newKey('OLD@example.com')), false, 'still one owner key per address');
        const keys = await s.listAccountKeys(old.id);
        t.same(
          keys.map((k) => [k.role, k.name]),
          [['owner', 'owner']],
        );
      } finally {
        await s.close();
      }
    },
  );

  t.test(`${h.name}: a signup makes an account; agent keys are named, counted and revoked`, async (t) => {
    const owner = newKey('owner@example.com');
    t.equal(await store.createApiKey(owner), true);
    const a = await store.createAgentKey(agent(owner.id, 'payments bot'));
    t.equal(typeof a === 'object' && a.role, 'agent');
    t.equal(typeof a === 'object' && a.email, 'owner@example.com', "the owner's address");
    t.equal(await store.createAgentKey(agent(owner.id, 'payments bot')), 'name_taken');
    t.equal(await store.createAgentKey(agent(owner.id, 'owner')), 'name_taken', "the owner key's name is taken");
    t.equal(await store.createAgentKey(agent(owner.id, 'x', { policy: 'nope' })), 'no_policy');
    t.equal(await store.createAgentKey(agent(randomUUID(), 'x')), 'not_found');
    const b = await store.createAgentKey(agent(owner.id, 'second', { maxAgentKeys: 2 }));
    t.type(b, 'object');
    t.equal(await store.createAgentKey(agent(owner.id, 'third', { maxAgentKeys: 2 })), 'too_many');
    const listed = await store.listAccountKeys(owner.id);
    t.same(
      listed.map((k) => k.name),
      ['owner', 'payments bot', 'second'],
    );
    t.equal(await store.revokeAccountKey(owner.id, owner.id), 'owner_key', 'the owner key is not revoked here');
    const revoked = await store.revokeAccountKey(owner.id, (a as { id: string }).id);
    t.ok(typeof revoked === 'object' && revoked.revokedAt instanceof Date);
    t.equal(await store.revokeAccountKey(owner.id, (a as { id: string }).id), 'not_found', 'revoked once');
    t.type(await store.createAgentKey(agent(owner.id, 'payments bot')), 'object', 'a revoked name is free again');
    const other = newKey('other@example.com');
    await store.createApiKey(other);
    t.equal(await store.revokeAccountKey(other.id, (b as { id: string }).id), 'not_found', "another account's key");
  });

  t.test(`${h.name}: policy versions are numbered, immutable, and a key bound blocks deletion`, async (t) => {
    const owner = newKey('policies@example.com');
    await store.createApiKey(owner);
    const acc = owner.id;
    const v1 = await store.putPolicy(acc, 'pay', '0x01', '{"default":"block"}');
    t.same([v1.created, v1.version.version], [true, 1]);
    const same = await store.putPolicy(acc, 'pay', '0x01', '{"default":"block"}');
    t.same([same.created, same.version.version], [false, 1], 'the same document makes no version');
    const v2 = await store.putPolicy(acc, 'pay', '0x02', '{"default":"allow"}');
    t.same([v2.created, v2.version.version], [true, 2]);
    const v3 = await store.putPolicy(acc, 'pay', '0x01', '{"default":"block"}');
    t.same([v3.created, v3.version.version, v3.version.hash], [true, 3, '0x01'], 'an older document is a new version');
    t.equal((await store.getPolicy(acc, 'pay'))?.version, 3);
    t.equal((await store.getPolicyVersion(acc, 'pay', 2))?.document, '{"default":"allow"}');
    t.equal(await store.getPolicyVersion(acc, 'pay', 9), null);
    t.equal(await store.getPolicy(randomUUID(), 'pay'), null, "another account's name space");
    t.same(
      (await store.listPolicies(acc)).map((p) => [p.name, p.version]),
      [['pay', 3]],
    );
    const k = await store.createAgentKey(agent(acc, 'bot', { policy: 'pay' }));
    t.equal(typeof k === 'object' && k.policy, 'pay');
    t.equal(await store.deletePolicy(acc, 'pay'), 'bound');
    const unbound = await store.setKeyPolicy(acc, (k as { id: string }).id, null);
    t.equal(typeof unbound === 'object' && unbound.policy, null);
    t.equal(await store.setKeyPolicy(acc, (k as { id: string }).id, 'gone'), 'no_policy');
    t.equal(await store.deletePolicy(acc, 'pay'), 'deleted');
    t.equal(await store.deletePolicy(acc, 'pay'), 'not_found');
    t.equal(await store.getPolicyVersion(acc, 'pay', 1), null, 'its versions went with it');
    const again = await store.putPolicy(acc, 'pay', '0x05', '{}');
    t.equal(again.version.version, 1, 'a name made again starts at 1');
  });

  t.test(`${h.name}: reservations: all or nothing, counted per window, released and committed`, async (t) => {
    const owner = newKey('limits@example.com');
    await store.createApiKey(owner);
    const acc = owner.id;
    const now = Date.now();
    const weekly: LimitWindow = {
      id: 'weekly',
      windowKey: 'week',
      bucket: now - 86_400_000,
      from: now - 86_400_000,
      step: 7 * 86_400_000,
      maxUsd: 500,
      maxCount: null,
    };
    const res = (usd: number, limits: LimitWindow[], expiresAt: number | null = now + 60_000) =>
      store.reserve({
        id: randomUUID(),
        accountId: acc,
        policy: 'p',
        limits,
        usd,
        at: now,
        expiresAt,
        chain: 'base',
        actor: '0x' + '11'.repeat(20),
      });
    t.equal((await res(300, [day(now - 1000, 1000), weekly])).ok, true);
    const second = await res(300, [day(now - 1000, 1000), weekly]);
    t.equal(second.ok, false, 'the weekly limit would overflow');
    if (!second.ok) {
      t.same(
        second.full.map((f) => f.id),
        ['weekly'],
      );
      t.same(second.full[0].buckets, [{ bucket: now - 86_400_000, usd: 300, n: 1 }]);
    }
    const u = await store.limitUsage(acc, 'p', [day(now - 1000, 1000), weekly]);
    t.same(
      u.map((x) => [x.id, x.reservedUsd, x.committedUsd, x.count]),
      [
        ['daily', 300, 0, 1],
        ['weekly', 300, 0, 1],
      ],
      'the refused one reserved in neither',
    );
    t.equal((await res(50, [day(now - 1000, 1000)], null)).ok, true, 'a typed message is committed at once');
    const counted = await store.limitUsage(acc, 'p', [day(now - 1000, null, 2)]);
    t.same([counted[0].committedUsd, counted[0].count], [50, 2]);
    t.equal((await res(1, [day(now - 1000, null, 2)])).ok, false, 'max_count');
    t.same(
      await store.limitUsage(acc, 'p', [day(now + 1, 1000)]),
      [{ id: 'daily', committedUsd: 0, reservedUsd: 0, count: 0 }],
      'a later window starts afresh',
    );

    const due = await store.dueReservations(now + 60_000, 10);
    t.equal(due.length, 1, 'one reservation awaits release');
    t.equal(due[0].actor, '0x' + '11'.repeat(20));
    t.equal(await store.dueReservations(now + 59_999, 10).then((d) => d.length), 0, 'not before it expires');
    t.equal(await store.settleReservation(due[0], 'released'), true);
    t.equal(await store.settleReservation(due[0], 'committed'), false, 'settled once');
    const after = await store.limitUsage(acc, 'p', [day(now - 1000, 1000), weekly]);
    t.same(
      after.map((x) => [x.reservedUsd, x.committedUsd, x.count]),
      [
        [0, 50, 1],
        [0, 0, 0],
      ],
      'a released reservation no longer counts',
    );
  });

  t.test(
    `${h.name}: reservations stored one row per limit before migration 7 are folded, counted and released`,
    async (t) => {
      const fresh = await migratedTo(h, 6);
      const now = Date.now();
      const dayFrom = now - 1000;
      const hourFrom = now - 500;
      const created = timeSql(h, now);
      // One reserved answer of $40 in two limits and one committed of $10 in one, as migration 5 kept them.
      const r1 = `0x${'a1'.repeat(32)}`;
      const r2 = `0x${'b2'.repeat(32)}`;
      await h.exec(
        fresh,
        `INSERT INTO accounts (id, created_at) VALUES ('acc6', ${created});
       INSERT INTO reservations (id, limit_id, window_key, account_id, policy, at, usd, state, expires_at, chain, actor, bucket) VALUES
        ('${r1}', 'daily', 'day', 'acc6', 'p', ${now}, 40, 'reserved', ${now + 1000}, 'base', '0x${'11'.repeat(20)}', ${dayFrom}),
        ('${r1}', 'hourly', 'hour', 'acc6', 'p', ${now}, 40, 'reserved', ${now + 1000}, 'base', '0x${'11'.repeat(20)}', ${hourFrom}),
        ('${r2}', 'daily', 'day', 'acc6', 'p', ${now}, 10, 'committed', NULL, 'base', NULL, ${dayFrom});
       INSERT INTO limit_counters (account_id, policy, limit_id, window_key, bucket, usd, n, reserved_usd) VALUES
        ('acc6', 'p', 'daily', 'day', ${dayFrom}, 50, 2, 40),
        ('acc6', 'p', 'hourly', 'hour', ${hourFrom}, 40, 1, 40);`,
      );
      const s = await openStore({ databaseUrl: fresh });
      try {
        const hour: LimitWindow = { ...day(hourFrom, 100), id: 'hourly', windowKey: 'hour', step: 3_600_000 };
        const limits = [day(dayFrom, 1000), hour];
        const due = await s.dueReservations(now + 1000, 10);
        t.same(
          due.map((d) => [d.id, d.actor, d.expiresAt]),
          [[r1, `0x${'11'.repeat(20)}`, now + 1000]],
          'the reserved answer is due once, not once per limit',
        );
        t.equal(await s.settleReservation({ id: r1, at: now }, 'released'), true);
        t.equal(await s.settleReservation({ id: r1, at: now }, 'released'), false, 'released once');
        t.same(
          (await s.limitUsage('acc6', 'p', limits)).map((u) => [u.id, u.reservedUsd, u.committedUsd, u.count]),
          [
            ['daily', 0, 10, 1],
            ['hourly', 0, 0, 0],
          ],
          'its release gave back both limits; the committed one still counts',
        );
        t.equal(
          await s.settleReservation({ id: r2, at: now }, 'released'),
          false,
          'a committed reservation is not released',
        );
      } finally {
        await s.close();
      }
    },
  );

  t.test(
    `${h.name}: migration 8 keys reservations by (at, id); an older reservation takes its verdict row's time`,
    async (t) => {
      const fresh = await migratedTo(h, 7);
      const now = Date.now();
      const dayFrom = now - 1000;
      const created = timeSql(h, now);
      // A reserved answer whose verdict row was written 7 ms after its reservation (as before both
      // went in one transaction), and a reserved one with no row (a key whose log was off).
      const logged = `0x${'c3'.repeat(32)}`;
      const bare = `0x${'d4'.repeat(32)}`;
      const limits = JSON.stringify([['daily', 'day', dayFrom]]);
      await h.exec(
        fresh,
        `INSERT INTO accounts (id, created_at) VALUES ('acc8', ${created});
       INSERT INTO reservations (id, account_id, policy, at, usd, state, expires_at, chain, actor, limits) VALUES
        ('${logged}', 'acc8', 'p', ${now}, 30, 'reserved', ${now + 1000}, 'base', '0x${'11'.repeat(20)}', '${limits}'),
        ('${bare}', 'acc8', 'p', ${now + 1}, 20, 'reserved', ${now + 2000}, 'base', '0x${'11'.repeat(20)}', '${limits}');
       INSERT INTO limit_counters (account_id, policy, limit_id, window_key, bucket, usd, n, reserved_usd) VALUES
        ('acc8', 'p', 'daily', 'day', ${dayFrom}, 50, 2, 50);
       INSERT INTO verdict_log (id, account_id, at, key_id, key_name, endpoint, verdict, risk, failure_modes, policy, reserved_usd, reservation_id)
        VALUES ('${logged}', 'acc8', ${now + 7}, 'k', 'agent', '/v1/guard', 'proceed', 'low', '[]', NULL, 30, '${logged}');`,
      );
      const s = await openStore({ databaseUrl: fresh });
      try {
        const q = { accountId: 'acc8', limit: 10, before: null, keyId: null, verdict: null, since: null };
        t.equal((await s.verdictPage(q))[0].reservation, 'reserved', "the verdict row finds its reservation's state");
        const due = await s.dueReservations(now + 2000, 10);
        t.same(
          due.map((d) => [d.id, d.at]),
          [
            [logged, now + 7],
            [bare, now + 1],
          ],
          "the logged one is keyed at its verdict row's time, the other keeps its own",
        );
        t.equal(
          await s.settleReservation({ id: logged, at: now }, 'released'),
          false,
          'its old time no longer finds it',
        );
        t.equal(await s.settleReservation(due[0], 'released'), true);
        t.equal(await s.settleReservation(due[1], 'committed'), true);
        t.equal((await s.verdictPage(q))[0].reservation, 'released');
        const [u] = await s.limitUsage('acc8', 'p', [day(dayFrom, 1000)]);
        t.same([u.reservedUsd, u.committedUsd, u.count], [0, 20, 1], 'amounts and counts unchanged by the migration');
      } finally {
        await s.close();
      }
    },
  );

  t.test(
    `${h.name}: migration 9 keeps every reservation and payment, and their states are still checked`,
    async (t) => {
      const fresh = await migratedTo(h, 8);
      const now = Date.now();
      const dayFrom = now - 1000;
      const created = timeSql(h, now);
      const old = timeSql(h, now - 600_000);
      const due = `0x${'e5'.repeat(32)}`;
      const done = `0x${'f6'.repeat(32)}`;
      const limits = JSON.stringify([['daily', 'day', dayFrom]]);
      await h.exec(
        fresh,
        `INSERT INTO accounts (id, created_at) VALUES ('acc9', ${created});
       INSERT INTO reservations (at, id, account_id, policy, usd, state, expires_at, chain, actor, limits) VALUES
        (${now}, '${due}', 'acc9', 'p', 30, 'reserved', ${now + 1000}, 'base', '0x${'11'.repeat(20)}', '${limits}'),
        (${now + 1}, '${done}', 'acc9', 'p', 20, 'committed', NULL, 'base', NULL, '${limits}');
       INSERT INTO limit_counters (account_id, policy, limit_id, window_key, bucket, usd, n, reserved_usd) VALUES
        ('acc9', 'p', 'daily', 'day', ${dayFrom}, 50, 2, 30);
       INSERT INTO payments (id, asset, payer, nonce, pay_to, value, network, x402_version, payload, valid_before, state,
          tx_hash, attempts, last_error, resource, created_at, updated_at) VALUES
        ('pay9', '0xasset', '0xpayer', '0x${'01'.repeat(32)}', '0xpayto', '10000', 'eip155:8453', 2, '{}', ${Math.floor(now / 1000) + 60},
          'settling', NULL, 1, 'rpc down', '/v1/decide', ${old}, ${old});`,
      );
      const s = await openStore({ databaseUrl: fresh });
      try {
        const [u] = await s.limitUsage('acc9', 'p', [day(dayFrom, 1000)]);
        t.same([u.reservedUsd, u.committedUsd, u.count], [30, 20, 2], 'the counters read as before');
        const dueNow = await s.dueReservations(now + 2000, 10);
        t.same(
          dueNow.map((d) => [d.id, d.at]),
          [[due, now]],
          'the reserved one is due at its own time, the committed one is not',
        );
        t.equal(await s.settleReservation(dueNow[0], 'released'), true, 'and it is released');
        const unsettled = await s.listUnsettledPayments(60_000, 10);
        t.same(
          unsettled.map((p) => [p.id, p.state, p.attempts, p.lastError]),
          [['pay9', 'settling', 1, 'rpc down']],
          'the payment is kept whole and still found unsettled',
        );
        t.equal(await s.updatePayment('pay9', ['settling'], 'settled', { txHash: '0xabc' }), true);
        t.equal((await s.getPayment('pay9'))?.state, 'settled');
        await t.rejects(
          h.exec(fresh, `UPDATE reservations SET state = 'spent' WHERE id = '${done}'`),
          'a reservation state outside the three is refused',
        );
        await t.rejects(
          h.exec(fresh, "UPDATE payments SET state = 'lost' WHERE id = 'pay9'"),
          'a payment state outside the four is refused',
        );
        for (const state of ['reserved', 'committed', 'released'])
          await h.exec(fresh, `UPDATE reservations SET state = '${state}' WHERE id = '${done}'`);
        t.pass('each of the three reservation states is accepted');
      } finally {
        await s.close();
      }
    },
  );

  t.test(`${h.name}: 40 concurrent reservations of 100 under 1,000 on three stores: exactly 10`, async (t) => {
    const owner = newKey('race@example.com');
    await store.createApiKey(owner);
    const stores = [store, await openStore({ databaseUrl: url }), await openStore({ databaseUrl: url })];
    try {
      const since = Date.now() - 1000;
      const out = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          stores[i % 3].reserve({
            id: randomUUID(),
            accountId: owner.id,
            policy: 'race',
            limits: [day(since, 1000)],
            usd: 100,
            at: Date.now(),
            expiresAt: Date.now() + 60_000,
            chain: 'base',
            actor: null,
          }),
        ),
      );
      t.equal(out.filter((r) => r.ok).length, 10);
      const [u] = await store.limitUsage(owner.id, 'race', [day(since, 1000)]);
      t.same([u.reservedUsd, u.count], [1000, 10]);
    } finally {
      await stores[1].close();
      await stores[2].close();
    }
  });

  t.test(`${h.name}: a lease is held by one holder until it lapses`, async (t) => {
    t.equal(await store.takeLease('release', 'a', 200), true);
    t.equal(await store.takeLease('release', 'b', 200), false);
    t.equal(await store.takeLease('release', 'a', 200), true, 'renewed by its holder');
    await new Promise((r) => setTimeout(r, 250));
    t.equal(await store.takeLease('release', 'b', 200), true, 'taken over once lapsed');
  });
}
