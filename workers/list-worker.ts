/**
 * The list refresh thread (src/screening/worker.ts): for each request, download, parse and pack
 * the list, and post the packed list (its buffers transferred, not copied) or the failure. The
 * thread runs under memory limits, so a hostile list ends this thread and never the service.
 */
import { parentPort } from 'node:worker_threads';
import { fetchList, type FetchListRequest } from '../src/screening/fetch.js';
import { pack } from '../src/screening/list.js';

parentPort!.on('message', async ({ id, req }: { id: number; req: FetchListRequest }) => {
  const r = await fetchList(req);
  if (!r.ok) {
    parentPort!.postMessage({ id, result: r });
    return;
  }
  const packed = pack(r.parsed.entries);
  parentPort!.postMessage(
    {
      id,
      result: {
        ok: true,
        packed,
        date: r.parsed.date,
        malformed: r.parsed.malformed,
        format: r.parsed.format,
        bytes: r.bytes,
      },
    },
    [packed.keys.buffer as ArrayBuffer, packed.tags.buffer as ArrayBuffer],
  );
});
