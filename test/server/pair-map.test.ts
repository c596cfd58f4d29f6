/** The map keyed by two strings (src/pair-map.ts): found by both, forgotten one at a time, bounded. */
import t from 'tap';
import { PairMap } from '../../src/pair-map.js';

t.test('values are found by both strings, and deleting one leaves the others', async (t) => {
  const m = new PairMap<number>();
  m.set('acct-1', 'pay', 1);
  m.set('acct-1', 'trade', 2);
  m.set('acct-2', 'pay', 3);
  t.equal(m.get('acct-1', 'pay'), 1);
  t.equal(m.get('acct-2', 'pay'), 3);
  t.equal(m.get('acct-2', 'trade'), undefined, 'another account has its own names');
  m.set('acct-1', 'pay', 4);
  t.equal(m.get('acct-1', 'pay'), 4, 'a value set again replaces the old one');
  m.delete('acct-1', 'pay');
  t.equal(m.get('acct-1', 'pay'), undefined);
  t.equal(m.get('acct-1', 'trade'), 2);
  m.delete('acct-9', 'none'); // nothing there: no effect
  t.equal(m.get('acct-2', 'pay'), 3);
});

t.test('past its bound the map starts afresh; replacing or deleting frees no room it did not take', async (t) => {
  const m = new PairMap<number>(3);
  m.set('a', 'x', 1);
  m.set('a', 'x', 2); // replaced: still one value
  m.set('a', 'y', 3);
  m.set('b', 'x', 4);
  t.same([m.get('a', 'x'), m.get('a', 'y'), m.get('b', 'x')], [2, 3, 4], 'three values kept');
  m.set('c', 'x', 5);
  t.same(
    [m.get('a', 'x'), m.get('a', 'y'), m.get('b', 'x')],
    [undefined, undefined, undefined],
    'the fourth starts afresh',
  );
  t.equal(m.get('c', 'x'), 5);
  m.delete('c', 'x');
  m.set('d', 'x', 6);
  m.set('d', 'y', 7);
  m.set('e', 'x', 8);
  t.same([m.get('d', 'x'), m.get('d', 'y'), m.get('e', 'x')], [6, 7, 8], 'a deleted value gives its room back');
});
