import { randomBytes, randomUUID } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import t, { type Test } from 'tap';
import { openStore, StoreError } from '../../src/store/index.js';
import { countOneTurn, newKey, storeSuite } from './suite.js';
import { accountsSuite } from './accounts-suite.js';

/** An admin connection to the machine's PostgreSQL (user postgres, else root); every run works in schemas of its own
 * (DATABASE_URL's `options=-c search_path=...`), which also proves that deployment style works. */
const CANDIDATES = process.env.PG_TEST_URL
  ? [process.env.PG_TEST_URL]
  : ['postgres://postgres@127.0.0.1:5432/test', 'postgres://root@127.0.0.1:5432/test'];
let ADMIN_URL = CANDIDATES[0];

async function reachable(): Promise<string | null> {
  let first: string | null = null;
  for (const url of CANDIDATES) {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await c.connect();
      ADMIN_URL = url;
      return null;
    } catch (err) {
      first ??= (err as Error).message;
    } finally {
      await c.end().catch(() => undefined);
    }
  }
  return first;
}

/**
 * A TCP proxy to `url`'s server, closed when the test ends: `onData` sees each chunk the client sends
 * and forwards it (or not); the URL through the proxy is returned.
 */
async function proxied(
  t: Test,
  url: URL,
  onData: (chunk: Buffer, client: net.Socket, upstream: net.Socket) => void,
): Promise<URL> {
  const proxy = net.createServer((client) => {
    const upstream = net.connect(Number(url.port || 5432), url.hostname);
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => onData(chunk, client, upstream));
    const drop = () => {
      client.destroy();
      setTimeout(() => upstream.destroy(), 300);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => proxy.close(() => r())));
  const via = new URL(url);
  via.port = String((proxy.address() as net.AddressInfo).port);
  return via;
}

const problem = await reachable();
if (problem !== null) {
  if (process.env.CI === 'true') t.fail(`PostgreSQL at ${ADMIN_URL} is required in CI: ${problem}`);
  else t.plan(0, `skipped: PostgreSQL at ${ADMIN_URL} is unreachable (${problem}); set PG_TEST_URL`);
} else {
  const created: string[] = [];
  const admin = new pg.Pool({ connectionString: ADMIN_URL, max: 2 });
  const urlOf = (db: string) => {
    const u = new URL(ADMIN_URL);
    u.pathname = `/${db}`;
    return u.toString();
  };
  t.teardown(async () => {
    for (const schema of created) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  const pgHarness = {
    name: 'postgres',
    async newUrl(): Promise<string> {
      const schema = `pf_test_${process.pid}_${randomBytes(4).toString('hex')}`;
      await admin.query(`CREATE SCHEMA ${schema}`);
      created.push(schema);
      const u = new URL(ADMIN_URL);
      u.searchParams.set('options', `-c search_path=${schema}`);
      return u.toString();
    },
    async dump(url: string): Promise<Record<string, unknown[]>> {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const { rows } = await c.query<{ table_name: string }>(
          'SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()',
        );
        const out: Record<string, unknown[]> = {};
        for (const { table_name } of rows) out[table_name] = (await c.query(`SELECT * FROM "${table_name}"`)).rows;
        return out;
      } finally {
        await c.end();
      }
    },
  };
  storeSuite(pgHarness);
  accountsSuite({
    ...pgHarness,
    dialect: 'postgres',
    async exec(url: string, sql: string) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(sql);
      } finally {
        await c.end();
      }
    },
  });

  t.test('postgres: a reservation whose COMMIT answer is lost does not stand once the store answers', async (t) => {
    const url = new URL(await pgHarness.newUrl());
    // A proxy that, when armed, passes the next COMMIT on to the server and cuts the client before its answer.
    let armed = false;
    const via = await proxied(t, url, (chunk, client, upstream) => {
      upstream.write(chunk);
      if (armed && chunk.includes('COMMIT\u0000')) {
        armed = false;
        upstream.unpipe(client);
        client.destroy();
        setTimeout(() => upstream.destroy(), 300);
      }
    });
    const store = await openStore({ databaseUrl: via.toString() });
    t.teardown(() => store.close());
    const owner = newKey('lost-commit@example.com');
    t.equal(await store.createApiKey(owner), true);
    const since = Date.UTC(2026, 0, 1);
    const limits = [
      { id: 'daily', windowKey: 'day', bucket: since, from: since, step: 86_400_000, maxUsd: 1000, maxCount: null },
    ];
    // Each with its verdict-log row, written in the same transaction (docs/policies.md §10).
    const ask = (id: string) =>
      store.reserve({
        id,
        accountId: owner.id,
        policy: 'p',
        limits,
        usd: 10,
        at: since + 1000,
        expiresAt: since + 60_000,
        chain: 'base',
        actor: null,
        verdict: {
          id,
          accountId: owner.id,
          at: since + 1000,
          keyId: owner.id,
          keyName: 'owner',
          endpoint: '/v1/guard',
          verdict: 'proceed',
          risk: 'low',
          failureModes: [],
          policy: { name: 'p', version: 1, hash: `0x${'ab'.repeat(32)}` },
          reservedUsd: 10,
        },
      });
    const logged = async () =>
      (
        await store.verdictPage({
          accountId: owner.id,
          limit: 50,
          before: null,
          keyId: null,
          verdict: null,
          since: null,
        })
      ).map((v) => v.id);
    const answered = randomUUID();
    t.equal((await ask(answered)).ok, true);
    const lost = randomUUID();
    armed = true;
    await t.rejects(ask(lost), 'the COMMIT got no answer');
    const state = async () =>
      (
        await admin.query(
          `SELECT state FROM ${url.searchParams.get('options')?.split('=')[1]}.reservations WHERE id = $1`,
          [lost],
        )
      ).rows[0]?.state;
    // The server applies the COMMIT it was sent; wait until it shows.
    for (let i = 0; (await state()) !== 'reserved' && i < 50; i++) await new Promise((r) => setTimeout(r, 20));
    t.equal(await state(), 'reserved', 'the server did commit it');
    t.same((await logged()).sort(), [answered, lost].sort(), 'with its verdict row');
    const usage = await store.limitUsage(owner.id, 'p', limits);
    t.equal(usage[0].count, 1, 'only the answered reservation counts');
    t.equal(usage[0].reservedUsd, 10);
    t.equal(await state(), 'released', 'the lost one is voided by id');
    t.same(
      await logged(),
      [answered],
      'and its verdict row, which said proceed, is deleted with it (the answer was a wait)',
    );
    t.equal((await ask(randomUUID())).ok, true, 'and reserving goes on');
    t.equal((await store.limitUsage(owner.id, 'p', limits))[0].count, 2);
  });

  t.test(
    'postgres: counts asked together are written as groups, each exact and committed before it answers',
    async (t) => {
      const url = new URL(await pgHarness.newUrl());
      const schema = url.searchParams.get('options')?.split('=')[1];
      // A proxy that counts the statements that write the quota's row (the text of each is sent with it).
      let writes = 0;
      const via = await proxied(t, url, (chunk, _client, upstream) => {
        for (
          let at = chunk.indexOf('INSERT INTO key_usage');
          at >= 0;
          at = chunk.indexOf('INSERT INTO key_usage', at + 1)
        )
          writes++;
        upstream.write(chunk);
      });
      const store = await openStore({ databaseUrl: via.toString() });
      const k = newKey('pg-group@example.com');
      await store.createApiKey(k);
      const used = async (period: string) =>
        (await admin.query(`SELECT used FROM ${schema}.key_usage WHERE key_id = $1 AND period = $2`, [k.id, period]))
          .rows[0]?.used;

      writes = 0;
      await countOneTurn(t, store, k.id);
      t.equal(Number(await used('2026-11')), 150, 'what the callers were told is committed');
      t.equal(Number(await used('2026-12')), 100);
      t.ok(writes <= 6, `300 counts wrote the row in ${writes} statements, not one each`);

      // A group with room for part of it: the first five take the last five numbers.
      const room = await Promise.all(Array.from({ length: 10 }, () => store.consumeQuota(k.id, '2026-12', 105)));
      t.same(
        room.map((r) => [r.allowed, r.used]),
        [
          [true, 101],
          [true, 102],
          [true, 103],
          [true, 104],
          [true, 105],
          [false, 105],
          [false, 105],
          [false, 105],
          [false, 105],
          [false, 105],
        ],
      );
      t.equal(Number(await used('2026-12')), 105);

      // Counts still waiting for their turn when the store closes are written first.
      const late = Array.from({ length: 10 }, () => store.consumeQuota(k.id, '2027-01', 100));
      await store.close();
      t.same(
        (await Promise.all(late)).map((r) => r.used),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      );
      t.equal(Number(await used('2027-01')), 10, 'and committed before the connections closed');
    },
  );

  t.test('postgres: an unreachable server gives a clear StoreError without the password', async (t) => {
    const err = await openStore(
      { databaseUrl: 'postgres://svc:hunter2@127.0.0.1:1/preflight' },
      { connectTimeoutMs: 1000 },
    ).catch((e: unknown) => e);
    t.ok(err instanceof StoreError);
    t.match(
      (err as Error).message,
      /cannot reach PostgreSQL at postgres:\/\/svc@127\.0\.0\.1:1\/preflight \(DATABASE_URL\).*ECONNREFUSED/,
    );
    t.notMatch((err as Error).message, /hunter2/);
  });

  t.test('postgres: a database that does not exist is named in the error', async (t) => {
    const err = await openStore({ databaseUrl: urlOf('pf_no_such_database') }).catch((e: unknown) => e);
    t.ok(err instanceof StoreError);
    t.match((err as Error).message, /database "pf_no_such_database" does not exist \[3D000\]/);
  });

  t.test('postgres: a malformed URL is refused before any connection', async (t) => {
    const err = await openStore({ databaseUrl: 'postgres://u:p@[bad/db' }).catch((e: unknown) => e);
    t.ok(err instanceof StoreError, String(err));
    t.match((err as Error).message, /DATABASE_URL is not a valid PostgreSQL URL/);
    t.notMatch((err as Error).message, /:p@/);
  });
}
