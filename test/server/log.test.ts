/** Log lines: gathered per turn of the event loop into one write, never lost, never reordered. */
import t from 'tap';
import { pino } from 'pino';
import { TurnBatch } from '../../src/log.js';

function sink() {
  const writes: string[] = [];
  let flushes = 0;
  let syncFlushes = 0;
  return {
    writes,
    get flushes() {
      return flushes;
    },
    get syncFlushes() {
      return syncFlushes;
    },
    write(chunk: string) {
      writes.push(chunk);
      return true;
    },
    flush(cb?: (err?: Error) => void) {
      flushes++;
      cb?.();
    },
    flushSync() {
      syncFlushes++;
    },
  };
}

t.test('the lines of one turn go out as one write, in order, when the turn ends', async (t) => {
  const s = sink();
  const log = pino({ base: null }, new TurnBatch(s));
  for (let i = 0; i < 50; i++) log.info({ i }, 'line');
  t.equal(s.writes.length, 0, 'nothing written during the turn');
  await new Promise((r) => setImmediate(r));
  t.equal(s.writes.length, 1, 'one write for the turn');
  const lines = s.writes[0]
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { i: number });
  t.same(
    lines.map((l) => l.i),
    Array.from({ length: 50 }, (_, i) => i),
  );
  log.info({ i: 50 }, 'next turn');
  await new Promise((r) => setImmediate(r));
  t.equal(s.writes.length, 2, 'the next turn writes its own');
});

t.test('flush writes what waits before the stream flushes', async (t) => {
  const s = sink();
  const log = pino({ base: null }, new TurnBatch(s));
  log.info('waiting');
  log.flush();
  t.equal(s.writes.length, 1);
  t.match(s.writes[0], /"msg":"waiting"/);
  t.equal(s.flushes, 1);
  await new Promise((r) => setImmediate(r));
  t.equal(s.writes.length, 1, 'nothing written twice');
});
