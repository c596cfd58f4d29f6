/**
 * The lists' refresh over HTTP with the real service: the sanctions list and three blocklists served
 * from loopback in their real shapes. A delisting is honoured; a list shrunk by more than half is
 * refused, the old one kept, /health degraded and the refusal counted; hostile lists (a 200 MB body,
 * entity expansion, deep nesting, binary garbage, a feed that hangs) leave the service answering
 * from its last good list; an approval to a spender on each feed blocks.
 */
import t from 'tap';
import { post, startTestApp, type TestApp } from '../helpers/app.js';
import {
  feedJson,
  feedObjects,
  feedText,
  type ListServer,
  sdnAdvancedXml,
  type SdnEntry,
  snapshotEntries,
  startListServer,
  until,
} from '../helpers/lists.js';

const MIXER = '0x1de1157ed000000000000000000000000000c0de';
const USDT_ONLY = '0x7e57000000000000000000000000000000005d77';
const FEEDS = {
  '/feed.json': '0xb10c000000000000000000000000000000000001',
  '/feed-objects.json': '0xb10c000000000000000000000000000000000002',
  '/feed.txt': '0xb10c000000000000000000000000000000000003',
} as const;
const CLEAN = '0x00000000000000000000000000000000c1ea4000';
const TEST_ENTRIES: SdnEntry[] = [
  { uid: '52001', name: 'TEST MIXER LLC', addresses: [['ETH', MIXER]] },
  { uid: '52002', name: 'TEST OTC DESK', addresses: [['USDT', USDT_ONLY]] },
];

let srv: ListServer;
let app: TestApp;

const screen = async (addresses: string[]) => {
  const r = await post(`${app.url}/v1/screen`, { addresses });
  if (r.status !== 200) throw new Error(`screen answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body as {
    results: Array<{
      address: string;
      status: string;
      reasons: string[];
      lists: string[];
      sanctions: any;
      blocklists: any[];
    }>;
    lists: Array<{ name: string; hash: string; size: number; status: string }>;
  };
};
const sanctions = () => app.screening.lists().find((l) => l.kind === 'sanctions')!;
const health = async () => (await fetch(`${app.url}/health`)).json() as Promise<Record<string, any>>;
const metric = async (line: RegExp) => {
  const text = await app.metrics.metricsText();
  const m = text.split('\n').find((l) => line.test(l));
  return m ? Number(m.split(' ').pop()) : 0;
};

t.before(async () => {
  srv = await startListServer();
  srv.set('/sdn.xml', sdnAdvancedXml('2025-03-21', [...snapshotEntries(), ...TEST_ENTRIES]));
  srv.set('/feed.json', feedJson([FEEDS['/feed.json'], 'not-an-address']));
  srv.set('/feed-objects.json', feedObjects([{ address: FEEDS['/feed-objects.json'], reason: 'wallet drainer' }]));
  srv.set('/feed.txt', feedText([FEEDS['/feed.txt']]));
  app = await startTestApp({
    SANCTIONS_LIST_URL: `${srv.url}/sdn.xml`,
    BLOCKLIST_URLS: Object.keys(FEEDS)
      .map((p) => `${srv.url}${p}`)
      .join(','),
    SANCTIONS_REFRESH_S: '1',
    SCREENING_POLL_S: '1',
    SCREENING_FETCH_TIMEOUT_MS: '4000',
    SCREENING_STALL_MS: '1500',
    SCREENING_MAX_LIST_BYTES: String(16 << 20),
  });
  const loaded = await until(() => app.screening.lists().every((l) => l.status === 'ok'));
  if (!loaded) throw new Error(`lists not loaded: ${JSON.stringify(app.screening.health())}`);
});
t.teardown(async () => {
  await app?.close();
  await srv?.close();
});

t.test('the served lists answer: sanctioned (ETH and USDT-only tags), each feed, a clean address', async (t) => {
  const r = await screen([MIXER, USDT_ONLY, ...Object.values(FEEDS), CLEAN]);
  t.same(
    r.results.map((x) => x.status),
    ['fail', 'fail', 'fail', 'fail', 'fail', 'pass'],
  );
  t.same(r.results[0].sanctions, {
    list: 'ofac_sdn',
    date: '2025-03-21',
    uid: '52001',
    name: 'TEST MIXER LLC',
    assets: ['ETH'],
  });
  t.same(r.results[1].sanctions.assets, ['USDT']);
  t.same(r.results[3].blocklists, [{ list: `${srv.url}/feed-objects.json`, reason: 'wallet drainer' }]);
  t.same(r.results[4].lists, [`${srv.url}/feed.txt`], 'a feed is named by its URL');
  const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as any;
  const sdn = caps.screening.lists.find((l: any) => l.kind === 'sanctions');
  t.match(sdn, { name: 'ofac_sdn', source: `${srv.url}/sdn.xml`, date: '2025-03-21', status: 'ok', size: 158 });
  t.match(sdn.hash, /^[0-9a-f]{64}$/);
  t.ok(sdn.refreshed_at);
  t.equal(caps.screening.lists.length, 4);
  t.ok(
    (await metric(/^preflight_screening_malformed_total\{list=".*feed\.json"\}/)) >= 1,
    'the malformed entry counted',
  );
});

for (const [path, spender] of Object.entries(FEEDS))
  t.test(`an approval to a spender on ${path} blocks`, async (t) => {
    const r = await post(`${app.url}/v1/guard`, {
      action: 'approve',
      chain: 'base',
      spender,
      approval_amount: '100',
      strict_mode: false,
    });
    t.equal(r.status, 200);
    t.equal(r.body.verdict, 'block');
    const item = r.body.evidence.find((e: any) => e.name === 'counterparty_screen');
    t.equal(item.status, 'fail');
    t.equal(item.reason, 'blocklisted_address');
    t.match(item.message, path);
    t.same(item.observed.addresses[0].roles, ['spender']);
  });

t.test('a delisting published at the URL is honoured after a refresh', async (t) => {
  const before = sanctions().packed.hash;
  srv.set('/sdn.xml', sdnAdvancedXml('2025-03-22', [...snapshotEntries(), TEST_ENTRIES[1]]));
  t.ok(await until(() => sanctions().packed.hash !== before), 'the new version is in use');
  const r = await screen([MIXER, USDT_ONLY]);
  t.same(
    r.results.map((x) => x.status),
    ['pass', 'fail'],
  );
  t.equal(sanctions().date, '2025-03-22');
});

t.test('a list shrunk by more than half is refused: old list kept, /health degraded, counted', async (t) => {
  const inUse = sanctions().packed.hash;
  const refusedBefore = await metric(/^preflight_screening_refresh_total\{list="ofac_sdn",outcome="refused"\}/);
  srv.set('/sdn.xml', sdnAdvancedXml('2025-03-23', [...snapshotEntries().slice(0, 40), ...TEST_ENTRIES]));
  t.ok(await until(() => sanctions().status === 'refused'));
  t.equal(sanctions().packed.hash, inUse, 'the list in use is unchanged');
  t.equal((await screen([USDT_ONLY])).results[0].status, 'fail', 'and still answers');
  const h = await health();
  t.equal(h.status, 'degraded');
  const listHealth = h.screening.lists.find((l: any) => l.name === 'ofac_sdn');
  t.match(listHealth, { status: 'refused', error: /shrunk by more than half/ });
  t.type(listHealth.age_s, 'number');
  t.ok(
    (await metric(/^preflight_screening_refresh_total\{list="ofac_sdn",outcome="refused"\}/)) > refusedBefore,
    'the refusal is counted',
  );
  srv.set('/sdn.xml', sdnAdvancedXml('2025-03-23', [...snapshotEntries(), ...TEST_ENTRIES]));
  t.ok(await until(() => sanctions().status === 'ok'), 'a later good refresh clears it');
  t.equal((await health()).status, 'ok');
});

const HOSTILE: Array<[string, Parameters<ListServer['set']>[1]]> = [
  [
    'a 200 MB body',
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/xml', 'content-length': String(200 * 1024 * 1024) });
      const chunk = Buffer.from(`<Sanctions>${'<Comment>x</Comment>'.repeat(3000)}`);
      let sent = 0;
      const pump = () => {
        while (sent < 200 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    },
  ],
  [
    'XML entity expansion',
    `<?xml version="1.0"?><!DOCTYPE Sanctions [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]><Sanctions>&d;&d;&d;&d;</Sanctions>`,
  ],
  ['deep nesting', `<Sanctions>${'<x>'.repeat(200_000)}`],
  ['binary garbage', Buffer.from(Array.from({ length: 65536 }, (_, i) => (i * 7919) % 256)).toString('latin1')],
  [
    'a feed that hangs',
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.write('<Sanctions><DateOfIssue>');
    },
  ],
];

for (const [name, route] of HOSTILE)
  t.test(`${name}: the service goes on answering from its last good list`, async (t) => {
    const good = sanctions().packed.hash;
    const failedBefore = await metric(/^preflight_screening_refresh_total\{list="ofac_sdn",outcome="failed"\}/);
    srv.set('/sdn.xml', route);
    // While the refresh runs (or hangs), answers keep coming, quickly, from the good list.
    const deadline = Date.now() + 20_000;
    let answered = 0;
    while (Date.now() < deadline) {
      const started = performance.now();
      const r = await screen([USDT_ONLY, MIXER]);
      t.ok(performance.now() - started < 1000, 'answered within a second');
      answered++;
      if (r.results[0].status !== 'fail') t.fail('the sanctioned address passed');
      if ((await metric(/^preflight_screening_refresh_total\{list="ofac_sdn",outcome="failed"\}/)) > failedBefore)
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    t.ok(answered > 0);
    t.equal(sanctions().status, 'failed', JSON.stringify(sanctions().error));
    t.equal(sanctions().packed.hash, good, 'the good list is still in use');
    t.equal((await health()).status, 'degraded');
    srv.set('/sdn.xml', sdnAdvancedXml('2025-03-23', [...snapshotEntries(), ...TEST_ENTRIES]));
    t.ok(await until(() => sanctions().status === 'ok'), 'recovers on the next good refresh');
  });
