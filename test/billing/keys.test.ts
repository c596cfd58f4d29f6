import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { generateApiKey, hashApiKey, isWellFormedKey, KeyResolver, presentedKey } from '../../src/billing/keys.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { newKey } from '../store/suite.js';

t.test('issued keys: recognisable prefix, 256 random bits, SHA-256 stored', async (t) => {
  const keys = Array.from({ length: 200 }, () => generateApiKey());
  const bad = keys.filter(
    (k) =>
      !/^pvk_[A-Za-z0-9_-]{43}$/.test(k.key) ||
      Buffer.from(k.key.slice(4), 'base64url').length !== 32 ||
      k.hash !== hashApiKey(k.key) ||
      !/^[0-9a-f]{64}$/.test(k.hash) ||
      k.prefix !== k.key.slice(0, 12) ||
      !isWellFormedKey(k.key),
  );
  t.same(bad, [], 'every key: pvk_ + 43 base64url chars (32 bytes), hex SHA-256, 12-character prefix');
  t.equal(new Set(keys.map((k) => k.key)).size, 200, 'no repeats');
  t.equal(hashApiKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'plain SHA-256 hex');
  t.notOk(isWellFormedKey('pvk_short'));
  t.notOk(isWellFormedKey('sk_' + 'a'.repeat(43)));
});

t.test('the key a request presents', async (t) => {
  const k = generateApiKey().key;
  const cases: Array<[Record<string, string | string[]>, string | null]> = [
    [{ 'x-api-key': k }, k],
    [{ 'x-api-key': `  ${k} ` }, k],
    [{ authorization: `Bearer ${k}` }, k],
    [{ authorization: `bearer   ${k}` }, k],
    [{ 'x-api-key': 'from-header', authorization: `Bearer ${k}` }, 'from-header'],
    [{ 'x-api-key': '', authorization: `Bearer ${k}` }, k],
    [{ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }, null],
    [{ authorization: 'Bearer' }, null],
    [{ authorization: 'Bearer a b' }, null],
    [{}, null],
  ];
  for (const [headers, want] of cases) t.equal(presentedKey({ headers }), want, JSON.stringify(headers));
});

t.test('the resolver caches found, revoked and unknown keys briefly, in a bounded map', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pf-keys-'));
  const store = await openStore({ databaseUrl: `sqlite:${join(dir, 'k.db')}` });
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  let lookups = 0;
  const counting: Pick<Store, 'findApiKeyByHash'> = {
    findApiKeyByHash: (h) => {
      lookups++;
      return store.findApiKeyByHash(h);
    },
  };
  let clock = 1_000_000;
  const r = new KeyResolver(counting, { ttlMs: 5000, maxEntries: 3, now: () => clock });

  const a = newKey('a@example.com');
  await store.createApiKey(a);
  t.equal((await r.resolve(a.raw))?.id, a.id);
  t.equal((await r.resolve(a.raw))?.id, a.id);
  t.equal(lookups, 1, 'second lookup served from memory');

  await store.revokeApiKey(a.id);
  clock += 4999;
  t.equal((await r.resolve(a.raw))?.revokedAt, null, 'still the cached record inside the TTL');
  clock += 2;
  t.ok((await r.resolve(a.raw))?.revokedAt instanceof Date, 'revocation visible once the TTL has passed');
  t.equal(lookups, 2);

  const unknown = generateApiKey().key;
  t.equal(await r.resolve(unknown), null);
  t.equal(await r.resolve(unknown), null);
  t.equal(lookups, 3, 'unknown keys are cached too');
  t.equal(await r.resolve('not-a-key'), null);
  t.equal(lookups, 3, 'malformed keys never reach the store');

  const others = [generateApiKey().key, generateApiKey().key, generateApiKey().key];
  for (const k of others) await r.resolve(k);
  t.equal(r.size, 3, 'bounded');
  await r.resolve(a.raw);
  t.equal(lookups, 7, 'the oldest entry was evicted');

  const b = newKey('b@example.com');
  await store.createApiKey(b);
  const before = lookups;
  const all = await Promise.all(Array.from({ length: 20 }, () => r.resolve(b.raw)));
  t.ok(all.every((x) => x?.id === b.id));
  t.equal(lookups - before, 1, 'concurrent lookups of one key share one query');
});
