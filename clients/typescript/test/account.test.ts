/**
 * The typed client's account methods against the real service (SQLite, billing on): agent keys,
 * policy versions, usage and the dry run, with the wire shapes of docs/policies.md, and the 403 an
 * agent key gets as a PreflightError.
 */
import t from 'tap';
import { startTestApp, post } from '../../../test/helpers/app.js';
import { PreflightError, createClient } from '../src/index.js';

const app = await startTestApp({ BILLING: 'on' });
t.teardown(() => app.close());
const owner = (await post(`${app.url}/v1/api-keys/signup`, { email: 'client-account@example.com' })).body.api_key;
const client = createClient({ baseUrl: app.url, apiKey: owner });

t.test('keys and policies through the typed client', async (t) => {
  const v1 = await client.putPolicy('payments', {
    default: 'allow',
    limits: [{ id: 'daily', window: 'day', max_usd: 100 }],
  });
  t.same([v1.name, v1.version], ['payments', 1]);
  t.match(v1.hash, /^0x[0-9a-f]{64}$/);
  t.equal((await client.getPolicy('payments')).hash, v1.hash);
  t.equal((await client.getPolicyVersion('payments', 1)).version, 1);
  t.same(
    (await client.listPolicies()).policies.map((p) => p.name),
    ['payments'],
  );
  const key = await client.createKey({ name: 'bot', policy: 'payments' });
  t.same([key.role, key.policy], ['agent', 'payments']);
  t.same(
    (await client.listKeys()).keys.map((k) => k.name),
    ['owner', 'bot'],
  );
  const usage = await client.policyUsage('payments');
  t.same(
    usage.limits.map((l) => [l.id, l.max_usd, l.remaining_usd]),
    [['daily', 100, 100]],
  );
  const dry = await client.evaluatePolicy('payments', { action: 'transfer', amount_usd: 10 });
  t.equal((dry.decision as { dry_run?: boolean }).dry_run, true);

  const agent = createClient({ baseUrl: app.url, apiKey: key.api_key });
  const refused = await agent.createKey({ name: 'x' }).catch((e: unknown) => e);
  t.ok(refused instanceof PreflightError && refused.status === 403, 'an agent key cannot create keys');
  t.equal((await agent.getPolicy('payments')).version, 1, 'it reads its own policy');

  t.equal((await client.updateKey(key.id, null)).policy, null);
  t.equal(await client.revokeKey(key.id), undefined);
  t.equal(await client.deletePolicy('payments'), undefined);
  const gone = await client.getPolicy('payments').catch((e: unknown) => e);
  t.ok(gone instanceof PreflightError && gone.status === 404);
  const unpaid = await createClient({ baseUrl: app.url })
    .listKeys()
    .catch((e: unknown) => e);
  t.ok(unpaid instanceof PreflightError && unpaid.status === 401, 'no key: refused before sending');
});
