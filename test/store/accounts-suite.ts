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
      const fresh = await h.newUrl();
      // The schema as the release before accounts left it, with one key and its month's usage.
      await h.exec(
        fresh,
        h.dialect === 'sqlite'
          ? 'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)'
          : 'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
      );
      for (const m of MIGRATIONS.filter((m) => m.version <= 3)) {
        await h.exec(fresh, m[h.dialect]);
        await h.exec(
          fresh,
          h.dialect === 'sqlite'
            ? `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${m.version}, 'old', 0)`
            : `INSERT INTO schema_migrations (version, name) VALUES (${m.version}, 'old')`,
        );
      }
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
    t.equal(await store.settleReservation(due[0].id, 'released'), true);
    t.equal(await store.settleReservation(due[0].id, 'committed'), false, 'settled once');
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
