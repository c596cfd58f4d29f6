/**
 * The SQLite store's checkpoint thread (src/store/checkpointer.ts): its own connection to the
 * store's file, copying committed WAL frames into the database file so that the answers' thread,
 * whose connection has `wal_autocheckpoint = 0`, does not copy pages or sync the file in a commit.
 * A PASSIVE checkpoint takes no lock that a writer or a reader waits for; the RESTART that follows
 * it once the WAL is long holds the write lock for the frames the PASSIVE one left (RESTART_FRAMES).
 *
 * Every `intervalMs` it looks at the `-wal` file and checkpoints when the file changed since the
 * last look; once a checkpoint has copied every frame, it starts the WAL afresh itself
 * (startAfresh), so that the store's next commit does not. Messages in: `{ op: 'now', id }`
 * (checkpoint at once, answer `{ id, result }`), `{ op: 'close' }` (close the connection, answer
 * `'closed'`). Out: `'ready'` once the connection is open.
 */
import { statSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const data = workerData as { file: string; intervalMs: number };
const port = parentPort;
if (port === null) throw new Error('the checkpoint thread runs as a worker');

const db = new Database(data.file, { fileMustExist: true });
// The checkpoint syncs the WAL before it copies and the database file after, as the answers'
// connection would have (synchronous = NORMAL in WAL mode).
db.pragma('synchronous = NORMAL');
db.pragma('wal_autocheckpoint = 0');
// A checkpoint never waits here for a lock: one that cannot have it now is tried at the next look.
db.pragma('busy_timeout = 0');

/**
 * WAL frames past which the WAL is started again from its beginning (SQLite's own checkpoint
 * threshold). A PASSIVE checkpoint copies while the store writes, so under steady writes it never
 * copies the last frames and the WAL only grows; a RESTART checkpoint, which holds the write lock,
 * copies the few frames the PASSIVE one left and lets the next commit start the WAL afresh.
 */
const RESTART_FRAMES = 1000;

interface Result {
  busy: number;
  log: number;
  checkpointed: number;
}

let seen = '';
function walState(): string {
  try {
    const s = statSync(`${data.file}-wal`);
    return `${s.size}/${s.mtimeMs}`;
  } catch {
    return 'none';
  }
}

/**
 * Starts the WAL afresh on this thread. The first commit into a WAL whose frames have all been
 * copied starts it again from its beginning: it writes a new WAL header and syncs it (and, the
 * first time, the directory that holds the new file). Left to the store's connection, that sync
 * fell in the next commit on the answers' thread each time the checkpoints had caught up, which at
 * light load is nearly every commit (0.8 ms against 0.08 ms for a commit that appends, on the
 * bench's host; an fsync takes the disk's own time). Here a commit that changes nothing a reader
 * sees (the schema's `user_version`, set to itself) takes that sync, and the store's next commit
 * appends after it. It runs only if the WAL has not changed since `after`, its state when the
 * checkpoint began (nothing was committed since: a commit then is the one that started the WAL,
 * or its frames were not all copied, and either way they wait for the next look), and never waits
 * for the write lock: a writer that holds it is starting the WAL itself. Returns whether it
 * wrote; `seen` then takes its own change, so that it is not checkpointed and started afresh again
 * at the next look.
 */
function startAfresh(after: string): boolean {
  try {
    return db
      .transaction(() => {
        if (walState() !== after) return false;
        db.pragma(`user_version = ${Number(db.pragma('user_version', { simple: true }))}`);
        return true;
      })
      .immediate();
  } catch {
    return false;
  }
}

/**
 * The most frames a checkpoint may have copied for the thread to start the WAL afresh after it.
 * Past that the store commits often enough that its next commit would likely come while the
 * thread's own commit holds the write lock, and wait for it at least a millisecond (SQLite's busy
 * handler sleeps), more than the sync it would save; and under such load the WAL is caught up at
 * most once a look. The thread then leaves the new WAL to the store's next commit.
 */
const AFRESH_FRAMES = 64;

function checkpoint(): Result {
  // A checkpoint reads the WAL and writes the database file: the WAL's state changes only by a commit.
  const before = walState();
  const passive = (db.pragma('wal_checkpoint(PASSIVE)') as Result[])[0];
  const r = passive.log < RESTART_FRAMES ? passive : (db.pragma('wal_checkpoint(RESTART)') as Result[])[0];
  const caughtUp = r.busy === 0 && r.log > 0 && r.checkpointed === r.log;
  // A commit during the checkpoint left frames it did not copy: they are for the next look.
  if (caughtUp && r.log <= AFRESH_FRAMES && startAfresh(before)) seen = walState();
  return r;
}

/** A RESTART that found the write lock or a reader busy is tried again this soon, not at the next look. */
const RETRY_MS = 5;
let retry: NodeJS.Timeout | null = null;

function look(): void {
  retry = null;
  const now = walState();
  if (now === seen || now === 'none') return;
  // The state is read before the checkpoint: a commit during it is seen at the next look (unless
  // the WAL is then started afresh here, which only happens when no commit came since).
  seen = now;
  try {
    const r = checkpoint();
    if (r.busy === 1 && r.log >= RESTART_FRAMES) {
      seen = '';
      retry = setTimeout(look, RETRY_MS);
    }
  } catch (err) {
    // A checkpoint that could not run (the disk, a lock) is tried again when the WAL changes;
    // the thread ends only when its connection cannot work at all (src/store/checkpointer.ts).
    if (!db.open) throw err;
  }
}

const timer = setInterval(() => {
  if (retry === null) look();
}, data.intervalMs);

port.on('message', (m: { op: 'now'; id: number } | { op: 'close' }) => {
  if (m.op === 'close') {
    clearInterval(timer);
    if (retry !== null) clearTimeout(retry);
    db.close();
    // The connection is closed: the store ends the thread on this word.
    port.postMessage('closed');
    return;
  }
  try {
    port.postMessage({ id: m.id, result: checkpoint() });
  } catch (err) {
    port.postMessage({ id: m.id, error: (err as Error).message });
  }
});

// A WAL with no frame yet (a store just opened) is started here too, so that the store's first
// commit does not create and sync it.
const initial = walState();
if (initial.startsWith('0/') && startAfresh(initial)) seen = walState();

port.postMessage('ready');
