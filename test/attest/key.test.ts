/**
 * The signing key: ATTESTATION_KEY when set; otherwise made on first start and kept in the store,
 * so a restart signs as the same signer and every process on one PostgreSQL signs as one. The key
 * is in no log line, metric, error body or answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import pg from 'pg';
import { privateKeyToAccount } from 'viem/accounts';
import { verifyTypedData } from 'viem';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import { pgSchemaUrl } from '../helpers/pg.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { spawnService } from '../helpers/spawn.js';

const DECIDE = JSON.stringify({ goal: 'g', checks: [{ type: 'approval_amount', amount: '5' }] });

async function signedBy(url: string): Promise<string> {
  const res = await fetch(`${url}/v1/decide`, { method: 'POST', body: DECIDE });
  const a = ((await res.json()) as any).attestation;
  const ok = await verifyTypedData({ address: a.signer, ...a.typed_data, signature: a.signature });
  if (!ok) throw new Error('the signature does not verify');
  return a.signer;
}

async function published(url: string): Promise<string> {
  return ((await (await fetch(`${url}/v1/capabilities`)).json()) as any).attestation.signer;
}

/** Everything an outsider can read from a running app: answers, errors, capabilities, metrics, OpenAPI, logs. */
async function everythingVisible(app: TestApp): Promise<string> {
  const parts: string[] = [];
  const get = async (path: string) => parts.push(await (await fetch(app.url + path)).text());
  const post = async (path: string, body: string) =>
    parts.push(await (await fetch(app.url + path, { method: 'POST', body })).text());
  await post('/v1/decide', DECIDE);
  await post('/v1/guard', '{"action":"swap"}');
  await post('/v1/decide', '{"goal": 1}');
  await post('/v1/decide', '{not json');
  await post('/v1/guard', JSON.stringify({ action: 'transfer', transaction: { from: 'nope' } }));
  for (const path of ['/', '/health', '/v1/capabilities', '/v1/agents', '/openapi.json', '/metrics', '/nowhere'])
    await get(path);
  parts.push(JSON.stringify(app.logs));
  return parts.join('\n');
}

function assertAbsent(t: Test, text: string, key: string): void {
  const bare = key.slice(2);
  t.notOk(text.toLowerCase().includes(bare.toLowerCase()), 'the key appears nowhere (any case)');
  t.notOk(text.includes(Buffer.from(bare, 'hex').toString('base64')), 'nor in base64');
}

t.test('ATTESTATION_KEY signs, and is nowhere to be seen', async (t) => {
  const key = `0x${randomBytes(32).toString('hex')}`;
  const app = await startTestApp({ ATTESTATION_KEY: key, LOG_LEVEL: 'debug' });
  t.teardown(() => app.close());
  const expected = privateKeyToAccount(key as `0x${string}`).address;
  t.equal(await signedBy(app.url), expected, 'answers are signed by the configured key');
  t.equal(await published(app.url), expected);
  assertAbsent(t, await everythingVisible(app), key);
});

t.test('a malformed ATTESTATION_KEY stops start-up without repeating it', async (t) => {
  for (const bad of [
    `0x${'ab'.repeat(31)}`,
    `0x${'00'.repeat(32)}`,
    `0x${'ff'.repeat(32)}`,
    'ab'.repeat(32),
    `0x${'zz'.repeat(32)}`,
  ]) {
    const err = (() => {
      try {
        loadConfig({ ATTESTATION_KEY: bad });
      } catch (e) {
        return e as Error;
      }
      return null;
    })();
    t.ok(err instanceof ConfigError, `refused: ${bad.slice(0, 6)}…`);
    t.notOk(err?.message.includes(bad.replace(/^0x/, '')), 'the message does not carry the value');
    t.match(err?.message, /ATTESTATION_KEY/);
  }
});

t.test('without ATTESTATION_KEY: made on first start, kept in SQLite, the same after a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pf-attest-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const DATABASE_URL = `sqlite:${join(dir, 'keep.db')}`;
  const first = await startTestApp({ DATABASE_URL, LOG_LEVEL: 'debug' });
  const signer = await signedBy(first.url);
  const store = await openStore({ databaseUrl: DATABASE_URL });
  const kept = await store.attestationKey({ privateKey: `0x${'11'.repeat(32)}`, address: '0x' });
  await store.close();
  t.equal(privateKeyToAccount(kept.privateKey as `0x${string}`).address, signer, 'the kept key is the signer');
  t.equal(kept.address, signer);
  assertAbsent(t, await everythingVisible(first), kept.privateKey);
  await first.close();

  const second = await startTestApp({ DATABASE_URL });
  t.teardown(() => second.close());
  t.equal(await signedBy(second.url), signer, 'a restart signs as the same signer');
  const other = await startTestApp({});
  t.teardown(() => other.close());
  t.not(await signedBy(other.url), signer, 'another store makes another key');
});

// PostgreSQL: two service processes started together on one fresh schema agree on one signer.

t.test('PostgreSQL: two processes on one database sign as one signer, also after a restart', async (t) => {
  const url = await pgSchemaUrl(t, 'pf_attest');
  if (url === null) return;
  const env = { DATABASE_URL: url, BILLING: 'off', POOL_THREADS: '0' };

  const [a, b] = await Promise.all([spawnService(env), spawnService(env)]);
  const stop = async (p: typeof a) => {
    p.child.kill('SIGTERM');
    await p.exited;
  };
  try {
    const [sa, sb] = await Promise.all([signedBy(a.url), signedBy(b.url)]);
    t.equal(sa, sb, 'both processes sign as one signer');
    t.equal(await published(a.url), sa);
    t.equal(await published(b.url), sa);
    const reader = new pg.Client({ connectionString: url });
    await reader.connect();
    const { rows } = await reader
      .query('SELECT private_key, address FROM attestation_keys')
      .finally(() => reader.end());
    t.equal(rows.length, 1, 'one key kept');
    t.equal(privateKeyToAccount(rows[0].private_key).address, sa);
    const logs = JSON.stringify([...a.logs, ...b.logs]);
    t.notOk(logs.includes(rows[0].private_key.slice(2)), 'the key is in neither process log');

    await stop(a);
    const c = await spawnService(env);
    try {
      t.equal(await signedBy(c.url), sa, 'a restarted process signs as the same signer');
    } finally {
      await stop(c);
    }
  } finally {
    if (a.child.exitCode === null) await stop(a);
    await stop(b);
  }
});
