/**
 * Three instances on one PostgreSQL (a database of this test's own) and one sanctions list served
 * from loopback: one instance at a time refreshes the list (the server sees one fetch per refresh
 * interval, not three), the list is kept in the database, and after a refresh all three answer from
 * the same version, delisting included, within 60 s (each reads the fleet's versions every
 * SCREENING_POLL_S, 15 s by default). A counterparty one instance learned is known to the others
 * within 5 s.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { post, startTestApp, type TestApp } from '../helpers/app.js';
import { sdnAdvancedXml, type SdnEntry, snapshotEntries, startListServer, until } from '../helpers/lists.js';
import { requireServer } from '../helpers/servers.js';

const PG_URL = process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MIXER = '0x1de1157ed000000000000000000000000000c0de';
const DESK = '0x7e57000000000000000000000000000000005d77';
const ENTRIES: SdnEntry[] = [
  { uid: '52001', name: 'TEST MIXER LLC', addresses: [['ETH', MIXER]] },
  { uid: '52002', name: 'TEST OTC DESK', addresses: [['USDT', DESK]] },
];
const REFRESH_S = 5;

const pgProblem = await requireServer('PostgreSQL', PG_URL, async () => {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  await c.connect();
  await c.end();
});

if (pgProblem === null) {
  const dbName = `preflight_screen_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  t.teardown(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  });
  const lists = await startListServer();
  t.teardown(() => lists.close());
  lists.set('/sdn.xml', sdnAdvancedXml('2025-03-21', [...snapshotEntries(), ...ENTRIES]));

  const env = {
    DATABASE_URL: PG_URL.replace(/\/[^/]*$/, `/${dbName}`),
    BILLING: 'on',
    SANCTIONS_LIST_URL: `${lists.url}/sdn.xml`,
    SANCTIONS_REFRESH_S: String(REFRESH_S),
  };
  const fleet: TestApp[] = [await startTestApp(env)];
  fleet.push(...(await Promise.all([startTestApp(env), startTestApp(env)])));
  t.teardown(async () => {
    for (const a of fleet) await a.close();
  });
  const started = Date.now();
  const keys = new Map<TestApp, string>();
  for (const [i, a] of fleet.entries()) {
    const r = await post(`${a.url}/v1/api-keys/signup`, { email: `member${i}@example.com` });
    keys.set(a, r.body.api_key);
  }
  const key = (a: TestApp): string => keys.get(a)!;
  const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
  const hashes = () => fleet.map((a) => a.screening.lists()[0].packed.hash);
  const caps = async (a: TestApp) =>
    ((await (await fetch(`${a.url}/v1/capabilities`)).json()) as any).screening.lists[0];

  t.test('the first refresh reaches all three, from the database', async (t) => {
    t.ok(await until(() => fleet.every((a) => a.screening.lists()[0].status === 'ok'), 40_000));
    const all = await Promise.all(fleet.map(caps));
    t.equal(new Set(all.map((c) => c.hash)).size, 1, 'one version');
    t.equal(all[0].date, '2025-03-21');
  });

  t.test('after a delisting, all three answer from the new version within 60 s', async (t) => {
    const before = hashes()[0];
    lists.set('/sdn.xml', sdnAdvancedXml('2025-03-22', [...snapshotEntries(), ENTRIES[1]]));
    t.ok(await until(() => hashes().some((h) => h !== before), 30_000), 'one instance refreshed');
    const changed = Date.now();
    t.ok(await until(() => new Set(hashes()).size === 1 && hashes()[0] !== before, 60_000));
    const lag = (Date.now() - changed) / 1000;
    t.ok(lag <= 60, `the others followed in ${lag.toFixed(1)} s`);
    for (const a of fleet) {
      const r = await post(`${a.url}/v1/screen`, { addresses: [MIXER, DESK] }, { 'x-api-key': key(a) });
      t.same(
        r.body.results.map((x: any) => x.status),
        ['pass', 'fail'],
        `${a.url} honours the delisting`,
      );
    }
  });

  t.test('one refresher for the fleet: the list server saw one fetch per interval, not three', async (t) => {
    const elapsed = (Date.now() - started) / 1000;
    const fetches = lists.hits('/sdn.xml');
    t.ok(fetches <= Math.ceil(elapsed / REFRESH_S) + 2, `${fetches} fetches in ${elapsed.toFixed(0)} s`);
    t.ok(fetches >= 2);
  });

  t.test('a counterparty learned on one instance is known on the others within 5 s', async (t) => {
    const intended = '0xd9a1b0b1e1ae382dbdc898ea68012ffcb2853a91';
    const poison = '0xd9a1c3788d81257612e2581a6ea0ada244853a91';
    const signup = await post(`${fleet[0].url}/v1/api-keys/signup`, { email: 'fleet@example.com' });
    const k = signup.body.api_key;
    // What a proceed records, through the instance's own book (the guard's path to it is tested on anvil).
    const accountId = (await fleet[0].store.findApiKeyByHash(sha256(k)))!.accountId;
    // The others have read the account's book already (and keep it up to 5 s).
    for (const a of fleet.slice(1)) {
      const r = await post(`${a.url}/v1/screen`, { addresses: [poison] }, { 'x-api-key': k });
      t.equal(r.body.results[0].status, 'pass', 'nothing known yet');
    }
    await fleet[0].screening.learn(`account:${accountId}`, [intended]);
    const learned = Date.now();
    for (const a of fleet.slice(1)) {
      let seen = false;
      while (!seen && Date.now() - learned < 7000) {
        const r = await post(`${a.url}/v1/screen`, { addresses: [poison] }, { 'x-api-key': k });
        seen = r.body.results[0].reasons.includes('address_lookalike');
        if (!seen) await new Promise((r) => setTimeout(r, 250));
      }
      t.ok(
        seen && Date.now() - learned <= 5000,
        `${a.url} knows it after ${((Date.now() - learned) / 1000).toFixed(1)} s`,
      );
    }
  });
}
