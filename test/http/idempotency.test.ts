/**
 * Idempotency-Key on keyed POSTs (docs/policies.md §9), on the real app: one key retried ten
 * times at once is evaluated once, counted once and reserves once, and all ten get the same bytes
 * (the same attestation); the same JSON written otherwise is the same request; another body,
 * endpoint or key of the account is a 409; malformed keys are a 422 that costs nothing; and three
 * service processes on one PostgreSQL give one answer between them.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';
import t from 'tap';
import { startCoinGecko } from '../emulators/coingecko.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { requireServer } from '../helpers/servers.js';
import { spawnService, type ServiceProcess } from '../helpers/spawn.js';
import { agentKey, call, signup } from '../policy/helpers.js';

/** A declared USDC transfer that proceeds (its price from the emulator) and reserves 300 USD under the policy. */
const GUARD = { action: 'transfer', chain: 'base', amount_usd: 300 };
const POLICY = { default: 'allow', limits: [{ id: 'daily', window: 'day', max_usd: 1000 }] };

async function raw(url: string, path: string, key: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

function metric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name)) sum += Number(line.split(' ').pop());
  return sum;
}

t.test('sqlite: ten concurrent retries of one key, one evaluation, one count, one reservation', async (t) => {
  const cg = await startCoinGecko();
  cg.setPrice('ethereum', 'usd', 3120.55);
  cg.setPrice('usd-coin', 'usd', 0.9999);
  // The price upstream answers slowly, so the retries arrive while the first is being answered.
  cg.fault = { delayMs: 400 };
  t.teardown(() => cg.close());
  const app: TestApp = await startTestApp({
    BILLING: 'on',
    FREE_TIER_MONTHLY_LIMIT: '1000',
    PRICE_API_URL: cg.url,
    REQUEST_DEADLINE_MS: '3000',
  });
  t.teardown(() => app.close());
  const owner = await signup(app.url);
  t.equal((await call(app.url, 'PUT', '/v1/policies/ops', owner, POLICY)).status, 201);
  const agent = await agentKey(app.url, owner, 'runner', 'ops');
  const [record] = (await app.store.listApiKeys()).filter((k) => k.id === agent.id);
  const period = new Date().toISOString().slice(0, 7);

  // A guard under the policy: ten at once with one key.
  const key = `retry-${randomBytes(6).toString('hex')}`;
  const guards = await Promise.all(
    Array.from({ length: 10 }, () => raw(app.url, '/v1/guard', agent.key, GUARD, { 'idempotency-key': key })),
  );
  t.same(
    guards.map((g) => g.status),
    Array(10).fill(200),
  );
  t.equal(new Set(guards.map((g) => g.text)).size, 1, 'ten identical answers, byte for byte');
  const answer = JSON.parse(guards[0].text);
  t.equal(answer.verdict, 'proceed');
  t.ok(answer.attestation?.signature, 'signed once, the same attestation for all');
  t.equal(guards.filter((g) => g.headers.get('idempotent-replayed') === 'true').length, 9, 'nine replays');
  t.equal(await app.store.getUsage(record.accountId, period), 1, 'one call counted on the account');
  const usage = await call(app.url, 'GET', '/v1/policies/ops/usage', owner);
  t.equal(usage.body.limits[0].count, 1, 'one reservation');
  t.equal(usage.body.limits[0].committed_usd, 300, 'of 300 USD, once');

  // A decide whose check waits on the slow upstream: the repeats wait for the first.
  const decide = { goal: 'eth above 1000', checks: [{ type: 'price', asset_id: 'ethereum', min_price: 1000 }] };
  const dkey = `decide-${randomBytes(6).toString('hex')}`;
  const started = performance.now();
  const decides = await Promise.all(
    Array.from({ length: 10 }, () => raw(app.url, '/v1/decide', owner, decide, { 'idempotency-key': dkey })),
  );
  t.ok(performance.now() - started >= 350, 'the repeats waited for the slow first answer');
  t.equal(new Set(decides.map((d) => `${d.status} ${d.text}`)).size, 1, 'ten identical decide answers');
  t.equal(JSON.parse(decides[0].text).verdict, 'proceed');
  t.equal(await app.store.getUsage(record.accountId, period), 2, 'one more call counted, not ten');
  const scrape = await (await fetch(`${app.url}/metrics`)).text();
  t.equal(metric(scrape, 'preflight_verdicts_total{endpoint="/v1/guard"'), 1, 'one guard evaluation');
  t.equal(metric(scrape, 'preflight_verdicts_total{endpoint="/v1/decide"'), 1, 'one decide evaluation');
  t.equal(metric(scrape, 'preflight_idempotency_keys_total{outcome="first"}'), 2);
  t.equal(metric(scrape, 'preflight_idempotency_keys_total{outcome="replayed"}'), 18);
  const log = await call(app.url, 'GET', '/v1/verdicts', owner);
  t.equal(log.body.verdicts.length, 2, 'one row per answer in the verdict log, not per retry');
  t.equal(log.body.verdicts[1].id, answer.attestation.typed_data.message.id);
  t.equal(log.body.verdicts[1].reservation, 'committed', 'a declared transfer is committed at once');
  t.equal(log.body.verdicts[1].reserved_usd, 300);

  // The same JSON written otherwise is the same request: its kept answer.
  const reordered = '{ "amount_usd": 300.0,\n "chain": "base", "action": "transfer" }';
  const again = await raw(app.url, '/v1/guard', agent.key, reordered, { 'idempotency-key': key });
  t.equal(again.status, 200);
  t.equal(again.text, guards[0].text, 'key order, spacing and 300.0 vs 300 do not count');

  // Another body, endpoint or key of the account under the same Idempotency-Key: 409, nothing counted.
  const other = await raw(app.url, '/v1/guard', agent.key, { ...GUARD, amount_usd: 301 }, { 'idempotency-key': key });
  t.equal(other.status, 409);
  t.match(JSON.parse(other.text).detail, /already used for another request/);
  t.equal(
    (await raw(app.url, '/v1/agents/execution-guard/execute', agent.key, GUARD, { 'idempotency-key': key })).status,
    409,
  );
  t.equal((await raw(app.url, '/v1/guard', owner, GUARD, { 'idempotency-key': key })).status, 409);
  t.equal(await app.store.getUsage(record.accountId, period), 2, 'refused repeats count nothing');
  t.equal((await call(app.url, 'GET', '/v1/policies/ops/usage', owner)).body.limits[0].count, 1, 'reserve nothing');

  // Another account's same Idempotency-Key is its own.
  const stranger = await signup(app.url);
  const theirs = await raw(app.url, '/v1/guard', stranger, GUARD, { 'idempotency-key': key });
  t.equal(theirs.status, 200);
  t.not(theirs.text, guards[0].text, 'a fresh answer for another account');
});

t.test('malformed Idempotency-Keys are a 422 before credentials, and cost nothing', async (t) => {
  const app = await startTestApp({ BILLING: 'on' });
  // The two good calls below need no answer but a 200: the price check may error (wait) offline.
  t.teardown(() => app.close());
  const owner = await signup(app.url);
  const [record] = await app.store.listApiKeys();
  const period = new Date().toISOString().slice(0, 7);
  const url = new URL(`${app.url}/v1/guard`);
  /** node's own client, which sends what it is given (fetch refuses some of these values itself). */
  const send = (value: string, key: string | null = owner) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const body = JSON.stringify(GUARD);
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'idempotency-key': value,
            ...(key === null ? {} : { 'x-api-key': key }),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  for (const [label, value] of [
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['a space', 'two words'],
    ['non-ASCII', 'cl\u00e9'],
    ['a tab', 'a\tb'],
  ] as const) {
    const r = await send(value);
    t.equal(r.status, 422, label);
    t.same(r.body.detail[0].loc, ['header', 'Idempotency-Key'], label);
    t.equal(r.body.detail[0].type, 'idempotency_key', label);
  }
  t.equal((await send('', null)).status, 422, 'checked before credentials, like the body');
  t.equal((await send('k'.repeat(255))).status, 200, '255 visible characters are fine');
  t.equal((await send('!~"#$%&()*+,-./:;<=>?@[]^_`{|}')).status, 200, 'any visible ASCII');
  t.equal(await app.store.getUsage(record.accountId, period), 2, 'only the two good calls counted');
});

const PG_URL = process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const pgProblem = await requireServer('PostgreSQL', PG_URL, async () => {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  await c.connect();
  await c.end();
});

if (pgProblem === null) {
  t.test('postgres: three service processes answer ten concurrent retries once between them', async (t) => {
    const dbName = `preflight_idem_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    const dbUrl = PG_URL.replace(/\/[^/]*$/, `/${dbName}`);
    t.teardown(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    });
    const cg = await startCoinGecko();
    cg.setPrice('usd-coin', 'usd', 0.9999);
    cg.fault = { delayMs: 300 };
    t.teardown(() => cg.close());
    const env = {
      DATABASE_URL: dbUrl,
      BILLING: 'on',
      POOL_THREADS: '0',
      FREE_TIER_MONTHLY_LIMIT: '1000',
      PRICE_API_URL: cg.url,
      REQUEST_DEADLINE_MS: '3000',
    };
    const first = await spawnService(env);
    const fleet: ServiceProcess[] = [first, ...(await Promise.all([spawnService(env), spawnService(env)]))];
    t.teardown(async () => {
      for (const s of fleet) s.child.kill('SIGTERM');
      await Promise.all(fleet.map((s) => s.exited));
    });
    const owner = await signup(first.url);
    t.equal((await call(first.url, 'PUT', '/v1/policies/ops', owner, POLICY)).status, 201);
    const agent = await agentKey(first.url, owner, 'runner', 'ops');
    const key = `fleet-${randomBytes(6).toString('hex')}`;
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        raw(fleet[i % 3].url, '/v1/guard', agent.key, GUARD, { 'idempotency-key': key }),
      ),
    );
    t.same(
      answers.map((a) => a.status),
      Array(10).fill(200),
    );
    t.equal(new Set(answers.map((a) => a.text)).size, 1, 'one answer across the three instances');
    t.equal(JSON.parse(answers[0].text).verdict, 'proceed');
    const db = new pg.Client({ connectionString: dbUrl });
    await db.connect();
    t.teardown(() => db.end());
    const used = await db.query<{ used: string }>('SELECT used FROM key_usage');
    t.same(
      used.rows.map((r) => Number(r.used)),
      [1],
      'one call counted',
    );
    const reservations = await db.query('SELECT DISTINCT id FROM reservations');
    t.equal(reservations.rowCount, 1, 'one reservation');
    t.equal(reservations.rows[0].id, JSON.parse(answers[0].text).attestation.typed_data.message.id);
    const other = await raw(
      fleet[2].url,
      '/v1/guard',
      agent.key,
      { ...GUARD, amount_usd: 302 },
      { 'idempotency-key': key },
    );
    t.equal(other.status, 409, 'another body on another instance: 409');
    const rows = await db.query('SELECT id FROM verdict_log');
    t.equal(rows.rowCount, 1, 'one verdict row');
  });
}
