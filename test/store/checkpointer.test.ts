/**
 * The SQLite store's WAL checkpoints on a thread of their own (src/store/checkpointer.ts,
 * bench/README.md "Eighth pass"): commits reach the database file without the store's
 * connection copying them, the WAL starts afresh under steady writes instead of growing, the
 * thread (not the store's commits) starts it afresh once it has caught up, and a thread that
 * cannot start leaves checkpoints to the connection as SQLite's default has them.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, copyFileSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { Checkpointer } from '../../src/store/checkpointer.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { verdictRow } from '../helpers/verdict-row.js';

const dir = mkdtempSync(join(tmpdir(), 'preflight-checkpoint-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Rows of the account in a copy of the database file alone, without its WAL: what has been checkpointed. */
function rowsInFile(file: string, accountId: string): number {
  const copy = join(dir, `copy-${randomUUID()}.db`);
  copyFileSync(file, copy);
  const db = new Database(copy, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM verdict_log WHERE account_id = ?').get(accountId) as { n: number }).n;
  } catch {
    return -1; // a copy taken while a checkpoint wrote it
  } finally {
    db.close();
  }
}

async function openFileStore(name: string): Promise<{ store: SqliteStore; file: string }> {
  const file = join(dir, name);
  const store = SqliteStore.open(file);
  await store.migrate();
  await store.checkpoints?.ready();
  return { store, file };
}

t.test('commits reach the database file within moments, far below 1,000 pages of WAL', async (t) => {
  const { store, file } = await openFileStore('a.db');
  t.teardown(() => store.close());
  t.ok(store.checkpoints?.running, 'the thread runs the checkpoints');
  const account = randomUUID();
  // A few pages: the store's own connection would not checkpoint them before 1,000.
  await store.appendVerdicts(Array.from({ length: 200 }, () => verdictRow(account)));
  let seen = 0;
  for (let i = 0; i < 100 && seen !== 200; i++) {
    await new Promise((r) => setTimeout(r, 50));
    seen = rowsInFile(file, account);
  }
  t.equal(seen, 200, 'the database file alone holds every row');
});

t.test('under steady writes the WAL is started afresh rather than grown', async (t) => {
  const { store, file } = await openFileStore('b.db');
  t.teardown(() => store.close());
  const account = randomUUID();
  // Each commit writes at least two WAL frames (a table page and an index page): a WAL never started
  // afresh would end with 20,000 or more.
  const commits = 10_000;
  for (let i = 0; i < commits; i++) {
    await store.appendVerdicts([verdictRow(account)]);
    // Paced about as the service writes under load, a few hundred commits per look of the thread.
    if (i % 10 === 9) await new Promise((r) => setTimeout(r, 2));
  }
  const frameBytes = 4096 + 24;
  const frames = Math.round(statSync(`${file}-wal`).size / frameBytes);
  t.ok(frames < commits, `the WAL's high-water mark is ${frames} frames for ${commits} commits`);
  const last = await store.checkpoints!.now();
  t.equal(last.busy, 0);
  t.equal(last.checkpointed, last.log, 'once the writes stop, everything is checkpointed');
  t.equal(rowsInFile(file, account), commits);
});

/**
 * The WAL header's checkpoint sequence and salts (bytes 12 to 24 of the file, per SQLite's WAL
 * format): a commit that starts the WAL afresh writes new ones, and syncs them; one that appends
 * leaves them as they are.
 */
function walHeader(file: string): string {
  const fd = openSync(`${file}-wal`, 'r');
  try {
    const b = Buffer.alloc(24);
    readSync(fd, b, 0, 24, 0);
    return b.subarray(12, 24).toString('hex');
  } finally {
    closeSync(fd);
  }
}

t.test("once it has caught up the thread starts the WAL afresh, and the store's commits append", async (t) => {
  const { store, file } = await openFileStore('d.db');
  t.teardown(() => store.close());
  const account = randomUUID();
  for (let round = 0; round < 5; round++) {
    await store.appendVerdicts([verdictRow(account)]);
    const before = walHeader(file);
    let after = before;
    for (let i = 0; i < 80 && after === before; i++) {
      await new Promise((r) => setTimeout(r, 25));
      after = walHeader(file);
    }
    t.not(after, before, `round ${round}: the thread started the WAL afresh after its checkpoint`);
    await store.appendVerdicts([verdictRow(account)]);
    t.equal(walHeader(file), after, `round ${round}: the store's commit appended, with no header to write and sync`);
  }
  // Idle, the thread writes nothing: its own commit is not taken for a change to checkpoint. The
  // last commit is left to be checkpointed, and the WAL started afresh after it, first.
  const last = walHeader(file);
  for (let i = 0; i < 80 && walHeader(file) === last; i++) await new Promise((r) => setTimeout(r, 25));
  t.not(walHeader(file), last, 'the last commit was checkpointed and the WAL started afresh after it');
  await new Promise((r) => setTimeout(r, 150));
  const idle = [walHeader(file), statSync(`${file}-wal`).mtimeMs];
  await new Promise((r) => setTimeout(r, 500));
  t.same([walHeader(file), statSync(`${file}-wal`).mtimeMs], idle, 'nothing written while nothing is committed');
  t.equal(rowsInFile(file, account), 10, 'every commit reached the database file');
});

t.test('a store opened again finds its WAL started by the thread before its first commit', async (t) => {
  const first = await openFileStore('e.db');
  await first.store.close();
  t.equal(statSync(`${first.file}-wal`, { throwIfNoEntry: false }), undefined, 'closing removed the WAL');
  const { store, file } = await openFileStore('e.db');
  t.teardown(() => store.close());
  const started = walHeader(file);
  t.ok(statSync(`${file}-wal`).size > 32, "the WAL holds the thread's commit once the thread is ready");
  await store.appendVerdicts([verdictRow(randomUUID())]);
  t.equal(walHeader(file), started, "the store's first commit appended");
});

t.test('a thread that cannot start leaves checkpoints to the connection, at SQLite’s default', async (t) => {
  const file = join(dir, 'c.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  t.teardown(() => db.close());
  // The thread opens only an existing file: this one is not there.
  const c = new Checkpointer(db, join(dir, 'missing', 'c.db'));
  await c.ready();
  t.equal(c.running, false);
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000);
  await t.rejects(c.now(), /ended/);

  const good = new Checkpointer(db, file);
  await good.ready();
  t.equal(good.running, true);
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0, 'the connection no longer checkpoints');
  await good.close();
  t.equal(good.running, false);
});
