/**
 * The verification boundaries, exactly: the validity window edges, the exact amount, address
 * case, and signatures the token itself would refuse (high s, v not 27/28).
 */
import t from 'tap';
import { Signature, Wallet } from 'ethers';
import { checkPayment } from '../../../src/billing/x402/verify.js';
import { EIP712_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, USDC_BASE } from '../../../src/billing/x402/constants.js';
import type { Authorization, DecodedPayment, Offers } from '../../../src/billing/x402/types.js';

const payer = Wallet.createRandom();
const payTo = Wallet.createRandom().address;
const NOW = 1_800_000_000;
const MAX = 60;
const extra = { name: 'USD Coin', version: '2' };
const offers: Offers = {
  extensions: {},
  resource: { url: 'http://127.0.0.1/v1/x402/decide', description: 'd', mimeType: 'application/json' },
  v1: {
    scheme: 'exact',
    network: 'base',
    maxAmountRequired: '10000',
    resource: 'http://127.0.0.1/v1/x402/decide',
    description: 'd',
    mimeType: 'application/json',
    payTo,
    maxTimeoutSeconds: MAX,
    asset: USDC_BASE,
    extra,
  },
  v2: {
    scheme: 'exact',
    network: 'eip155:8453',
    amount: '10000',
    asset: USDC_BASE,
    payTo,
    maxTimeoutSeconds: MAX,
    extra,
  },
};

async function payment(over: Partial<Authorization>, version: 1 | 2 = 2): Promise<DecodedPayment> {
  const a: Authorization = {
    from: payer.address,
    to: payTo,
    value: '10000',
    validAfter: String(NOW - 600),
    validBefore: String(NOW + MAX),
    nonce: '0x' + '11'.repeat(32),
    ...over,
  };
  const signature = await payer.signTypedData(EIP712_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES as never, a);
  return {
    version,
    raw: {},
    scheme: 'exact',
    network: version === 2 ? 'eip155:8453' : 'base',
    accepted: version === 2 ? { ...offers.v2, extra: { ...extra } } : null,
    payload: { signature, authorization: a },
  };
}
const reason = async (over: Partial<Authorization>, version: 1 | 2 = 2) =>
  checkPayment(await payment(over, version), offers, NOW)?.reason ?? 'ok';

t.test('the validity window tolerates five minutes of clock skew on both ends', async (t) => {
  t.equal(await reason({ validAfter: String(NOW) }), 'ok', 'validAfter = now is valid');
  t.equal(await reason({ validAfter: String(NOW + 120) }), 'ok', 'a payer two minutes ahead can pay');
  t.equal(await reason({ validAfter: String(NOW + 300) }), 'ok', 'five minutes ahead still');
  t.equal(await reason({ validAfter: String(NOW + 301) }), 'invalid_exact_evm_payload_authorization_valid_after');
  t.equal(await reason({ validAfter: String(NOW + 86400) }), 'invalid_exact_evm_payload_authorization_valid_after');
  t.equal(await reason({ validBefore: String(NOW + 6) }), 'ok', '6 s left is enough');
  t.equal(await reason({ validBefore: String(NOW + 5) }), 'invalid_exact_evm_payload_authorization_valid_before');
  t.equal(await reason({ validBefore: String(NOW + MAX + 30) }), 'ok', 'half a minute ahead');
  t.equal(await reason({ validBefore: String(NOW + MAX + 300) }), 'ok', 'maxTimeoutSeconds + five minutes');
  t.equal(
    await reason({ validBefore: String(NOW + MAX + 301) }),
    'invalid_exact_evm_payload_authorization_valid_before',
  );
  t.equal(
    await reason({ validBefore: String(NOW + 86400) }),
    'invalid_exact_evm_payload_authorization_valid_before',
    'a day-long window is absurd',
  );
});

t.test('settling before the answer refuses a validAfter still in the future', async (t) => {
  const early = await payment({ validAfter: String(NOW + 1) });
  t.equal(checkPayment(early, offers, NOW, true)?.reason, 'invalid_exact_evm_payload_authorization_valid_after');
  t.equal(checkPayment(await payment({ validAfter: String(NOW) }), offers, NOW, true), null);
});

t.test('the amount is exact and the recipient ours, in any letter case', async (t) => {
  t.equal(await reason({ value: '9999' }), 'invalid_exact_evm_payload_authorization_value');
  t.equal(await reason({ value: '10001' }), 'invalid_exact_evm_payload_authorization_value');
  t.equal(
    await reason({ value: '10000' + '0'.repeat(70) }),
    'invalid_exact_evm_payload_authorization_value',
    'huge numbers stay integers',
  );
  t.equal(await reason({ to: payTo.toLowerCase() }, 1), 'ok');
  const p = await payment({}, 2);
  (p.accepted as Record<string, unknown>).payTo = payTo.toLowerCase();
  t.equal(checkPayment(p, offers, NOW), null, 'accepted.payTo in lower case is still our offer');
});

t.test('signatures the token would refuse are refused', async (t) => {
  const p = await payment({});
  const sig = Signature.from(p.payload.signature);
  const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const highS = '0x' + (N - BigInt(sig.s)).toString(16).padStart(64, '0');
  const flippedV = sig.v === 27 ? '1c' : '1b';
  p.payload.signature = sig.r + highS.slice(2) + flippedV;
  t.equal(
    checkPayment(p, offers, NOW)?.reason,
    'invalid_exact_evm_payload_signature',
    'the malleable twin (high s) is refused',
  );
  const q = await payment({});
  q.payload.signature = q.payload.signature.slice(0, 130) + (q.payload.signature.endsWith('1b') ? '00' : '01');
  t.equal(checkPayment(q, offers, NOW)?.reason, 'invalid_exact_evm_payload_signature', 'v as 0/1 is refused');
  const r = await payment({});
  r.payload.signature = r.payload.signature + '00';
  t.equal(checkPayment(r, offers, NOW)?.reason, 'invalid_exact_evm_payload_signature', 'not 65 bytes');
});
