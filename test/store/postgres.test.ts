import { randomBytes } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { openStore, StoreError } from '../../src/store/index.js';
import { storeSuite } from './suite.js';
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
