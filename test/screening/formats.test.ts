/**
 * The list readers and the rules, pure: SDN Advanced and legacy XML in their real shapes, the three
 * feed formats, hostile XML refused, the packed index and its hash (checked against an independent
 * computation), and the lookalike thresholds on the real 2024 poisoning pair.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { parseList } from '../../src/screening/formats.js';
import { addressesOf, findKey, lookup, pack } from '../../src/screening/list.js';
import { isLookalike, KnownBook, likeness } from '../../src/screening/rules.js';
import { embeddedSanctions } from '../../src/screening/service.js';
import snapshot from '../../src/screening/ofac-snapshot.json' with { type: 'json' };
import { feedJson, feedObjects, feedText, sdnAdvancedXml, sdnLegacyXml, type SdnEntry } from '../helpers/lists.js';

const ETH_ONLY = '0x8589427373d6d84e98730d7795d8f6f8731fda16';
const USDT_ONLY = '0x175d44451403edf28469df03a9280c1197adb92c';
const ENTRIES: SdnEntry[] = [
  {
    uid: '41001',
    name: 'TEST MIXER',
    addresses: [
      ['ETH', '0x8589427373D6D84E98730D7795D8F6F8731FDA16'],
      ['XBT', 'bc1qtestaddress000'],
    ],
  },
  {
    uid: '41002',
    name: 'TEST EXCHANGE',
    addresses: [
      ['USDT', USDT_ONLY],
      ['TRX', 'TXtestTronAddress'],
    ],
  },
  {
    uid: '41003',
    name: 'TEST BROKEN',
    addresses: [
      ['ETH', '0x12345'],
      ['ARB', '0x00000000000000000000000000000000000a4b01'],
    ],
  },
];

t.test('SDN Advanced XML: every 0x address under any Digital Currency Address feature, by its text', async (t) => {
  const p = parseList('sanctions', sdnAdvancedXml('2025-03-21', ENTRIES));
  t.equal(p.format, 'sdn_advanced_xml');
  t.equal(p.date, '2025-03-21');
  const byAddr = new Map(p.entries);
  t.same([...byAddr.keys()].sort(), [ETH_ONLY, USDT_ONLY, '0x00000000000000000000000000000000000a4b01'].sort());
  t.same(
    byAddr.get(ETH_ONLY),
    { uid: '41001', name: 'TEST MIXER', assets: ['ETH'] },
    'the primary alias names the entry',
  );
  t.same(byAddr.get(USDT_ONLY)?.assets, ['USDT'], 'a USDT-only tag counts');
  t.equal(p.malformed, 1, 'a 0x value that is no address is skipped and counted; Bitcoin and Tron ones are neither');
});

t.test('legacy SDN.XML: idType / idNumber, the publish date', async (t) => {
  const p = parseList('sanctions', sdnLegacyXml('2025-03-21', ENTRIES));
  t.equal(p.format, 'sdn_xml');
  t.equal(p.date, '2025-03-21');
  const byAddr = new Map(p.entries);
  t.same(byAddr.get(USDT_ONLY), { uid: '41002', name: 'TEST EXCHANGE', assets: ['USDT'] });
  t.equal(byAddr.size, 3);
  t.equal(p.malformed, 1);
});

t.test('the three feed formats; malformed entries skipped and counted', async (t) => {
  const a = '0x1111111111111111111111111111111111111111';
  const b = '0x2222222222222222222222222222222222222222';
  const json = parseList('blocklist', feedJson([a, b.toUpperCase().replace('0X', '0x'), 'nope', '0x12']));
  t.equal(json.format, 'json');
  t.same(
    json.entries.map((e) => e[0]),
    [a, b],
  );
  t.equal(json.malformed, 2);
  const objs = parseList(
    'blocklist',
    feedObjects([
      { address: a, reason: 'drainer' },
      { address: 'x', reason: 'bad' },
    ]),
  );
  t.equal(objs.format, 'json_objects');
  t.same(objs.entries, [[a, { reason: 'drainer' }]]);
  t.equal(objs.malformed, 1);
  const text = parseList('blocklist', `${feedText([a])}# comment only\n\n${b}\nnot-an-address\n`);
  t.equal(text.format, 'text');
  t.same(
    text.entries.map((e) => e[0]),
    [a, b],
  );
  t.equal(text.malformed, 1);
  t.throws(() => parseList('blocklist', '[1, 2'), { name: 'ListFormatError' });
});

t.test('hostile XML is refused: entities, a DTD, deep nesting, long text, another root', async (t) => {
  const bomb = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><Sanctions>&lol2;</Sanctions>`;
  t.throws(() => parseList('sanctions', bomb), { name: 'ListFormatError' }, 'a DTD with entities');
  t.throws(
    () => parseList('sanctions', '<Sanctions>&xxe;</Sanctions>'),
    { name: 'ListFormatError' },
    'an undefined entity',
  );
  t.throws(
    () => parseList('sanctions', `<Sanctions>${'<a>'.repeat(100)}${'</a>'.repeat(100)}</Sanctions>`),
    /nesting deeper/,
  );
  t.throws(() => parseList('sanctions', `<Sanctions>${'x'.repeat(10_000)}</Sanctions>`), /text node longer/);
  t.throws(() => parseList('sanctions', '<html><body>maintenance</body></html>'), /neither an SDN/);
  t.throws(() => parseList('sanctions', '\u0000\u0001binary garbage'), { name: 'ListFormatError' });
});

t.test('the packed index: lookup, and the hash as SHA-256 of the sorted lowercased addresses', async (t) => {
  const addrs = Array.from(
    { length: 500 },
    (_, i) => `0x${createHash('sha256').update(String(i)).digest('hex').slice(0, 40)}`,
  );
  const packed = pack(addrs.map((a, i) => [a, { reason: i % 2 ? 'odd' : null }]));
  t.equal(packed.size, 500);
  t.equal(
    packed.hash,
    createHash('sha256')
      .update([...addrs].sort().join('\n'))
      .digest('hex'),
  );
  t.same(addressesOf(packed), [...addrs].sort());
  t.same(lookup(packed, addrs[7]), { reason: 'odd' });
  t.equal(lookup(packed, '0x0000000000000000000000000000000000000001'), null);
  t.equal(packed.table.length, 2, 'tags are shared');
});

t.test('findKey finds every listed key and no other, at every position of a sorted list', async (t) => {
  // Keys that share long prefixes (down to the last byte) and keys at both ends, so that each
  // step of the search meets equal leading bytes; the reference is a Set of hex strings.
  const hex = new Set<string>();
  for (let i = 0; i < 300; i++) hex.add(createHash('sha256').update(`k${i}`).digest('hex').slice(0, 40));
  const base = createHash('sha256').update('base').digest('hex').slice(0, 38);
  for (let b = 0; b < 256; b += 3) hex.add(base + b.toString(16).padStart(2, '0'));
  hex.add('00'.repeat(20));
  hex.add('ff'.repeat(20));
  const packed = pack([...hex].map((h) => [`0x${h}`, { reason: null }]));
  t.equal(packed.size, hex.size);
  let found = 0;
  for (const [i, a] of addressesOf(packed).entries()) {
    if (findKey(packed, Buffer.from(a.slice(2), 'hex')) === i) found++;
  }
  t.equal(found, hex.size, 'every key at its own index');
  const probes: string[] = [];
  for (let b = 0; b < 256; b++) probes.push(base + b.toString(16).padStart(2, '0'));
  for (let i = 0; i < 500; i++) probes.push(createHash('sha256').update(`p${i}`).digest('hex').slice(0, 40));
  probes.push('00'.repeat(19) + '01', 'ff'.repeat(19) + 'fe', `${base}ff`);
  const wrong: string[] = [];
  for (const p of probes) {
    const i = findKey(packed, Buffer.from(p, 'hex'));
    const listed = hex.has(p);
    if (listed ? i < 0 || addressesOf(packed)[i] !== `0x${p}` : i !== -1) wrong.push(p);
  }
  t.same(wrong, [], 'a probe is found exactly when the list holds it');
  t.equal(findKey(packed, Buffer.from(`${base}00`.slice(0, 38), 'hex')), -1, 'a 19-byte key is never found');
  t.equal(findKey({ keys: new Uint8Array(0), size: 0 }, Buffer.alloc(20)), -1, 'nothing in an empty list');
});

t.test('the embedded snapshot: every EVM address of the extraction, with its date and assets', async (t) => {
  const s = embeddedSanctions();
  t.equal(s.date, '2024-09-27');
  t.equal(snapshot.commit, 'f2aee2265956bf28ce71824c2c2c8cab02c2e173');
  t.equal(s.packed.size, snapshot.entries.length);
  t.ok(s.packed.size >= 150);
  t.same(lookup(s.packed, USDT_ONLY)?.assets, ['USDT'], 'a USDT-only address is in it');
  t.equal(
    s.packed.hash,
    createHash('sha256')
      .update(
        snapshot.entries
          .map((e) => e.address)
          .sort()
          .join('\n'),
      )
      .digest('hex'),
  );
});

t.test('lookalikes: the real 2024 pair fires, 3+3 and vanity zeros do not, a known address never does', async (t) => {
  const intended = '0xd9a1b0b1e1ae382dbdc898ea68012ffcb2853a91';
  const poison = '0xd9a1c3788d81257612e2581a6ea0ada244853a91';
  t.same(likeness(poison, intended), { prefix: 4, suffix: 6 });
  t.ok(isLookalike(likeness(poison, intended)));
  const threeThree = `0xd9a${'5'.repeat(34)}a91`;
  t.same(likeness(threeThree, intended), { prefix: 3, suffix: 3 });
  t.notOk(isLookalike(likeness(threeThree, intended)));
  t.ok(isLookalike({ prefix: 2, suffix: 6 }), '2 + 6');
  t.notOk(isLookalike({ prefix: 1, suffix: 9 }), 'at least 2 at each end');
  const zeros = (tail: string) => `0x${'0'.repeat(36)}${tail}`;
  t.notOk(isLookalike(likeness(zeros('abcd'), zeros('ef12'))), 'vanity zeros alone never fire');
  const book = new KnownBook([intended]);
  t.same(
    book.lookalikesOf(poison).map((l) => l.known),
    [intended],
  );
  t.same(book.lookalikesOf(intended), [], 'the known address itself');
  t.same(book.lookalikesOf(threeThree), []);
});

t.test('a book of 100,000 known addresses finds the one a lookalike imitates', async (t) => {
  const known = Array.from(
    { length: 100_000 },
    (_, i) => `0x${createHash('sha256').update(`k${i}`).digest('hex').slice(0, 40)}`,
  );
  const book = new KnownBook(known);
  const target = known[12345];
  const poison = `${target.slice(0, 6)}${'0'.repeat(30)}${target.slice(-6)}`;
  t.same(book.lookalikesOf(poison)[0]?.known, target);
  t.same(book.lookalikesOf(`0x${'7'.repeat(40)}`), []);
});
