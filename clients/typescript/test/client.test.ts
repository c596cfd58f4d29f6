/**
 * The typed client against the real service: keyed calls to every method; a 429 from a gateway in
 * front of the service retried after its Retry-After; a used-up quota thrown with its wait; paid
 * calls on a real (local) Base USDC through @x402/fetch, including a retry after a dropped
 * connection that pays once; and verifyAttestation, checked against viem's own recovery, true for
 * a real answer and false for a tampered one, and held to the policy hash the answer was made
 * under (the service's signer re-signing a real answer for a policy, as the service does under one).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Wallet } from 'ethers';
import { privateKeyToAccount } from 'viem/accounts';
import { verifyTypedData } from 'viem';
import { startTestApp, post } from '../../../test/helpers/app.js';
import { startUsdcChain } from '../../../test/helpers/usdc.js';
import { PRICE, droppingRelay, startPaidServer, until } from '../../../test/billing/x402/fixture.js';
import { PreflightError, createClient, verifyAttestation, type DecideResponse } from '../src/index.js';
import { Attester } from '../../../src/attest/attester.js';

interface Att {
  signature: `0x${string}`;
  typed_data: { domain: Record<string, unknown>; primaryType: string; message: Record<string, unknown> };
}

async function signup(url: string, email: string): Promise<string> {
  const res = await post(`${url}/v1/api-keys/signup`, { email });
  if (res.status !== 200 && res.status !== 201) throw new Error(`signup ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.api_key as string;
}

/** A gateway in front of `target` that answers the first `n` calls 429 with `Retry-After: <seconds>`. */
async function throttlingGateway(target: string, n: number, seconds: number) {
  const hits: number[] = [];
  const server = http.createServer(async (req, res) => {
    hits.push(Date.now());
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (hits.length <= n) {
      res.writeHead(429, { 'retry-after': String(seconds), 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: 'Too many requests at the gateway' }));
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
    const up = await fetch(target + (req.url ?? '/'), { method: req.method, headers, body: Buffer.concat(chunks) });
    const body = Buffer.from(await up.arrayBuffer());
    res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

t.test('keyed calls', async (t) => {
  const app = await startTestApp({ BILLING: 'on', FREE_TIER_MONTHLY_LIMIT: '8' });
  t.teardown(() => app.close());
  const apiKey = await signup(app.url, 'client-keyed@example.com');
  const client = createClient({ baseUrl: app.url, apiKey });

  const decided = await client.decide({ goal: 'Swap 100 USDC for ETH on Base' });
  t.match(decided, { verdict: /^(proceed|wait|block)$/, risk: /^(low|medium|high)$/, decision: {} });
  const guarded = await client.guard({ action: 'swap', chain: 'base', amount_usd: 100 });
  t.match(guarded, { verdict: /^(proceed|wait|block)$/ });
  const peg = await client.stablecoinPeg({ asset_ids: ['usd-coin'] });
  t.ok(Array.isArray((peg as { results?: unknown[] }).results) || typeof peg === 'object');
  const bridge = await client.bridgeRisk({ bridge_status_urls: ['https://status.example.com'] });
  t.match(bridge, { verdict: /^(proceed|wait|block)$/ });
  const route = await client.yieldRoute({ options: [{ name: 'a', apy: 4, liquidity_usd: 5_000_000, risk_score: 10 }] });
  t.type(route, 'object');
  const answers = await Promise.all([client.decide({ goal: 'a' }), client.decide({ goal: 'b' })]);
  t.equal(answers.length, 2);

  const unknownKey = await createClient({ baseUrl: app.url, apiKey: 'pvk_not_a_key' })
    .decide({ goal: 'x' })
    .catch((e: unknown) => e);
  t.ok(unknownKey instanceof PreflightError && unknownKey.status === 401, 'an unknown key: a PreflightError, 401');
  const invalid = await client.decide({ goal: '' }).catch((e: unknown) => e);
  t.ok(invalid instanceof PreflightError && invalid.status === 422, 'an invalid request is the 422, not retried');

  // 7 counted so far (the 422 is not): the 8th passes, the 9th is over the quota.
  await client.decide({ goal: 'the last one' });
  const started = Date.now();
  const err = await client.decide({ goal: 'over the quota' }).catch((e: unknown) => e);
  t.ok(err instanceof PreflightError, 'a used-up quota is thrown');
  t.equal((err as PreflightError).status, 429);
  t.ok(((err as PreflightError).retryAfterS ?? 0) > 30, 'with the wait the service named (until the month resets)');
  t.ok(Date.now() - started < 2000, 'without waiting for it');
});

t.test('a 429 with a short Retry-After is retried after that wait', async (t) => {
  const app = await startTestApp({ BILLING: 'on' });
  t.teardown(() => app.close());
  const apiKey = await signup(app.url, 'client-retry@example.com');
  const gw = await throttlingGateway(app.url, 1, 1);
  t.teardown(() => gw.close());
  const answer = await createClient({ baseUrl: gw.url, apiKey }).decide({ goal: 'after a 429' });
  t.match(answer, { verdict: /^(proceed|wait|block)$/ });
  t.equal(gw.hits.length, 2, 'one 429, then the answer');
  t.ok(gw.hits[1] - gw.hits[0] >= 1000, `the retry waited Retry-After (${gw.hits[1] - gw.hits[0]} ms)`);

  const gw2 = await throttlingGateway(app.url, 5, 1);
  t.teardown(() => gw2.close());
  const err = await createClient({ baseUrl: gw2.url, apiKey, retries: 1 })
    .decide({ goal: 'still throttled' })
    .catch((e: unknown) => e);
  t.ok(err instanceof PreflightError && err.status === 429, 'retries are bounded');
  t.equal(gw2.hits.length, 2);
});

t.test('verifyAttestation: true for a real answer, false for a tampered one', async (t) => {
  const key = `0x${'3c'.repeat(32)}`;
  const app = await startTestApp({ BILLING: 'on', ATTESTATION_KEY: key });
  t.teardown(() => app.close());
  const apiKey = await signup(app.url, 'client-attest@example.com');
  const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as { attestation: { signer: string } };
  const signer = caps.attestation.signer;
  const client = createClient({ baseUrl: app.url, apiKey });
  const body = { action: 'swap' as const, chain: 'base', amount_usd: 250 };
  const answer = await client.guard(body);
  const att = answer.attestation as unknown as Att;
  t.ok(att, 'the answer is signed');
  t.equal(
    await verifyTypedData({ address: signer, ...att.typed_data, signature: att.signature } as never),
    true,
    'viem agrees the signature is the signer’s',
  );
  t.equal(await verifyAttestation(answer, { signer }), true, 'a real answer');
  t.equal(await verifyAttestation(answer, { signer, requestBody: JSON.stringify(body) }), true, 'and its request');
  t.equal(
    await verifyAttestation(answer, { signer, requestBody: JSON.stringify({ ...body, amount_usd: 1 }) }),
    false,
    'another request',
  );
  t.equal(await verifyAttestation(answer, { signer: Wallet.createRandom().address }), false, 'another signer');
  const ZERO = `0x${'00'.repeat(32)}`;
  const H = `0x${'ab'.repeat(32)}`;
  t.equal(await verifyAttestation(answer, { signer, policyHash: ZERO }), true, 'signed under no policy, as asked');
  t.equal(await verifyAttestation(answer, { signer, policyHash: H }), false, 'not signed for the policy asked for');

  // The same answer as the service signs it under a policy: decision.policy and the signed hash.
  const underPolicy = structuredClone(answer) as DecideResponse & { decision: { policy?: unknown } };
  underPolicy.decision.policy = { name: 'payments', version: 3, hash: H };
  underPolicy.attestation = (await new Attester(key).attest(answer, {
    answerId: 'under-a-policy',
    body: Buffer.from(JSON.stringify(body)),
    chainId: 8453,
    policyHash: H,
  })) as unknown as DecideResponse['attestation'];
  const pa = underPolicy.attestation as unknown as Att;
  t.equal(
    await verifyTypedData({ address: signer, ...pa.typed_data, signature: pa.signature } as never),
    true,
    'viem recovers the signer of an answer under a policy',
  );
  t.equal(await verifyAttestation(underPolicy, { signer }), true, 'an answer under a policy');
  t.equal(await verifyAttestation(underPolicy, { signer, policyHash: H.toUpperCase().replace('0X', '0x') }), true);
  t.equal(await verifyAttestation(underPolicy, { signer, policyHash: ZERO }), false, 'not the policy asked for');
  const stripped = structuredClone(underPolicy);
  delete stripped.decision.policy;
  t.equal(await verifyAttestation(stripped, { signer }), false, 'signed for a policy the answer no longer names');
  const claimed = structuredClone(answer) as typeof underPolicy;
  claimed.decision.policy = { name: 'payments', version: 3, hash: H };
  t.equal(await verifyAttestation(claimed, { signer }), false, 'names a policy it was not signed for');

  const flip = { proceed: 'block', wait: 'proceed', block: 'proceed' } as const;
  const tampered: Array<[string, DecideResponse]> = [
    ['verdict', { ...answer, verdict: flip[answer.verdict] }],
    ['risk', { ...answer, risk: answer.risk === 'low' ? 'high' : 'low' }],
    ['confidence', { ...answer, confidence: answer.confidence === 1 ? 0.5 : 1 }],
    ['expires_in', { ...answer, expires_in: answer.expires_in + 3600 }],
  ];
  const signed = structuredClone(answer);
  const m = (signed.attestation as unknown as Att).typed_data.message;
  m.verdict = String((Number(m.verdict) + 1) % 3);
  tampered.push(['signed message', signed]);
  const policy = structuredClone(answer);
  (policy.attestation as unknown as Att).typed_data.message.policyHash = `0x${'01'.repeat(32)}`;
  tampered.push(['signed policy hash', policy]);
  const sig = structuredClone(answer);
  const sa = sig.attestation as unknown as Att;
  const s = sa.signature;
  sa.signature = `0x${s.slice(2, 10)}${s[10] === '0' ? '1' : '0'}${s.slice(11)}`;
  tampered.push(['signature', sig]);
  tampered.push(['no attestation', { ...answer, attestation: undefined }]);
  for (const [what, bad] of tampered) t.equal(await verifyAttestation(bad, { signer }), false, `tampered ${what}`);
});

t.test('paid calls on Base USDC, and a retry after a dropped connection pays once', async (t) => {
  const chain = await startUsdcChain();
  t.teardown(() => chain.close());
  const srv = await startPaidServer(chain);
  t.teardown(() => srv.close());
  const wallet = await chain.wallet(PRICE * 5n);
  const payer = privateKeyToAccount(wallet.privateKey as `0x${string}`);
  const client = createClient({ baseUrl: srv.url, payer });

  const before = await chain.balanceOf(srv.payTo);
  const answer = await client.decide({ goal: 'paid by the typed client' });
  t.match(answer, { verdict: /^(proceed|wait|block)$/ });
  const guarded = await client.guard({ action: 'transfer', chain: 'base', amount_usd: 10 });
  t.match(guarded, { verdict: /^(proceed|wait|block)$/ });
  await until(async () => ((await chain.balanceOf(srv.payTo)) === before + 2n * PRICE ? true : undefined));

  const relay = await droppingRelay(srv.url);
  t.teardown(() => relay.close());
  relay.drop.on = true;
  // The first paid attempt is served but its answer is dropped; the relay lets the next one through.
  const servedBefore = await srv.served();
  let paidAttempts = 0;
  const counting = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    if (req.headers.get('payment-signature') !== null && ++paidAttempts === 2) relay.drop.on = false;
    return fetch(req);
  }) as typeof fetch;
  const dropped = createClient({ baseUrl: relay.url, payer, fetch: counting });
  const retried = await dropped.decide({ goal: 'dropped once' });
  t.match(retried, { verdict: /^(proceed|wait|block)$/ });
  t.equal(paidAttempts, 2, 'the client signed again after the drop');
  t.equal(await srv.served(), servedBefore + 1, 'the service answered once');
  await until(async () => ((await chain.balanceOf(srv.payTo)) === before + 3n * PRICE ? true : undefined));
  await new Promise((r) => setTimeout(r, 500));
  t.equal(await chain.balanceOf(srv.payTo), before + 3n * PRICE, 'payTo grew once for the dropped call');
  t.equal(await chain.balanceOf(wallet.address), PRICE * 2n, 'the payer paid three calls, not four');
});
