/**
 * Paid answers are signed too: the official x402 clients pay on a real local Base USDC, and the
 * answer they buy carries an attestation viem recovers to the published signer, over the bytes
 * the client sent.
 */
import t from 'tap';
import { keccak256, toBytes, verifyTypedData } from 'viem';
import { startUsdcChain } from '../helpers/usdc.js';
import { PRICE, startPaidServer, v1Fetch, v2Fetch } from '../billing/x402/fixture.js';

const chain = await startUsdcChain();
t.teardown(() => chain.close());
const srv = await startPaidServer(chain);
t.teardown(() => srv.close());
const signer = ((await (await fetch(`${srv.url}/v1/capabilities`)).json()) as any).attestation.signer;

const cases: Array<[string, 1 | 2, string]> = [
  [
    '/v1/x402/decide',
    2,
    JSON.stringify({ goal: 'paid and signed', checks: [{ type: 'approval_amount', amount: '7' }] }),
  ],
  ['/v1/acp/decide', 1, JSON.stringify({ goal: 'paid with v1' })],
  ['/v1/x402/guard', 2, JSON.stringify({ action: 'transfer', chain: 'ethereum', strict_mode: false })],
  ['/v1/decide', 2, JSON.stringify({ goal: 'no key: paid per call' })],
];

for (const [path, version, text] of cases) {
  t.test(`${path}, paid with the v${version} client: the answer it buys is signed`, async (t) => {
    const payer = await chain.wallet(PRICE * 2n);
    const pay = version === 1 ? v1Fetch(chain, payer) : v2Fetch(payer);
    const res = await pay(srv.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: text,
    });
    t.equal(res.status, 200);
    t.ok(res.headers.get(version === 2 ? 'payment-response' : 'x-payment-response'), 'a paid answer');
    const body = (await res.json()) as any;
    const a = body.attestation;
    t.equal(a.signer, signer);
    t.ok(
      await verifyTypedData({ address: signer, ...a.typed_data, signature: a.signature }),
      'viem recovers the published signer',
    );
    const m = a.typed_data.message;
    t.equal(m.requestHash, keccak256(toBytes(text)), 'over the bytes the client sent');
    t.equal(m.verdict, String(['proceed', 'wait', 'block'].indexOf(body.verdict)));
    t.equal(Number(m.expiresAt) - Number(m.issuedAt), body.expires_in);
    t.equal(a.typed_data.domain.chainId, path.endsWith('guard') ? 1 : 8453);
  });
}
