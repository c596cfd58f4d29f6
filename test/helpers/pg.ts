/** The machine's PostgreSQL for tests: PG_TEST_URL, else the usual local superuser URLs. */
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
