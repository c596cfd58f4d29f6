import t from 'tap';
import { OldestFirst } from '../../src/oldest-first.js';
import { seeded } from '../helpers/seeded.js';

/** The same bounded map kept as an array in insertion order: the oldest is the first. */
class Model {
  order: string[] = [];
  set(k: string) {
    if (!this.order.includes(k)) this.order.push(k);
  }
  delete(k: string) {
    this.order = this.order.filter((x) => x !== k);
  }
}

t.test('evicts in insertion order through deletes, sets again, clears and refills', async (t) => {
  const rand = seeded(7);
  const map = new Map<string, number>();
  const oldest = new OldestFirst(map);
  const model = new Model();
  const MAX = 50;
  let evictions = 0;
  let failedEvictions = 0;
  for (let i = 0; i < 20_000; i++) {
    const op = rand(1000);
    const k = `k${rand(400)}`;
    if (op < 850) {
      // A cache's set: an entry set again moves to the end.
      map.delete(k);
      model.delete(k);
      map.set(k, i);
      model.set(k);
      if (map.size > MAX) {
        if (oldest.evict() === undefined) failedEvictions++;
        model.order.shift();
        evictions++;
      }
    } else if (op < 995) {
      map.delete(k);
      model.delete(k);
    } else if (op < 998) {
      // Drained to empty by eviction alone.
      while (oldest.evict() !== undefined) model.order.shift();
      t.equal(map.size, 0);
      model.order = [];
    } else {
      map.clear();
      model.order = [];
    }
    if ([...map.keys()].join() !== model.order.join()) {
      t.fail(`after step ${i}: ${[...map.keys()].join()} against ${model.order.join()}`);
      return;
    }
  }
  t.ok(evictions > 1000, `${evictions} evictions from a full map`);
  t.equal(failedEvictions, 0, 'a full map always has an entry to evict');
});

t.test('an empty map has nothing to evict, and entries added later are found', async (t) => {
  const map = new Map<number, string>();
  const oldest = new OldestFirst(map);
  t.equal(oldest.evict(), undefined);
  map.set(1, 'a');
  map.set(2, 'b');
  t.same(oldest.evict(), [1, 'a']);
  t.same(oldest.evict(), [2, 'b']);
  t.equal(oldest.evict(), undefined, 'the iterator ran to the end');
  map.set(3, 'c');
  map.set(4, 'd');
  t.same(oldest.evict(), [3, 'c']);
  t.same([...map.keys()], [4], 'a new iterator starts at the oldest entry');
});
