/**
 * The verdict log over HTTP (docs/policies.md §10) on the real app (SQLite): every answer to a
 * keyed call is a row, GET /v1/verdicts is the owner key's only (401, 403 for an agent key),
 * newest first with cursor pages that neither skip nor repeat, filters, 422 for a bad query;
 * and the writer: batched rows wait at most a second, a reservation's row is durable before its
 * answer, rows past VERDICT_LOG_DAYS go.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { openStore } from '../../src/store/index.js';
import type { VerdictRecord } from '../../src/store/types.js';
import { VerdictLog } from '../../src/verdicts/log.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { captureLogger, startTestApp, type TestApp } from '../helpers/app.js';
import { agentKey, call, signup } from '../policy/helpers.js';
import { spawnService } from '../helpers/spawn.js';
import { verdictRow } from '../helpers/verdict-row.js';

const DECIDE = { goal: 'usdc holds its peg', checks: [{ type: 'price', asset_id: 'usd-coin', min_price: 0.99 }] };
const LOW = { goal: 'usdc above 2', checks: [{ type: 'price', asset_id: 'usd-coin', min_price: 2 }] };

t.test('GET /v1/verdicts: owner only, newest first, pages, filters', async (t) => {
  const cg = await startCoinGecko();
  cg.setPrice('usd-coin', 'usd', 0.9999);
  t.teardown(() => cg.close());
  const app: TestApp = await startTestApp({ BILLING: 'on', FREE_TIER_MONTHLY_LIMIT: '1000', PRICE_API_URL: cg.url });
  t.teardown(() => app.close());
  const owner = await signup(app.url);
  const agent = await agentKey(app.url, owner, 'payments bot', null);
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) {
    const r = await call(app.url, 'POST', '/v1/decide', i % 2 === 0 ? agent.key : owner, i === 3 ? LOW : DECIDE);
    t.equal(r.status, 200);
    ids.unshift(r.body.attestation.typed_data.message.id);
  }
  t.equal((await call(app.url, 'POST', '/v1/guard', agent.key, { action: 'transfer', amount_usd: 5 })).status, 200);

  const all = await call(app.url, 'GET', '/v1/verdicts', owner);
  t.equal(all.status, 200);
  t.equal(all.headers.get('cache-control'), 'no-store');
  t.equal(all.body.verdicts.length, 8);
  t.equal(all.body.next_cursor, null);
  const [guard, ...decides] = all.body.verdicts;
  t.match(guard, { endpoint: '/v1/guard', key_id: agent.id, key_name: 'payments bot', policy: null });
  t.same(
    decides.map((v: any) => v.id),
    ids,
    'newest first, each row under its attestation id',
  );
  t.same(decides[3], {
    id: ids[3],
    at: decides[3].at,
    key_id: decides[3].key_id,
    key_name: 'owner',
    endpoint: '/v1/decide',
    verdict: 'block',
    risk: 'high',
    failure_modes: decides[3].failure_modes,
    policy: null,
    reserved_usd: null,
    reservation: null,
  });
  t.ok(Date.parse(decides[3].at) <= Date.now());

  // Pages of 3: every row once, in order.
  const walked: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r: any = await call(app.url, 'GET', `/v1/verdicts?limit=3${cursor ? `&cursor=${cursor}` : ''}`, owner);
    t.equal(r.status, 200);
    walked.push(...r.body.verdicts.map((v: any) => v.id));
    cursor = r.body.next_cursor;
    pages++;
  } while (cursor !== null && pages < 10);
  t.equal(pages, 3);
  t.same(
    walked,
    all.body.verdicts.map((v: any) => v.id),
  );

  const blocks = await call(app.url, 'GET', '/v1/verdicts?verdict=block', owner);
  t.same(
    blocks.body.verdicts.map((v: any) => v.id),
    [ids[3]],
  );
  const mine = await call(app.url, 'GET', `/v1/verdicts?key=${agent.id}`, owner);
  t.equal(mine.body.verdicts.length, 5, "the agent key's four decides and its guard");
  const later = await call(app.url, 'GET', `/v1/verdicts?since=${encodeURIComponent(guard.at)}`, owner);
  t.ok(later.body.verdicts.length >= 1 && later.body.verdicts.every((v: any) => v.at >= guard.at));

  // Who may read it.
  t.equal((await call(app.url, 'GET', '/v1/verdicts', null)).status, 401);
  t.equal((await call(app.url, 'GET', '/v1/verdicts', `pvk_${'A'.repeat(43)}`)).status, 401);
  const denied = await call(app.url, 'GET', '/v1/verdicts', agent.key);
  t.equal(denied.status, 403);
  t.match(denied.body.detail, /owner key/);
  const stranger = await signup(app.url);
  t.same((await call(app.url, 'GET', '/v1/verdicts', stranger)).body, { verdicts: [], next_cursor: null });
  t.equal((await call(app.url, 'GET', `/v1/verdicts?key=${agent.id}`, stranger)).status, 404, "another account's key");

  // Bad queries: 422 with the parameter's loc, never a 500.
  for (const [q, name] of [
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=ten', 'limit'],
    ['cursor=not-a-cursor', 'cursor'],
    [`cursor=${Buffer.from('[1,"x"]').toString('base64url')}`, 'cursor'],
    ['verdict=maybe', 'verdict'],
    ['since=yesterday', 'since'],
    ['key=a%20b', 'key'],
    ['limit=5&limit=6', 'limit'],
  ] as const) {
    const r = await call(app.url, 'GET', `/v1/verdicts?${q}`, owner);
    t.equal(r.status, 422, q);
    t.same(r.body.detail[0].loc, ['query', name], q);
  }
  t.equal((await call(app.url, 'GET', '/v1/verdicts?limit=500', owner)).status, 200);

  // Where a client learns of it: the capabilities and the OpenAPI document.
  const caps = (await call(app.url, 'GET', '/v1/capabilities', null)).body;
  t.same(caps.policies.verdict_log, { endpoint: 'GET /v1/verdicts', page_max: 500, retention_days: 30 });
  t.equal(caps.policies.idempotency_key.kept_h, 24);
  t.ok(caps.auth.management_endpoints.some((e: any) => e.endpoint === 'GET /v1/verdicts'));
  const op = (await call(app.url, 'GET', '/openapi.json', null)).body.paths['/v1/verdicts'].get;
  t.same(
    op.parameters.map((p: any) => `${p.in}:${p.name}`),
    ['query:limit', 'query:cursor', 'query:key', 'query:verdict', 'query:since'],
  );
  t.equal(op.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/VerdictPage');
  t.ok(op.responses['403']);
});

t.test('an MCP tool call is logged under the endpoint that answered it, with the calling key', async (t) => {
  const cg = await startCoinGecko();
  cg.setPrice('usd-coin', 'usd', 0.9999);
  t.teardown(() => cg.close());
  const app = await startTestApp({ BILLING: 'on', PRICE_API_URL: cg.url });
  t.teardown(() => app.close());
  const owner = await signup(app.url);
  const agent = await agentKey(app.url, owner, 'mcp agent', null);
  const client = new Client({ name: 'preflight-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${agent.key}` } },
    }),
  );
  t.teardown(() => client.close());
  const r = (await client.callTool({ name: 'preflight_decide', arguments: DECIDE })) as CallToolResult;
  const answer = r.structuredContent as { verdict: string; attestation: { typed_data: { message: { id: string } } } };
  t.equal(answer.verdict, 'proceed');
  const log = await call(app.url, 'GET', '/v1/verdicts', owner);
  t.same(
    log.body.verdicts.map((v: any) => [v.id, v.endpoint, v.key_id, v.key_name, v.verdict]),
    [[answer.attestation.typed_data.message.id, '/v1/decide', agent.id, 'mcp agent', 'proceed']],
  );
});

const row = (accountId: string, at: number, reservedUsd: number | null = null): VerdictRecord =>
  verdictRow(accountId, at, { keyId: 'k', reservedUsd });

t.test('the writer: batched rows within a second, a reservation durable at once, retention', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pf-vlog-'));
  const store = await openStore({ databaseUrl: `sqlite:${join(dir, 'v.db')}` });
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const { logger } = captureLogger('silent');
  const log = new VerdictLog(store, logger, { retentionDays: 30, flushMs: 300 });
  const page = () =>
    store.verdictPage({ accountId: 'a', limit: 50, before: null, keyId: null, verdict: null, since: null });

  const plain = row('a', Date.now());
  t.equal(log.record(plain), undefined, 'a plain row does not hold its answer');
  t.same(await page(), [], 'not written yet: it waits for its batch');
  const reserving = row('a', Date.now(), 300);
  await log.record(reserving);
  t.same(
    (await page()).map((v) => v.id),
    [reserving.id],
    'a row with a reservation is written before its answer',
  );
  await new Promise((r) => setTimeout(r, 450));
  t.equal((await page()).length, 2, 'the batch was written within its interval');

  // Many rows: written in batches of at most `batchRows`, none lost.
  const many = new VerdictLog(store, logger, { retentionDays: 30, batchRows: 100, flushMs: 60_000 });
  for (let i = 0; i < 250; i++) many.record(row('b', Date.now() - i));
  await many.close();
  t.equal(many.queued, 0);
  const b = await store.verdictPage({
    accountId: 'b',
    limit: 500,
    before: null,
    keyId: null,
    verdict: null,
    since: null,
  });
  t.equal(b.length, 250);

  // Retention: rows older than VERDICT_LOG_DAYS go, the rest stay.
  await store.appendVerdicts([row('c', Date.now() - 31 * 86_400_000), row('c', Date.now() - 29 * 86_400_000)]);
  const pruned = await log.prune();
  t.equal(pruned.verdicts, 1);
  const c = await store.verdictPage({
    accountId: 'c',
    limit: 5,
    before: null,
    keyId: null,
    verdict: null,
    since: null,
  });
  t.equal(c.length, 1);
  await log.close();
});

t.test('a store that does not answer: 503 with Retry-After, never a 500; unwritten rows are kept', async (t) => {
  const cg = await startCoinGecko();
  cg.setPrice('usd-coin', 'usd', 0.9999);
  t.teardown(() => cg.close());
  const app = await startTestApp({ BILLING: 'on', PRICE_API_URL: cg.url });
  t.teardown(() => app.close().catch(() => undefined));
  const owner = await signup(app.url);
  // The key is now in the gate's cache; the database goes away under the running service.
  t.equal((await call(app.url, 'GET', '/v1/verdicts', owner)).status, 200);
  await app.store.close();
  const idem = await call(app.url, 'POST', '/v1/decide', owner, DECIDE, { 'idempotency-key': 'after-the-outage' });
  t.equal(idem.status, 503);
  t.equal(idem.headers.get('retry-after'), '5');
  t.match(idem.body.detail, /nothing was counted/);
  const page = await call(app.url, 'GET', '/v1/verdicts', owner);
  t.equal(page.status, 503);
  t.ok(page.headers.get('retry-after'));

  const { logger, logs } = captureLogger('error');
  const log = new VerdictLog(app.store, logger, { retentionDays: 30, flushMs: 60_000 });
  log.record(row('d', Date.now()));
  await log.flush();
  t.equal(log.queued, 1, 'the row waits for the next batch');
  t.ok(logs.some((l) => /not written; kept/.test(String(l.msg))));
});

t.test(
  "a reserved answer's row is written with its reservation: there when the process dies at once, never twice, and counted as written",
  async (t) => {
    const cg = await startCoinGecko();
    cg.setPrice('usd-coin', 'usd', 0.9999);
    t.teardown(() => cg.close());
    const dir = mkdtempSync(join(tmpdir(), 'pf-vlog-crash-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const databaseUrl = `sqlite:${join(dir, 'v.db')}`;
    const svc = await spawnService({ DATABASE_URL: databaseUrl, BILLING: 'on', PRICE_API_URL: cg.url });
    t.teardown(() => svc.child.kill('SIGKILL'));
    const owner = await signup(svc.url);
    const policy = { default: 'allow', limits: [{ id: 'daily', window: 'day', max_usd: 500 }] };
    t.equal((await call(svc.url, 'PUT', '/v1/policies/ops', owner, policy)).status, 201);
    const agent = await agentKey(svc.url, owner, 'runner', 'ops');
    const transfer = { action: 'transfer', chain: 'base', amount_usd: 300 };
    const reserved = await call(svc.url, 'POST', '/v1/guard', agent.key, transfer);
    t.equal(reserved.body.verdict, 'proceed');
    const refused = await call(svc.url, 'POST', '/v1/guard', agent.key, transfer);
    t.equal(refused.body.verdict, 'wait', 'the second 300 USD does not fit in 500');
    const scrape = await (await fetch(`${svc.url}/metrics`)).text();
    t.match(
      scrape,
      /preflight_verdict_log_rows_total\{outcome="written"\} 1\b/,
      'the row written with its reservation is counted as written',
    );
    // Dies right after the answers: nothing queued in memory is written now.
    svc.child.kill('SIGKILL');
    await svc.exited;

    const store = await openStore({ databaseUrl });
    t.teardown(() => store.close());
    const [account] = (await store.listApiKeys()).filter((k) => k.id === agent.id).map((k) => k.accountId);
    const rows = await store.verdictPage({
      accountId: account,
      limit: 50,
      before: null,
      keyId: null,
      verdict: null,
      since: null,
    });
    const id = reserved.body.attestation.typed_data.message.id;
    t.same(
      rows.filter((r) => r.reservedUsd !== null).map((r) => r.id),
      [id],
      "the reserved answer's row, once (the refused wait's row, batched, may be lost with the process's last second)",
    );
    t.equal(rows.filter((r) => r.id === id).length, 1, 'no second row for the reserved answer');
    t.same(
      rows.filter((r) => r.id !== id).map((r) => [r.verdict, r.reservedUsd]),
      rows.length === 2 ? [['wait', null]] : [],
    );
    rows.sort((a, b) => (a.id === id ? -1 : b.id === id ? 1 : 0));
    t.match(rows[0], {
      id,
      accountId: account,
      keyId: agent.id,
      keyName: 'runner',
      endpoint: '/v1/guard',
      verdict: reserved.body.verdict,
      risk: reserved.body.risk,
      failureModes: reserved.body.failure_modes,
      policy: reserved.body.decision.policy,
      reservedUsd: 300,
      reservation: 'committed',
    });
    t.equal(rows[0].failureModes.length, reserved.body.failure_modes.length);
  },
);
