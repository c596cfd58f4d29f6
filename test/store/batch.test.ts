/**
 * The reservation batcher (src/store/batch.ts): which asks share a transaction. The event loop's
 * turns are stepped by hand. A lone ask runs after one turn; a batch stays open while each turn
 * adds to it, for at most MAX_OPEN_TURNS turns; one key's batches never overlap, and each ask gets
 * its own result.
 */
import t from 'tap';
import { KeyedBatcher, MAX_OPEN_TURNS } from '../../src/store/batch.js';

function rig() {
  const turns: Array<() => void> = [];
  const batches: number[][] = [];
  const b = new KeyedBatcher<number, number>(
    async (inputs) => {
      batches.push(inputs);
      return inputs.map((x) => x * 10);
    },
    (fn) => turns.push(fn),
  );
  /** Ends one turn: runs what was waiting for it. */
  const endTurn = async (): Promise<void> => {
    const due = turns.splice(0);
    for (const fn of due) fn();
    await new Promise((r) => setImmediate(r)); // let the batch's promises settle
  };
  return { b, batches, endTurn, waiting: () => turns.length };
}

t.test('a lone ask runs after one turn, as a batch of one', async (t) => {
  const { b, batches, endTurn, waiting } = rig();
  const p = b.submit('k', 1);
  t.same(batches, [], 'not in the turn it was asked');
  await endTurn();
  t.same(batches, [[1]], 'run at the end of the next turn');
  t.equal(waiting(), 0);
  t.equal(await p, 10);
});

t.test('a batch stays open while each turn adds to it, for at most MAX_OPEN_TURNS turns', async (t) => {
  const { b, batches, endTurn } = rig();
  const out: Array<Promise<number>> = [];
  let n = 0;
  out.push(b.submit('k', n++));
  // One more ask before the end of each turn: a steady trickle.
  for (let i = 0; i < 2 * MAX_OPEN_TURNS; i++) {
    out.push(b.submit('k', n++));
    await endTurn();
  }
  await endTurn();
  await endTurn();
  t.equal(batches[0].length, MAX_OPEN_TURNS + 1, 'the first batch took the asks of its open turns, then closed');
  t.same(
    batches.flat(),
    Array.from({ length: n }, (_, i) => i),
    'every ask in exactly one batch, in order',
  );
  t.same(
    await Promise.all(out),
    Array.from({ length: n }, (_, i) => i * 10),
    'each ask gets its own result',
  );
});

t.test('asks after the first in its turn keep the batch open one turn more; each key batches on its own', async (t) => {
  const { b, batches, endTurn } = rig();
  const out = [b.submit('a', 1), b.submit('a', 2), b.submit('b', 3)];
  await endTurn();
  t.same(batches, [[3]], "b's lone ask closed after one turn; a's batch grew after it opened, so it waits");
  await endTurn();
  t.same(batches, [[3], [1, 2]], 'a turn that added nothing closed it');
  t.same(await Promise.all(out), [10, 20, 30]);
});
