/**
 * The official clients pay a real endpoint on a real (local) Base USDC: the v1 client reads the
 * JSON body, the v2 client the PAYMENT-REQUIRED header; each payment buys one answer and moves
 * exactly 0.01 USDC to payTo on chain, with the transaction recorded in the ledger.
 */
import t from 'tap';
import { startUsdcChain } from '../../helpers/usdc.js';
import { PATH, PRICE, decodeHeader, postJson, startPaidServer, until, v1Fetch, v2Fetch } from './fixture.js';

const chain = await startUsdcChain();
t.teardown(() => chain.close());
const srv = await startPaidServer(chain);
t.teardown(() => srv.close());
const url = srv.url + PATH;

t.test('without payment: 402 with the v2 challenge in the header and the v1 one as the body', async (t) => {
  const res = await postJson(fetch, url);
  t.equal(res.status, 402);
  t.equal(res.headers.get('cache-control'), 'no-store');
  const body = await res.json();
  t.match(body, {
    x402Version: 1,
    error: 'X-PAYMENT header is required',
    accepts: [
      {
        scheme: 'exact',
        network: 'base',
        maxAmountRequired: '10000',
        resource: url,
        mimeType: 'application/json',
        payTo: srv.payTo,
        asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        maxTimeoutSeconds: 60,
        extra: { name: 'USD Coin', version: '2' },
      },
    ],
  });
  t.notOk('api_key_signup' in body, 'payment only: no pointer to keys');
  t.notOk('outputSchema' in body.accepts[0], 'no outputSchema: the v1 client rejects null');
  const v2 = decodeHeader(res.headers.get('payment-required')) as Record<string, unknown>;
  // The extensions (payment-identifier, bazaar) are checked in payment-id.test.ts.
  t.same(Object.keys(v2.extensions as object), ['payment-identifier', 'bazaar']);
  delete v2.extensions;
  t.same(v2, {
    x402Version: 2,
    error: 'PAYMENT-SIGNATURE header is required',
    resource: { url, description: body.accepts[0].description, mimeType: 'application/json' },
    accepts: [
      {
        scheme: 'exact',
        network: 'eip155:8453',
        amount: '10000',
        asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        payTo: srv.payTo,
        maxTimeoutSeconds: 60,
        extra: { name: 'USD Coin', version: '2' },
      },
    ],
  });
  t.equal(await srv.served(), 0);
});

t.test('an endpoint that also takes keys says so in its challenge', async (t) => {
  const res = await postJson(fetch, srv.url + '/v1/decide');
  t.equal(res.status, 402);
  const body = await res.json();
  t.match(body, {
    x402Version: 1,
    accepts: [{ resource: srv.url + '/v1/decide', network: 'base' }],
    api_key_signup: '/v1/api-keys/signup',
    note: /API key/,
  });
  t.ok(res.headers.get('payment-required'));
});

for (const version of [1, 2] as const) {
  t.test(`the official v${version} client pays once and gets its answer; payTo gains exactly 10000`, async (t) => {
    const payer = await chain.wallet(PRICE * 3n);
    const pay = version === 1 ? v1Fetch(chain, payer) : v2Fetch(payer);
    const before = await chain.balanceOf(srv.payTo);
    const servedBefore = await srv.served();

    const res = await postJson(pay, url, { goal: `v${version} pays` });
    t.equal(res.status, 200);
    t.match(
      await res.json(),
      { verdict: /^(proceed|wait|block)$/, failure_modes: ['no_checks'] },
      'the engine answered',
    );
    t.equal(await srv.served(), servedBefore + 1);
    const receipt = decodeHeader(res.headers.get(version === 2 ? 'payment-response' : 'x-payment-response'));
    t.match(receipt, { success: true, network: version === 2 ? 'eip155:8453' : 'base', payer: payer.address });
    t.equal(
      res.headers.get(version === 2 ? 'x-payment-response' : 'payment-response'),
      null,
      'one receipt header, of the paid version',
    );

    const payer_ = payer.address.toLowerCase();
    const settled = await until(async () => {
      const counts = await srv.store.countPaymentsByState();
      if (counts.settled < version) return undefined;
      const rows = await srv.store.listUnsettledPayments(0, 100);
      return rows.length === 0 ? counts : undefined;
    });
    t.equal(settled.failed, 0);
    t.equal(await chain.balanceOf(srv.payTo), before + PRICE, 'exactly 0.01 USDC more at payTo');
    t.equal(await chain.balanceOf(payer.address), PRICE * 2n, 'exactly 0.01 USDC less at the payer');

    const log = srv.logs.find((l) => l.msg === 'x402 payment settled' && l.payer === payer_);
    t.ok(log, 'the settlement is logged');
    const rec = await srv.store.getPayment(String(log?.paymentId));
    t.match(rec, {
      state: 'settled',
      payer: payer_,
      value: '10000',
      x402Version: version,
      attempts: 1,
      lastError: null,
    });
    const txHash = rec?.txHash as string;
    t.match(txHash, /^0x[0-9a-f]{64}$/);
    const onChain = await chain.provider.getTransactionReceipt(txHash);
    t.equal(onChain?.status, 1, 'the recorded hash is the mined transfer');
    t.equal(onChain?.to?.toLowerCase(), '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913');
  });
}
