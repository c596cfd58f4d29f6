/**
 * X402_SETTLEMENT=facilitator: the payment is checked by us, then by the facilitator's /verify,
 * claimed, served, and settled through its /settle; the official facilitator moves the USDC on
 * chain. Without a chain RPC of our own, replays are caught by the ledger alone.
 */
import t from 'tap';
import { startUsdcChain } from '../../helpers/usdc.js';
import { startFacilitator } from './facilitator.js';
import {
  PATH,
  PRICE,
  captureHeader,
  decodeHeader,
  postJson,
  startPaidServer,
  until,
  v1Fetch,
  v2Fetch,
} from './fixture.js';

const chain = await startUsdcChain();
t.teardown(() => chain.close());
const fac = await startFacilitator(chain);
t.teardown(() => fac.close());
const srv = await startPaidServer(chain, {
  env: { X402_SETTLEMENT: 'facilitator', X402_FACILITATOR_URL: fac.url, X402_RPC_URL: '', X402_SETTLER_KEY: '' },
});
t.teardown(() => srv.close());
const url = srv.url + PATH;

for (const version of [1, 2] as const) {
  t.test(`v${version} pays through the facilitator`, async (t) => {
    const payer = await chain.wallet(PRICE * 2n);
    const before = await chain.balanceOf(srv.payTo);
    const res = await postJson(version === 1 ? v1Fetch(chain, payer) : v2Fetch(payer), url);
    t.equal(res.status, 200);
    const verify = fac.calls.filter((c) => c.path === '/verify').at(-1);
    t.match(verify, {
      body: {
        x402Version: version,
        paymentRequirements:
          version === 1
            ? { network: 'base', maxAmountRequired: '10000', resource: url }
            : { network: 'eip155:8453', amount: '10000' },
      },
      answer: { isValid: true },
    });
    const rec = await until(async () => {
      const r =
        (await srv.store.listUnsettledPayments(0, 10)).length === 0
          ? srv.logs.find((l) => l.msg === 'x402 payment settled' && l.payer === payer.address.toLowerCase())
          : undefined;
      return r ? srv.store.getPayment(String(r.paymentId)) : undefined;
    });
    const settle = fac.calls.filter((c) => c.path === '/settle').at(-1);
    t.match(rec, { state: 'settled', txHash: settle?.answer.transaction, x402Version: version });
    t.equal((await chain.provider.getTransactionReceipt(rec?.txHash as string))?.status, 1);
    t.equal(await chain.balanceOf(srv.payTo), before + PRICE);
  });
}

t.test('the facilitator refuses a payer without funds: 402 with its reason, nothing claimed', async (t) => {
  const broke = await chain.wallet(1n);
  const before = await srv.store.countPaymentsByState();
  const header = await captureHeader(2, chain, broke, url);
  const res = await postJson(fetch, url, { goal: 'broke' }, { 'PAYMENT-SIGNATURE': header });
  t.equal(res.status, 402);
  const reason = (await res.json()).error;
  t.match(reason, /insufficient|balance|simulation/, 'the facilitator names it (its own vocabulary)');
  t.match(decodeHeader(res.headers.get('payment-response')), {
    success: false,
    errorReason: reason,
    payer: broke.address,
  });
  t.same(await srv.store.countPaymentsByState(), before);
});

t.test('without our own RPC, the ledger alone refuses a replay', async (t) => {
  const payer = await chain.wallet(PRICE * 2n);
  const header = await captureHeader(1, chain, payer, url);
  // Settlement waits until all copies are answered, so the facilitator finds every one valid.
  const release = fac.holdSettle();
  const results = await Promise.all(
    Array.from({ length: 10 }, () => postJson(fetch, url, { goal: 'replay' }, { 'X-PAYMENT': header })),
  );
  t.same(results.map((r) => r.status).sort(), [200, 402, 402, 402, 402, 402, 402, 402, 402, 402]);
  for (const r of results.filter((x) => x.status === 402))
    t.equal((await r.json()).error, 'duplicate_settlement', 'the facilitator said valid, the ledger said used');
  release();
  await until(async () => ((await srv.store.listUnsettledPayments(0, 10)).length === 0 ? true : undefined));
  const again = await postJson(fetch, url, { goal: 'replay' }, { 'X-PAYMENT': header });
  t.equal(again.status, 402, 'and after settlement the facilitator refuses it too');
  t.equal(await chain.balanceOf(payer.address), PRICE, 'paid once');
});

t.test('a facilitator that is down: 503, the payment left unused', async (t) => {
  const payer = await chain.wallet(PRICE);
  const header = await captureHeader(2, chain, payer, url);
  fac.down = true;
  const res = await postJson(fetch, url, { goal: 'down' }, { 'PAYMENT-SIGNATURE': header });
  fac.down = false;
  t.equal(res.status, 503);
  t.match(await res.json(), { detail: /unavailable/ });
  t.equal(res.headers.get('retry-after'), '5');
  const ok = await postJson(fetch, url, { goal: 'back' }, { 'PAYMENT-SIGNATURE': header });
  t.equal(ok.status, 200, 'the same payment works once the facilitator is back');
});
