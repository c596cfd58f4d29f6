/** isoNow: the text Date#toISOString gives, for any millisecond, in any order. */
import t from 'tap';
import { isoNow } from '../../src/clock.js';

t.test('same text as toISOString, repeated and out of order', async (t) => {
  for (const ms of [0, 1, 1, 1795602812737, 1795602812737, 1795602812738, 1, 253402300799999]) {
    t.equal(isoNow(ms), new Date(ms).toISOString());
  }
  const before = Date.now();
  const now = isoNow();
  t.ok(Date.parse(now) >= before && Date.parse(now) <= Date.now(), 'now by default');
});
