import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { openStore, StoreError } from '../../src/store/index.js';
import { countOneTurn, newKey, storeSuite } from './suite.js';
import { accountsSuite } from './accounts-suite.js';
import { PAYMENT_COLUMNS, RESERVATION_COLUMNS } from '../../src/store/rows.js';

const dir = mkdtempSync(join(tmpdir(), 'pf-sqlite-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

function dump(url: string): Record<string, unknown[]> {
  const db = new Database(url.replace(/^sqlite:/, ''), { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
    return Object.fromEntries(tables.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name}"`).all()]));
  } finally {
    db.close();
  }
}

const sqliteHarness = {
  name: 'sqlite',
  newUrl: async () => `sqlite:${join(dir, `db${++n}`, 'preflight.db')}`,
  dump: async (url: string) => dump(url),
};
storeSuite(sqliteHarness);
accountsSuite({
  ...sqliteHarness,
  dialect: 'sqlite',
  async exec(url, sql) {
    const path = url.replace(/^sqlite:/, '');
    mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    try {
      db.exec(sql);
    } finally {
      db.close();
    }
  },
});

t.test('sqlite: the file is in WAL mode and its parent folder is created', async (t) => {
  const url = `sqlite:${join(dir, 'nested', 'deeper', 'x.db')}`;
  const s = await openStore({ databaseUrl: url });
  await s.close();
  const db = new Database(url.slice(7), { readonly: true });
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  db.close();
});

t.test('sqlite: the raw key is in none of the files on disk (db, wal, shm)', async (t) => {
  const folder = join(dir, 'bytes');
  const s = await openStore({ databaseUrl: `sqlite:${join(folder, 'k.db')}` });
  const k = newKey('bytes@example.com');
  await s.createApiKey(k);
  const files = readdirSync(folder);
  t.ok(files.includes('k.db-wal'), 'the write is still in the WAL, which is searched too');
  const bytes = Buffer.concat(files.map((f) => readFileSync(join(folder, f))));
  t.ok(bytes.includes(k.keyHash), 'the hash is on disk, so the search is real');
  t.notOk(bytes.includes(k.raw.slice(4)), 'the random part of the key is not');
  await s.close();
});

t.test('sqlite: an unusable path gives a StoreError naming it', async (t) => {
  const blocker = join(dir, 'a-file');
  await openStore({ databaseUrl: `sqlite:${blocker}` }).then((s) => s.close());
  const err = await openStore({ databaseUrl: `sqlite:${join(blocker, 'sub', 'x.db')}` }).catch((e: unknown) => e);
  t.ok(err instanceof StoreError);
  t.match((err as Error).message, /cannot open the SQLite database at .*a-file\/sub\/x\.db/);
});

t.test('sqlite: counts asked for together commit as one group, each exact and durable before it answers', async (t) => {
  const url = `sqlite:${join(dir, 'group', 'g.db')}`;
  const s = await openStore({ databaseUrl: url });
  const k = newKey('group@example.com');
  await s.createApiKey(k);
  await countOneTurn(t, s, k.id);
  // Read by another connection: what the callers were told is on disk, not just in this process.
  const db = new Database(url.slice(7), { readonly: true });
  t.same(db.prepare('SELECT period, used FROM key_usage ORDER BY period').all(), [
    { period: '2026-11', used: 150 },
    { period: '2026-12', used: 100 },
  ]);
  db.close();
  await s.close();
});

t.test('sqlite: close() commits counts still waiting for their group', async (t) => {
  const url = `sqlite:${join(dir, 'group-close', 'g.db')}`;
  const s = await openStore({ databaseUrl: url });
  const k = newKey('close@example.com');
  await s.createApiKey(k);
  const asks = Array.from({ length: 10 }, () => s.consumeQuota(k.id, '2026-11', 100));
  await s.close(); // before the group's turn comes
  t.same(
    (await Promise.all(asks)).map((r) => r.used),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
  const again = await openStore({ databaseUrl: url });
  t.equal(await again.getUsage(k.id, '2026-11'), 10);
  await again.close();
});

t.test('sqlite: a group that cannot commit fails every count in it, and none is recorded', async (t) => {
  const url = `sqlite:${join(dir, 'group-fail', 'g.db')}`;
  const s = await openStore({ databaseUrl: url });
  const k = newKey('fail@example.com');
  await s.createApiKey(k);
  await s.consumeQuota(k.id, '2026-11', 100);
  // Another connection holds the write lock past the busy timeout's reach.
  const other = new Database(url.slice(7), { timeout: 0 });
  other.pragma('busy_timeout = 0');
  other.exec('BEGIN IMMEDIATE');
  (s as unknown as { db: Database.Database }).db.pragma('busy_timeout = 50');
  const asks = await Promise.allSettled(Array.from({ length: 5 }, () => s.consumeQuota(k.id, '2026-11', 100)));
  other.exec('ROLLBACK');
  other.close();
  t.same(
    asks.map((a) => a.status),
    ['rejected', 'rejected', 'rejected', 'rejected', 'rejected'],
  );
  t.equal(await s.getUsage(k.id, '2026-11'), 1, 'only the count from before');
  await s.close();
});

t.test('sqlite: writing a reservation or a payment builds no temporary table for its state check', async (t) => {
  // A CHECK written as `state IN (...)` makes SQLite fill a temporary table with the listed
  // values on every row written (migration 9); the reservation is written once per answer under
  // a policy, the payment once per paid call.
  const url = `sqlite:${join(dir, 'checks', 'c.db')}`;
  const s = await openStore({ databaseUrl: url });
  await s.close();
  // Read and write: a read-only connection compiles no CHECK into its writes.
  const db = new Database(url.slice(7));
  try {
    const ephemeral = (sql: string, params: number): number =>
      (db.prepare(`EXPLAIN ${sql}`).all(...Array(params).fill(null)) as Array<{ opcode: string }>).filter(
        (r) => r.opcode === 'OpenEphemeral',
      ).length;
    const writes: Array<[string, string, number]> = [
      [
        'a reservation',
        `INSERT INTO reservations (${RESERVATION_COLUMNS.join(', ')}) VALUES (${RESERVATION_COLUMNS.map(() => '?').join(', ')})`,
        RESERVATION_COLUMNS.length,
      ],
      ['a settled reservation', "UPDATE reservations SET state = ? WHERE at = ? AND id = ? AND state = 'reserved'", 3],
      [
        'a payment',
        `INSERT INTO payments (${PAYMENT_COLUMNS.join(', ')}) VALUES (${PAYMENT_COLUMNS.map(() => '?').join(', ')})`,
        PAYMENT_COLUMNS.length,
      ],
      ["a payment's new state", 'UPDATE payments SET state = ?, updated_at = ? WHERE id = ?', 3],
    ];
    for (const [what, sql, params] of writes) t.equal(ephemeral(sql, params), 0, what);
    // The check itself still holds (the accounts suite writes each state through it).
    t.match(
      (db.prepare("SELECT sql FROM sqlite_master WHERE name = 'reservations'").get() as { sql: string }).sql,
      /CHECK \(state = 'reserved' OR state = 'committed' OR state = 'released'\)/,
    );
  } finally {
    db.close();
  }
});
