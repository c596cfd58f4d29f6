/**
 * One signed authorization buys exactly one answer: a payment header sent again is refused as a
 * duplicate, before and after it settled, and of 50 concurrent copies exactly one is served.
 */
import t from 'tap';
import { startUsdcChain } from '../../helpers/usdc.js';
import { PATH, PRICE, captureHeader, decodeHeader, postJson, startPaidServer, until } from './fixture.js';

const chain = await startUsdcChain();
t.teardown(() => chain.close());
const srv = await startPaidServer(chain);
t.teardown(() => srv.close());
const url = srv.url + PATH;
const headerName = (v: 1 | 2) => (v === 2 ? 'PAYMENT-SIGNATURE' : 'X-PAYMENT');

async function allSettled(n: number) {
  return until(async () => {
    const c = await srv.store.countPaymentsByState();
    return c.settled + c.failed >= n && c.verified + c.settling === 0 ? c : undefined;
  });
}

for (const version of [1, 2] as const) {
  t.test(`v${version}: the same header again is a duplicate, before and after settlement`, async (t) => {
    const payer = await chain.wallet(PRICE * 5n);
    const header = await captureHeader(version, chain, payer, url);
    const served = await srv.served();
    const first = await postJson(fetch, url, { goal: 'replay' }, { [headerName(version)]: header });
    t.equal(first.status, 200);
    const again = await postJson(fetch, url, { goal: 'replay' }, { [headerName(version)]: header });
    t.equal(again.status, 402);
    t.equal((await again.json()).error, 'duplicate_settlement');
    t.match(decodeHeader(again.headers.get(version === 2 ? 'payment-response' : 'x-payment-response')), {
      success: false,
      errorReason: 'duplicate_settlement',
      payer: payer.address,
    });
    const counts = await allSettled(version);
    t.equal(counts.failed, 0);
    const later = await postJson(fetch, url, { goal: 'replay' }, { [headerName(version)]: header });
    t.equal(later.status, 402, 'still refused once the authorization is spent on chain');
    t.equal((await later.json()).error, 'duplicate_settlement');
    t.equal(await srv.served(), served + 1, 'served once');
    t.equal(await chain.balanceOf(payer.address), PRICE * 4n, 'charged once');
  });
}

t.test('50 concurrent copies of one header: exactly one 200', async (t) => {
  const payer = await chain.wallet(PRICE * 5n);
  const header = await captureHeader(2, chain, payer, url);
  const served = await srv.served();
  const payToBefore = await chain.balanceOf(srv.payTo);
  const results = await Promise.all(
    Array.from({ length: 50 }, () => postJson(fetch, url, { goal: 'replay' }, { 'PAYMENT-SIGNATURE': header })),
  );
  const statuses = results.map((r) => r.status);
  t.equal(statuses.filter((s) => s === 200).length, 1, 'one answer');
  t.equal(statuses.filter((s) => s === 402).length, 49, 'the rest refused');
  for (const r of results.filter((x) => x.status === 402)) t.equal((await r.json()).error, 'duplicate_settlement');
  t.equal(await srv.served(), served + 1);
  await allSettled(3);
  t.equal(await chain.balanceOf(srv.payTo), payToBefore + PRICE, 'one transfer');
  t.equal(await chain.balanceOf(payer.address), PRICE * 4n);
});
