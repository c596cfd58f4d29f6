/**
 * The typed client and what the service keeps about answers (docs/policies.md §9, §10): every
 * keyed POST carries one Idempotency-Key across its attempts, so a retry after a dropped
 * connection is answered from the first attempt and counted once; `verdicts()` pages the log.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startTestApp, post } from '../../../test/helpers/app.js';
import { createClient } from '../src/index.js';

const app = await startTestApp({ BILLING: 'on' });
t.teardown(() => app.close());
const owner = (await post(`${app.url}/v1/api-keys/signup`, { email: 'client-verdicts@example.com' })).body.api_key;

/**
 * A loopback relay to the service that lets the first request through, waits for the service's
 * answer, and then drops the client's connection without passing it on: the answer was given,
 * the caller never saw it.
 */
async function dropFirstAnswer(): Promise<{ url: string; keys: string[]; close(): Promise<void> }> {
  const keys: string[] = [];
  let dropped = false;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      keys.push(String(req.headers['idempotency-key'] ?? ''));
      const headers: Record<string, string> = {};
      for (const name of ['content-type', 'x-api-key', 'idempotency-key', 'accept'])
        if (typeof req.headers[name] === 'string') headers[name] = req.headers[name] as string;
      const upstream = await fetch(`${app.url}${req.url}`, {
        method: req.method,
        headers,
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      });
      const text = await upstream.text();
      if (!dropped && req.method === 'POST') {
        dropped = true;
        req.socket.destroy();
        return;
      }
      res.writeHead(upstream.status, { 'content-type': 'application/json' });
      res.end(text);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keys,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

t.test('a retried keyed call is answered once and counted once; the log shows it once', async (t) => {
  const relay = await dropFirstAnswer();
  t.teardown(() => relay.close());
  const client = createClient({ baseUrl: relay.url, apiKey: owner });
  const [record] = await app.store.listApiKeys();
  const period = new Date().toISOString().slice(0, 7);
  const answer = await client.guard({ action: 'transfer', amount_usd: 5 });
  t.equal(relay.keys.length, 2, 'the first answer was dropped and the call sent again');
  t.equal(relay.keys[0], relay.keys[1], 'under the same Idempotency-Key');
  t.match(relay.keys[0], /^[\x21-\x7e]{16,255}$/);
  t.equal(await app.store.getUsage(record.accountId, period), 1, 'counted once');

  const direct = createClient({ baseUrl: app.url, apiKey: owner });
  await direct.decide({ goal: 'nothing to check', checks: [] });
  const page = await direct.verdicts({ limit: 1 });
  t.equal(page.verdicts.length, 1);
  t.equal(page.verdicts[0].endpoint, '/v1/decide');
  t.type(page.next_cursor, 'string');
  const next = await direct.verdicts({ limit: 1, cursor: page.next_cursor ?? undefined });
  t.equal(next.verdicts[0].id, answer.attestation?.typed_data.message.id, 'the guard, once');
  t.equal(next.next_cursor, null);
  t.same((await direct.verdicts({ verdict: 'block' })).verdicts, []);
});
