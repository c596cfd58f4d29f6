/**
 * One list refresh off the main thread (src/screening/worker.ts): download, parse and pack the
 * list named in workerData, post the packed list (its buffers transferred, not copied) or the
 * failure, and exit. The thread runs under memory limits, so a hostile list ends this thread and
 * never the service.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { fetchList, type FetchListRequest } from '../src/screening/fetch.js';
import { pack } from '../src/screening/list.js';

const req = workerData as FetchListRequest;
const r = await fetchList(req);
if (!r.ok) parentPort!.postMessage(r);
else {
  const packed = pack(r.parsed.entries);
  parentPort!.postMessage(
    {
      ok: true,
      packed,
      date: r.parsed.date,
      malformed: r.parsed.malformed,
      format: r.parsed.format,
      bytes: r.bytes,
    },
    [packed.keys.buffer as ArrayBuffer, packed.tags.buffer as ArrayBuffer],
  );
}
