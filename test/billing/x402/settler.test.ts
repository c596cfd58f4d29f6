/**
 * Two settlers on one ledger, as two instances of a fleet: one waits for its transfer's receipt
 * while the other's retry finds the transfer mined. The node is the JSON-RPC emulator, which can
 * hold a receipt back from one reader and show it to the other; the ledger is a real SQLite store.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Transaction, Wallet } from 'ethers';
import { UsdcChain } from '../../../src/billing/x402/chain.js';
import { USDC_BASE } from '../../../src/billing/x402/constants.js';
import { LocalSender } from '../../../src/billing/x402/settle-local.js';
import { Settler, claimedRecord } from '../../../src/billing/x402/settler.js';
import { closeDispatchers } from '../../../src/net/dispatchers.js';
import { openStore } from '../../../src/store/index.js';
import { startJsonRpc } from '../../emulators/jsonrpc.js';
import { captureLogger } from '../../helpers/app.js';
import { authorization, senderNode, signPayload } from './fixture.js';

t.teardown(closeDispatchers);

t.test('a settlement recorded by another instance first is counted and logged once', async (t) => {
  const store = await openStore({ databaseUrl: `sqlite:${join(mkdtempSync(join(tmpdir(), 'settler-')), 'l.db')}` });
  t.teardown(() => store.close());
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  let sent: string | null = null;
  let mined = false;
  senderNode(node, 0)
    .setHandler('eth_sendRawTransaction', (params) => {
      sent = Transaction.from(String(params[0])).hash;
      return { result: sent };
    })
    .setHandler('eth_getTransactionReceipt', (params) =>
      mined && params[0] === sent ? { result: { status: '0x1', blockNumber: '0x2' } } : { result: null },
    );

  const settlerKey = Wallet.createRandom().privateKey;
  const payer = Wallet.createRandom();
  const a = authorization(payer.address, Wallet.createRandom().address, {
    validAfter: '0',
    validBefore: '99999999999',
  });
  const { signature } = await signPayload(payer, a);
  const payment = {
    id: randomUUID(),
    asset: USDC_BASE.toLowerCase(),
    payer: a.from.toLowerCase(),
    nonce: a.nonce,
    payTo: a.to.toLowerCase(),
    value: a.value,
    network: 'eip155:8453',
    x402Version: 1 as const,
    payload: JSON.stringify({ payload: { signature, authorization: a } }),
    validBefore: Number(a.validBefore),
    resource: 'r',
  };
  t.equal(await store.claimPayment(payment), true);

  const policy = { maxAttempts: 5, baseDelayMs: 0, maxDelayMs: 0, pollMs: 60_000, verifiedGraceMs: 0 };
  const instance = (pollingMs: number) => {
    const chain = UsdcChain.connect(node.url, USDC_BASE, { pollingMs });
    const outcomes: string[] = [];
    const { logger, logs } = captureLogger();
    const settler = new Settler(store, new LocalSender(chain, settlerKey), chain, logger, policy, (o) =>
      outcomes.push(o),
    );
    return { settler, outcomes, logs };
  };
  // a asks for its receipt at once (not mined yet), then only 1.5 s later.
  const a1 = instance(1500);
  const b1 = instance(10);
  const first = a1.settler.settle(payment.id, { claimed: claimedRecord(payment) });
  while (sent === null) await new Promise((r) => setTimeout(r, 5));
  while ((await store.getPayment(payment.id))?.txHash !== sent) await new Promise((r) => setTimeout(r, 5));
  mined = true;
  // b's retry: the transfer a sent is mined, so b records the payment settled.
  t.same(await b1.settler.settle(payment.id), { state: 'settled', txHash: sent });
  t.same(await first, { state: 'settled', txHash: sent }, 'a sees its own transfer mined too');
  t.match(await store.getPayment(payment.id), { state: 'settled', txHash: sent });
  t.same([...a1.outcomes, ...b1.outcomes], ['settled'], 'one settlement, counted once across the two instances');
  const settledLines = [...a1.logs, ...b1.logs].filter((l) => l.msg === 'x402 payment settled');
  t.equal(settledLines.length, 1, 'and logged once');
  t.equal(node.calls.filter((c) => c.method === 'eth_sendRawTransaction').length, 1, 'one transfer sent');
});
