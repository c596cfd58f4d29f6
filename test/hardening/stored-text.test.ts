/**
 * Signup text goes into the key store. Text no store can hold (PostgreSQL refuses NUL in text;
 * neither store can keep an unpaired surrogate as UTF-8) is a 422 naming the field, the same on
 * SQLite and PostgreSQL, and costs no signup; it is never a 503 "store unavailable".
 */
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { pgAdmin } from '../helpers/pg.js';
import { startTestApp, post } from '../helpers/app.js';

async function suite(t: Test, databaseUrl?: string): Promise<void> {
  const app = await startTestApp({
    BILLING: 'on',
    SIGNUPS_PER_HOUR: '1',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  t.teardown(() => app.close());
  const url = `${app.url}/v1/api-keys/signup`;
  const refused: Array<[string, Record<string, unknown>, Array<string | number>, string]> = [
    [
      'NUL in company',
      { email: 'a@example.com', company: 'Acme\u0000Corp' },
      ['body', 'company'],
      'string_pattern_mismatch',
    ],
    [
      'NUL in full_name',
      { email: 'a@example.com', full_name: '\u0000' },
      ['body', 'full_name'],
      'string_pattern_mismatch',
    ],
    [
      'NUL in use_case',
      { email: 'a@example.com', use_case: 'trading\u0000bot' },
      ['body', 'use_case'],
      'string_pattern_mismatch',
    ],
    ['NUL in email', { email: 'a\u0000@example.com' }, ['body', 'email'], 'value_error'],
    [
      'lone surrogate in company',
      { email: 'a@example.com', company: 'Acme \ud800' },
      ['body', 'company'],
      'string_unicode',
    ],
    [
      'lone surrogate in use_case',
      { email: 'a@example.com', use_case: '\udfffx' },
      ['body', 'use_case'],
      'string_unicode',
    ],
  ];
  for (const [name, body, loc, type] of refused) {
    const r = await post(url, body);
    t.equal(r.status, 422, `${name}: 422`);
    t.same(
      Array.isArray(r.body.detail) ? r.body.detail.map((d: { loc: unknown; type: string }) => [d.loc, d.type]) : r.body,
      [[loc, type]],
      `${name}: names ${loc.join('.')}`,
    );
  }
  t.equal((await app.store.listApiKeys()).length, 0, 'no key was stored');
  // SIGNUPS_PER_HOUR is 1: the refusals above did not use it up.
  const ok = await post(url, {
    email: 'a@example.com',
    company: 'Acme \ud83e\udd84 Corp',
    full_name: '\u202eRTL name',
    use_case: 'bots',
  });
  t.equal(ok.status, 200, 'a well-formed signup with astral and RTL characters is served');
  t.equal(ok.body.ok, true);
  const [key] = await app.store.listApiKeys();
  t.equal(key.company, 'Acme \ud83e\udd84 Corp', 'astral characters are stored intact');
  t.equal(key.fullName, '\u202eRTL name');
}

t.test('sqlite', (t) => suite(t));

const found = await pgAdmin();
if (typeof found === 'string' && process.env.CI === 'true') t.fail(`PostgreSQL is required in CI: ${found}`);
t.test(
  'postgres',
  { skip: typeof found === 'string' ? `PostgreSQL unreachable (${found}); set PG_TEST_URL` : false },
  async (t) => {
    if (typeof found === 'string') return;
    const admin = found.pool;
    const schema = `pf_text_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE SCHEMA ${schema}`);
    t.teardown(async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    });
    const u = new URL(found.url);
    u.searchParams.set('options', `-c search_path=${schema}`);
    await suite(t, u.toString());
  },
);
