/** The machine's PostgreSQL for tests: PG_TEST_URL, else the usual local superuser URLs. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_ADMIN_URLS = process.env.PG_TEST_URL
  ? [process.env.PG_TEST_URL]
  : ['postgres://postgres@127.0.0.1:5432/test', 'postgres://root@127.0.0.1:5432/test'];

/** A one-connection pool on the first URL that answers, or why none did. */
export async function pgAdmin(): Promise<{ pool: pg.Pool; url: string } | string> {
  let problem = '';
  for (const url of PG_ADMIN_URLS) {
    const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 2000 });
    try {
      await pool.query('SELECT 1');
      return { pool, url };
    } catch (err) {
      problem ||= (err as Error).message;
      await pool.end().catch(() => undefined);
    }
  }
  return problem;
}

/** What pgSchemaUrl needs of a tap test. */
interface TestLike {
  fail(message: string): void;
  plan(n: number, comment?: string): void;
  teardown(fn: () => unknown): void;
}

/**
 * A fresh schema on the machine's PostgreSQL for one test, dropped when the test ends: the
 * DATABASE_URL that puts a service in it. Without PostgreSQL the test fails in CI and is skipped
 * elsewhere, and the answer is null.
 */
export async function pgSchemaUrl(t: TestLike, prefix: string): Promise<string | null> {
  const admin = await pgAdmin();
  if (typeof admin === 'string') {
    if (process.env.CI === 'true') t.fail(`PostgreSQL is required in CI: ${admin}`);
    else t.plan(0, `skipped: PostgreSQL unreachable (${admin}); set PG_TEST_URL`);
    return null;
  }
  const schema = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin.pool.query(`CREATE SCHEMA ${schema}`);
  t.teardown(async () => {
    await admin.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.pool.end();
  });
  const u = new URL(admin.url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}
