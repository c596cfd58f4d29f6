import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { openStore, StoreError } from '../../src/store/index.js';
import { newKey, storeSuite } from './suite.js';

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

storeSuite({
  name: 'sqlite',
  newUrl: async () => `sqlite:${join(dir, `db${++n}`, 'preflight.db')}`,
  dump: async (url) => dump(url),
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
