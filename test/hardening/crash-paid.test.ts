/**
 * kill -9 under paid load (x402 on a local Base USDC), then a restart on the same ledger: every
 * payment whose call was answered 2xx is settled on chain, payments left verified or settling by
 * the crash are settled by the new process, and nothing is paid twice: payTo receives exactly
 * 0.01 USDC per settled payment, at least one per served call and at most one per call in flight
 * at the kill on top.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wallet } from 'ethers';
import { spawnService, type ServiceProcess } from '../helpers/spawn.js';
import { startUsdcChain } from '../helpers/usdc.js';
import { openStore } from '../../src/store/index.js';
import { PATH, PRICE, postJson, until, v2Fetch } from '../billing/x402/fixture.js';

const PAYERS = 8;
const CALLS_PER_PAYER = 20;
const MIN_LOAD_MS = 1000;
// The kill waits for MIN_SERVED served calls; on a loaded 2-core machine (the test suite runs
// two files at once) a paid call can take seconds, so the wait is bounded generously.
const MAX_LOAD_MS = 25_000;
const MIN_SERVED = 16;

t.test('paid calls across kill -9 and a restart', async (t) => {
  const chain = await startUsdcChain();
  t.teardown(() => chain.close());
  const dir = mkdtempSync(join(tmpdir(), 'preflight-crash-paid-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = `sqlite:${join(dir, 'ledger.db')}`;
  const settler = await chain.wallet(0n, 10n ** 20n);
  const payTo = Wallet.createRandom().address;
  const env = {
    DATABASE_URL: databaseUrl,
    BILLING: 'on',
    X402_PAY_TO: payTo,
    X402_SETTLER_KEY: settler.privateKey,
    X402_RPC_URL: chain.rpcUrl,
  };
  const payers: Wallet[] = [];
  for (let i = 0; i < PAYERS; i++) payers.push(await chain.wallet(PRICE * BigInt(CALLS_PER_PAYER))); // one minter: one at a time

  const first: ServiceProcess = await spawnService(env);
  t.teardown(() => void first.child.kill('SIGKILL'));
  let killed = false;
  let served = 0;
  let inflight = 0;
  const body = { goal: 'paid crash', checks: [{ type: 'approval_amount', amount: '0' }] };
  const load = Promise.all(
    payers.map(async (w) => {
      const pay = v2Fetch(w);
      for (let i = 0; i < CALLS_PER_PAYER && !killed; i++) {
        inflight++;
        try {
          const r = await postJson(pay, first.url + PATH, body);
          await r.arrayBuffer();
          if (r.status >= 200 && r.status < 300) served++;
        } catch {
          // the process died under this call
        } finally {
          inflight--;
        }
      }
    }),
  );
  const started = performance.now();
  while (
    performance.now() - started < MAX_LOAD_MS &&
    (performance.now() - started < MIN_LOAD_MS || served < MIN_SERVED)
  )
    await new Promise((r) => setTimeout(r, 20));
  const inflightAtKill = inflight;
  first.child.kill('SIGKILL');
  killed = true;
  await first.exited;
  await load;
  const servedAtKill = served;

  const ledger = await openStore({ databaseUrl });
  t.teardown(() => ledger.close());
  const left = await ledger.countPaymentsByState();
  t.comment(
    `${servedAtKill} paid calls served, ${inflightAtKill} in flight at the kill; ledger after the crash: ${JSON.stringify(left)}`,
  );
  t.ok(servedAtKill >= MIN_SERVED, 'the service was under paid load when it died');

  const second = await spawnService(env);
  t.teardown(() => void second.child.kill('SIGKILL'));
  // Verified payments wait out the longest deadline plus a margin (they may belong to a request
  // still being served) before the new process settles them.
  const final = await until(async () => {
    const s = await ledger.countPaymentsByState();
    return s.verified === 0 && s.settling === 0 ? s : undefined;
  }, 40_000);
  t.equal(final.failed, 0, 'no payment failed');
  t.ok(
    final.settled >= servedAtKill,
    `every served call's payment is settled (${final.settled} settled, ${servedAtKill} served)`,
  );
  t.ok(final.settled <= servedAtKill + inflightAtKill, 'and at most the calls in flight at the kill on top');
  t.equal(
    await chain.balanceOf(payTo),
    PRICE * BigInt(final.settled),
    'payTo received exactly one price per settled payment',
  );
  const spent = (await Promise.all(payers.map((w) => chain.balanceOf(w.address)))).reduce(
    (s, b) => s + (PRICE * BigInt(CALLS_PER_PAYER) - b),
    0n,
  );
  t.equal(spent, PRICE * BigInt(final.settled), 'and the payers paid exactly that, nobody twice');
  second.child.kill('SIGTERM');
  t.same(await second.exited, { code: 0, signal: null });
});
