/**
 * x402 payment-identifier on a real (local) Base USDC, paid by the official @x402/fetch client
 * with the official @x402/extensions helpers: a retry with the same id after a dropped connection
 * gets the kept answer and pays nothing more (its authorization is never used on chain); another
 * request under the same id is a 409; a malformed id is a 400; two instances on one PostgreSQL
 * agree. The challenge's extensions are read and checked with the official helpers too.
 */
import t from 'tap';
import type { Wallet } from 'ethers';
import { privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import {
  appendPaymentIdentifierToExtensions,
  generatePaymentId,
  isPaymentIdentifierRequired,
  validatePaymentIdentifier,
} from '@x402/extensions/payment-identifier';
import { validateDiscoveryExtension, validateDiscoveryExtensionSpec } from '@x402/extensions/bazaar';
import * as validators from '../../../src/generated/validators.js';
import { startUsdcChain } from '../../helpers/usdc.js';
import {
  PATH,
  PRICE,
  decodeHeader,
  droppingRelay,
  encodeHeader,
  postJson,
  startPaidPair,
  startPaidServer,
  until,
  type PaidServer,
} from './fixture.js';

const chain = await startUsdcChain();
t.teardown(() => chain.close());

/** The official client paying from `wallet` with payment identifier `id`; every payment header it sends is recorded. */
function payingWithId(wallet: Wallet, id: string, sent: string[] = []): typeof fetch {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(wallet.privateKey as `0x${string}`) });
  client.onBeforePaymentCreation(async (ctx) => {
    if (ctx.paymentRequired.extensions) appendPaymentIdentifierToExtensions(ctx.paymentRequired.extensions, id);
  });
  const recording = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    const h = req.headers.get('payment-signature');
    if (h !== null) sent.push(h);
    return fetch(req);
  }) as typeof fetch;
  return wrapFetchWithPayment(recording, client) as typeof fetch;
}

function authorizationOf(header: string): { from: string; nonce: string } {
  const p = decodeHeader(header) as { payload: { authorization: { from: string; nonce: string } } };
  return p.payload.authorization;
}

async function settledCount(srv: PaidServer): Promise<number> {
  return (await srv.store.countPaymentsByState()).settled;
}

t.test('one sqlite instance', async (t) => {
  const srv = await startPaidServer(chain);
  t.teardown(() => srv.close());
  const url = srv.url + PATH;

  t.test(
    'the challenge declares payment-identifier (optional) and a bazaar record, valid by the official helpers',
    async (t) => {
      for (const [path, schema, request] of [
        [PATH, 'DecideRequest', { goal: 'g' }],
        ['/v1/guard', 'GuardRequest', { action: 'swap' }],
        ['/v1/agents/bridge-risk/analyze', 'BridgeRiskRequest', { bridge_status_urls: ['https://status.example.com'] }],
        ['/v1/agents/yield-routing/recommend', 'YieldRoutingRequest', { options: [{ name: 'a', apy: 1 }] }],
        ['/v1/agents/stablecoin-intelligence/analyze', 'StablecoinIntelligenceRequest', { asset_ids: ['usd-coin'] }],
      ] as const) {
        const res = await postJson(fetch, srv.url + path, request);
        t.equal(res.status, 402, path);
        const header = res.headers.get('payment-required') ?? '';
        const v2 = decodeHeader(header) as { extensions: Record<string, any> };
        const pid = v2.extensions['payment-identifier'];
        t.same(validatePaymentIdentifier(pid), { valid: true }, `${path}: payment-identifier`);
        t.equal(isPaymentIdentifierRequired(pid), false);
        const bazaar = v2.extensions.bazaar;
        t.same(validateDiscoveryExtension(bazaar), { valid: true }, `${path}: bazaar info matches its schema`);
        t.same(validateDiscoveryExtensionSpec(bazaar), { valid: true }, `${path}: bazaar as the spec requires`);
        t.match(bazaar.info.input, { type: 'http', method: 'POST', bodyType: 'json' });
        t.ok(header.length < 6000, `${path}: the challenge header stays small (${header.length} characters)`);
        const validate = (validators as unknown as Record<string, (x: unknown) => boolean>)[schema];
        t.ok(validate(bazaar.info.input.body), `${path}: the bazaar example is a valid ${schema}`);
      }
    },
  );

  t.test('a retry with the same id after a dropped connection: the same answer, paid once', async (t) => {
    const relay = await droppingRelay(srv.url);
    t.teardown(() => relay.close());
    const payer = await chain.wallet(PRICE * 5n);
    const id = generatePaymentId();
    const sent: string[] = [];
    const pay = payingWithId(payer, id, sent);
    const before = await chain.balanceOf(srv.payTo);
    const servedBefore = await srv.served();
    const body = { goal: `retry safely ${id}` };

    relay.drop.on = true;
    await t.rejects(postJson(pay, relay.url + PATH, body), 'the first answer never reaches the client');
    t.equal(sent.length, 1);
    await until(async () => ((await settledCount(srv)) === 1 ? true : undefined));
    t.equal(await chain.balanceOf(srv.payTo), before + PRICE, 'the first payment settled');
    t.equal(await srv.served(), servedBefore + 1, 'the service did answer the first time');

    relay.drop.on = false;
    const res = await postJson(pay, relay.url + PATH, body);
    t.equal(res.status, 200);
    const answer = await res.text();
    t.match(JSON.parse(answer), { verdict: /proceed|wait|block/ });
    t.equal(sent.length, 2, 'the retry signed a second authorization');
    const receipt = decodeHeader(res.headers.get('payment-response'));
    t.match(receipt, { success: true, network: 'eip155:8453', transaction: /^0x[0-9a-f]{64}$/ });

    const again = await postJson(pay, url, body);
    t.equal(again.status, 200);
    t.equal(await again.text(), answer, 'the same answer, byte for byte');
    t.equal(await srv.served(), servedBefore + 1, 'served once: retries get the kept answer');

    await new Promise((r) => setTimeout(r, 500));
    t.equal(await chain.balanceOf(srv.payTo), before + PRICE, 'payTo grew once');
    t.equal(await chain.balanceOf(payer.address), PRICE * 4n, 'the payer paid once');
    t.equal(sent.length, 3);
    const [first, ...retries] = sent.map(authorizationOf);
    t.equal(await chain.usdc.authorizationState(first.from, first.nonce), true, 'the first authorization was used');
    for (const a of retries) {
      t.not(a.nonce, first.nonce, 'each retry is a new authorization');
      t.equal(await chain.usdc.authorizationState(a.from, a.nonce), false, 'a retry authorization is never settled');
    }
    t.equal(await settledCount(srv), 1);
  });

  t.test('same id, another body: 409, nothing paid', async (t) => {
    const payer = await chain.wallet(PRICE * 3n);
    const id = generatePaymentId();
    const pay = payingWithId(payer, id);
    t.equal((await postJson(pay, url, { goal: 'first body' })).status, 200);
    const before = await chain.balanceOf(srv.payTo);
    const res = await postJson(pay, url, { goal: 'another body' });
    t.equal(res.status, 409);
    t.match(await res.json(), { detail: /different request/ });
    const other = await postJson(pay, srv.url + '/v1/x402/guard', { action: 'swap' });
    t.equal(other.status, 409, 'another path under the same id');
    await new Promise((r) => setTimeout(r, 300));
    t.equal(await chain.balanceOf(payer.address), PRICE * 2n, 'only the first call was paid');
    t.ok((await chain.balanceOf(srv.payTo)) <= before + PRICE, 'payTo gained at most the first payment');
  });

  t.test('the same id from another payer is that payer’s own', async (t) => {
    const id = generatePaymentId();
    const a = payingWithId(await chain.wallet(PRICE), id);
    const b = payingWithId(await chain.wallet(PRICE), id);
    t.equal((await postJson(a, url, { goal: 'payer a' })).status, 200);
    t.equal((await postJson(b, url, { goal: 'payer b' })).status, 200, 'no conflict across payers');
  });

  t.test('a malformed id is a 400 and nothing is claimed', async (t) => {
    const payer = await chain.wallet(PRICE);
    let header: string | null = null;
    const inner = wrapFetchWithPayment(
      (async (input: RequestInfo | URL, init?: RequestInit) => {
        const req = new Request(input, init);
        header = req.headers.get('payment-signature');
        if (header === null) return fetch(req);
        return new Response('{}', { status: 200 });
      }) as typeof fetch,
      (() => {
        const c = new x402Client();
        registerExactEvmScheme(c, { signer: privateKeyToAccount(payer.privateKey as `0x${string}`) });
        c.onBeforePaymentCreation(async (ctx) => {
          if (ctx.paymentRequired.extensions)
            appendPaymentIdentifierToExtensions(ctx.paymentRequired.extensions, generatePaymentId());
        });
        return c;
      })(),
    ) as typeof fetch;
    await postJson(inner, url, { goal: 'malformed id' });
    t.ok(header);
    const payload = decodeHeader(header) as Record<string, any>;
    for (const bad of ['short', 'x'.repeat(129), 'pay_has a space in it!', 1234567890123456, null]) {
      const copy = structuredClone(payload);
      copy.extensions['payment-identifier'].info.id = bad;
      const res = await postJson(fetch, url, { goal: 'malformed id' }, { 'payment-signature': encodeHeader(copy) });
      t.equal(res.status, 400, `id ${JSON.stringify(bad)}`);
      t.match(await res.json(), { detail: /payment-identifier/ });
    }
    const noInfo = structuredClone(payload);
    noInfo.extensions['payment-identifier'] = 'pay_1234567890abcdef';
    t.equal(
      (await postJson(fetch, url, { goal: 'malformed id' }, { 'payment-signature': encodeHeader(noInfo) })).status,
      400,
    );
    t.equal(await srv.store.getPayment('none'), null);
    t.equal(await chain.balanceOf(payer.address), PRICE, 'nothing was taken');
    const ok = await postJson(
      fetch,
      url,
      { goal: 'malformed id' },
      { 'payment-signature': header as unknown as string },
    );
    t.equal(ok.status, 200, 'the same payment with its well-formed id is accepted');
  });
});

t.test('two instances on one PostgreSQL agree on an id', async (t) => {
  const pair = await startPaidPair(t, chain, 'payid_test');
  if (pair === null) return;
  const { a, b, payTo } = pair;

  const payer = await chain.wallet(PRICE * 3n);
  const id = generatePaymentId();
  const sent: string[] = [];
  const pay = payingWithId(payer, id, sent);
  const before = await chain.balanceOf(payTo);
  const body = { goal: 'two instances' };
  const first = await postJson(pay, a.url + PATH, body);
  t.equal(first.status, 200);
  const answer = await first.text();
  const second = await postJson(pay, b.url + PATH, body);
  t.equal(second.status, 200);
  t.equal(await second.text(), answer, 'instance b gives instance a’s answer');
  t.equal(await b.served(), 0, 'instance b ran nothing');
  t.equal((await postJson(pay, b.url + PATH, { goal: 'other' })).status, 409, 'and knows the request it belongs to');
  await until(async () => ((await chain.balanceOf(payTo)) === before + PRICE ? true : undefined));
  await new Promise((r) => setTimeout(r, 500));
  t.equal(await chain.balanceOf(payTo), before + PRICE, 'paid once across both instances');
  const second2 = authorizationOf(sent[1]);
  t.equal(await chain.usdc.authorizationState(second2.from, second2.nonce), false);
});
