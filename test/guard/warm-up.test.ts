/**
 * The guard's warm-up (src/guard/warm-up.ts): the stand-in node answers JSON-RPC as a node does,
 * the checks the guards plan take their passing paths on it in a check thread's warm-up, and the
 * event loop judges each warm guard whole to a proceed, screened against the service's own lists,
 * with nothing learned, reserved or left running.
 */
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { WARM_TIMEOUT_MS, standInRpc, warmUp } from '../../src/engine/warm-up.js';
import { guardWarmChecks, warmGuardBodies, warmGuards } from '../../src/guard/warm-up.js';
import { bodyProblems } from '../../src/http/validation.js';
import { closeDispatchers } from '../../src/net/dispatchers.js';
import { Screening } from '../../src/screening/service.js';
import { openStore } from '../../src/store/index.js';
import { OFFLINE_UPSTREAMS } from '../helpers/offline.js';
import { timersOf } from '../helpers/timers.js';

// Providers on a closed loopback port: the warm-up's connections opened ahead go nowhere else.
const config = loadConfig({ ...OFFLINE_UPSTREAMS });
t.teardown(closeDispatchers);

t.test('the stand-in node answers one call, a batch, and a body it cannot parse', async (t) => {
  const now = 1_800_000_000;
  t.same(JSON.parse(standInRpc('{"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":[]}', now)), {
    jsonrpc: '2.0',
    id: 7,
    result: '0x2105',
  });
  const batch = JSON.parse(
    standInRpc(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
        { jsonrpc: '2.0', id: 2, method: 'eth_getBlockByNumber', params: ['latest', false] },
        { jsonrpc: '2.0', id: 3, method: 'eth_call', params: [{ to: '0x01', data: '0x313ce567' }, 'latest'] },
        { jsonrpc: '2.0', id: 4, method: 'eth_unknown', params: [] },
      ]),
      now,
    ),
  );
  t.same(
    batch.map((r: { id: number }) => r.id),
    [1, 2, 3, 4],
    'one answer per call, in order',
  );
  t.equal(batch[1].result.timestamp, `0x${now.toString(16)}`, 'the head is as fresh as the second asked');
  t.equal(BigInt(batch[2].result), 6n, 'decimals() is 6');
  t.equal(batch[3].result, null);
  // An ERC-20 transfer logs its Transfer from the sender to the calldata's recipient, for its amount.
  const to = `${'00'.repeat(12)}${'ab'.repeat(20)}`;
  const amount = 12345n.toString(16).padStart(64, '0');
  const sim = JSON.parse(
    standInRpc(
      JSON.stringify({
        id: 9,
        method: 'eth_simulateV1',
        params: [
          {
            blockStateCalls: [
              {
                calls: [
                  { from: `0x${'cd'.repeat(20)}`, to: `0x${'ef'.repeat(20)}`, data: `0xa9059cbb${to}${amount}` },
                  { from: `0x${'cd'.repeat(20)}`, to: `0x${'ef'.repeat(20)}`, data: '0x' },
                ],
              },
            ],
          },
        ],
      }),
      now,
    ),
  );
  const [transfer, quiet] = sim.result[0].calls;
  t.equal(transfer.status, '0x1');
  t.equal(transfer.logs[0].address, `0x${'ef'.repeat(20)}`, "the log is the token's");
  t.equal(transfer.logs[0].topics[2], `0x${to}`, 'to the recipient');
  t.equal(BigInt(transfer.logs[0].data), 12345n, 'for the amount');
  t.same(quiet.logs, [], 'a call with no calldata moves nothing');
  t.match(JSON.parse(standInRpc('{nope', now)), { error: { code: -32700 } });
});

t.test('the warm guards pass the request rules and plan the checks that read the node', async (t) => {
  for (const body of warmGuardBodies(Math.floor(Date.now() / 1000)))
    t.same(bodyProblems('GuardRequest', body), [], 'a body the rules accept');
  // The threads keep a token's price, decimals and symbol by its address: the warm guards name no
  // real one, so the stand-in's answers never stand in for a real token's (the CoW settlement
  // contract, a venue, is the one real address).
  const named = [...JSON.stringify(warmGuardBodies(0)).matchAll(/"(0x[0-9a-fA-F]{40})"/g)].map((m) => m[1]);
  t.ok(named.length >= 5, `${named.length} addresses named`);
  t.same(
    [...new Set(named.map((a) => a.toLowerCase()))].filter(
      (a) => !a.startsWith(`0x${'00'.repeat(17)}`) && a !== '0x9008d19f58aabd9ed0d60971565aa8510560ab41',
    ),
    [],
    'no real token, account or delegate',
  );
  const types = guardWarmChecks(config).map((c) => c.type);
  for (const type of ['transaction_simulation', 'delegation_scan', 'signature_scan'])
    t.ok(types.includes(type), `${type} is warmed`);
  t.notOk(types.includes('counterparty_screen'), 'the screen runs on the event loop, not in a check thread');
});

t.test("a check thread's warm-up takes each guard check's passing path on the stand-in", async (t) => {
  const checks = guardWarmChecks(config);
  const results = await warmUp(config, checks);
  const guards = results.filter((r) => r.id >= 100);
  t.equal(guards.length, checks.length, 'one result per guard check');
  for (const r of guards) {
    t.equal(r.outcome.status, 'pass', `${checks[r.id - 100]?.type}: ${r.outcome.message}`);
    t.notMatch(r.outcome.message, /undefined|NaN/, 'the message is whole');
  }
  const text = guards.map((r) => r.outcome.message).join(' ');
  t.match(text, /Simulated with eth_simulateV1 .* sends 100 WARM \(\$100\)/, 'the simulation priced what it moved');
  t.match(text, /it moved nothing under the probe/, 'the delegation was probed');
  t.match(text, /CoW Protocol order .* gives 100 WARM \(\$100\)/, 'the order was read and priced');
  t.equal(await timersOf(WARM_TIMEOUT_MS), 0, 'no timer left behind');
});

t.test('the event loop judges each warm guard to proceed, screened, and learns nothing', async (t) => {
  const store = await openStore({ databaseUrl: 'sqlite::memory:' });
  const screening = new Screening({ config: config.screening, store });
  await screening.start();
  t.teardown(async () => {
    await screening.stop();
    await store.close();
  });
  const learned: string[][] = [];
  Object.assign(screening, {
    learn: async (_account: string, addresses: readonly string[]) => void learned.push([...addresses]),
  });
  t.same(await warmGuards(config, screening), [], 'every warm guard validated and proceeded');
  t.equal(await timersOf(WARM_TIMEOUT_MS), 0, 'no timer left behind');
  t.same(learned, [], 'a warm-up has no account to teach');
  // Without the lists the screen cannot clear anyone: the warm-up says so rather than pass.
  const problems = await warmGuards(config, null);
  t.equal(problems.length, 3, problems.join('\n'));
  t.match(problems[0], /answered wait: .*screening lists are not loaded/);
  t.equal(await timersOf(WARM_TIMEOUT_MS), 0, 'no timer left behind');
});
