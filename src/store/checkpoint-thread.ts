/**
 * The SQLite store's checkpoints, in a thread of their own (README.md, "Checkpoints off the event loop"): every
 * `everyMs` a PASSIVE checkpoint moves the pages the write-ahead log holds into the database
 * file. PASSIVE never waits for a lock and never stops a writer; the copy and its fsync happen
 * here, off the event loop that commits. Started by ./sqlite.ts; `stop` closes the connection.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, everyMs } = workerData as { file: string; everyMs: number };
const db = new Database(file);
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Another process holds the checkpoint now; the next round tries again.
  }
}, everyMs);
parentPort?.postMessage('ready');
parentPort?.on('message', (m: unknown) => {
  if (m !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
