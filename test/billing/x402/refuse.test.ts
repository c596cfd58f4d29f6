/**
 * Every way a payment can be wrong is refused with 402, the challenge again, and a failure
 * receipt naming the reason in the x402 specification's words; nothing is served, nothing enters
 * the ledger, no money moves. Unreadable headers are a 400 with a clear `detail`.
 */
import t from 'tap';
import { Wallet } from 'ethers';
import { startUsdcChain } from '../../helpers/usdc.js';
import { EIP712_DOMAIN } from '../../../src/billing/x402/constants.js';
import {
  PATH,
  PRICE,
  authorization,
  captureHeader,
  decodeHeader,
  encodeHeader,
  offers,
  postJson,
  signPayload,
  startPaidServer,
} from './fixture.js';

const chain = await startUsdcChain();
t.teardown(() => chain.close());
const srv = await startPaidServer(chain);
t.teardown(() => srv.close());
const url = srv.url + PATH;
const payer = await chain.wallet(PRICE * 10n);
const broke = await chain.wallet(PRICE - 1n);
const { v2: accepted, v2Required } = await offers(url);
const genuine = { 1: await captureHeader(1, chain, payer, url), 2: await captureHeader(2, chain, payer, url) };

type Json = Record<string, any>;
const decode = (h: string): Json => JSON.parse(Buffer.from(h, 'base64').toString('utf8'));
const tamper = (version: 1 | 2, edit: (p: Json) => void): string => {
  const p = decode(genuine[version]);
  edit(p);
  return encodeHeader(p);
};
const v1 = (payload: unknown, over: Json = {}) =>
  encodeHeader({ x402Version: 1, scheme: 'exact', network: 'base', payload, ...over });
const v2 = (payload: unknown, over: Json = {}) =>
  encodeHeader({ x402Version: 2, resource: v2Required.resource, accepted, payload, ...over });
const now = () => Math.floor(Date.now() / 1000);
const attacker = Wallet.createRandom().address;

interface Case {
  name: string;
  version: 1 | 2;
  header: () => Promise<string> | string;
  reason: string;
  payer?: string;
}
const cases: Case[] = [
  {
    name: 'v1 value lowered',
    version: 1,
    reason: 'invalid_exact_evm_payload_authorization_value',
    header: () =>
      tamper(1, (p) => {
        p.payload.authorization.value = '1';
      }),
  },
  {
    name: 'v2 value lowered',
    version: 2,
    reason: 'invalid_exact_evm_payload_authorization_value',
    header: () =>
      tamper(2, (p) => {
        p.payload.authorization.value = '1';
      }),
  },
  {
    name: 'v2 value raised',
    version: 2,
    reason: 'invalid_exact_evm_payload_authorization_value',
    header: async () => v2(await signPayload(payer, authorization(payer.address, srv.payTo, { value: '20000' }))),
  },
  {
    name: 'v2 accepted amount lowered',
    version: 2,
    reason: 'invalid_exact_evm_payload_authorization_value',
    header: () =>
      tamper(2, (p) => {
        p.accepted.amount = '1';
        p.payload.authorization.value = '1';
      }),
  },
  {
    name: 'v1 recipient changed',
    version: 1,
    reason: 'invalid_exact_evm_payload_recipient_mismatch',
    header: () =>
      tamper(1, (p) => {
        p.payload.authorization.to = attacker;
      }),
  },
  {
    name: 'v2 recipient changed',
    version: 2,
    reason: 'invalid_exact_evm_payload_recipient_mismatch',
    header: () =>
      tamper(2, (p) => {
        p.payload.authorization.to = attacker;
      }),
  },
  {
    name: 'v2 accepted payTo changed',
    version: 2,
    reason: 'invalid_exact_evm_payload_recipient_mismatch',
    header: () =>
      tamper(2, (p) => {
        p.accepted.payTo = attacker;
      }),
  },
  {
    name: 'v2 asset changed',
    version: 2,
    reason: 'invalid_payment_requirements',
    header: () =>
      tamper(2, (p) => {
        p.accepted.asset = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
      }),
  },
  {
    name: 'v1 signed for another asset',
    version: 1,
    reason: 'invalid_exact_evm_payload_signature',
    header: async () =>
      v1(
        await signPayload(payer, authorization(payer.address, srv.payTo), {
          ...EIP712_DOMAIN,
          verifyingContract: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        }),
      ),
  },
  {
    name: 'v2 accepted extra changed',
    version: 2,
    reason: 'invalid_payment_requirements',
    header: () =>
      tamper(2, (p) => {
        p.accepted.extra = { name: 'USDC', version: '2' };
      }),
  },
  {
    name: 'v1 network changed',
    version: 1,
    reason: 'invalid_network',
    header: () =>
      tamper(1, (p) => {
        p.network = 'base-sepolia';
      }),
  },
  {
    name: 'v2 network changed',
    version: 2,
    reason: 'invalid_network',
    header: () =>
      tamper(2, (p) => {
        p.accepted.network = 'eip155:84532';
      }),
  },
  {
    name: 'v1 scheme changed',
    version: 1,
    reason: 'invalid_scheme',
    header: () =>
      tamper(1, (p) => {
        p.scheme = 'upto';
      }),
  },
  {
    name: 'v2 scheme changed',
    version: 2,
    reason: 'invalid_scheme',
    header: () =>
      tamper(2, (p) => {
        p.accepted.scheme = 'upto';
      }),
  },
  {
    name: 'v1 domain name "USDC" (base-sepolia style)',
    version: 1,
    reason: 'invalid_exact_evm_payload_signature',
    header: async () =>
      v1(await signPayload(payer, authorization(payer.address, srv.payTo), { ...EIP712_DOMAIN, name: 'USDC' })),
  },
  {
    name: 'v2 domain name "USDC" (base-sepolia style)',
    version: 2,
    reason: 'invalid_exact_evm_payload_signature',
    header: async () =>
      v2(await signPayload(payer, authorization(payer.address, srv.payTo), { ...EIP712_DOMAIN, name: 'USDC' })),
  },
  {
    name: 'v2 signed for another chain id',
    version: 2,
    reason: 'invalid_exact_evm_payload_signature',
    header: async () =>
      v2(await signPayload(payer, authorization(payer.address, srv.payTo), { ...EIP712_DOMAIN, chainId: 84532 })),
  },
  {
    name: 'v1 signature altered',
    version: 1,
    reason: 'invalid_exact_evm_payload_signature',
    header: () =>
      tamper(1, (p) => {
        const s: string = p.payload.signature;
        p.payload.signature = s.slice(0, 10) + (s[10] === 'a' ? 'b' : 'a') + s.slice(11);
      }),
  },
  {
    name: 'v2 signed by someone else',
    version: 2,
    reason: 'invalid_exact_evm_payload_signature',
    header: async () => v2({ ...(await signPayload(Wallet.createRandom(), authorization(payer.address, srv.payTo))) }),
  },
  {
    name: 'v2 from changed to another funded payer',
    version: 2,
    reason: 'invalid_exact_evm_payload_signature',
    payer: broke.address,
    header: () =>
      tamper(2, (p) => {
        p.payload.authorization.from = broke.address;
      }),
  },
  {
    name: 'v1 expired',
    version: 1,
    reason: 'invalid_exact_evm_payload_authorization_valid_before',
    header: async () =>
      v1(await signPayload(payer, authorization(payer.address, srv.payTo, { validBefore: String(now() - 1) }))),
  },
  {
    name: 'v2 expires within 6 s',
    version: 2,
    reason: 'invalid_exact_evm_payload_authorization_valid_before',
    header: async () =>
      v2(await signPayload(payer, authorization(payer.address, srv.payTo, { validBefore: String(now() + 3) }))),
  },
  {
    name: 'v2 valid for a day',
    version: 2,
    reason: 'invalid_exact_evm_payload_authorization_valid_before',
    header: async () => v2(await signPayload(payer, authorization(payer.address, srv.payTo, {}, 86400))),
  },
  {
    name: 'v1 valid only in ten minutes',
    version: 1,
    reason: 'invalid_exact_evm_payload_authorization_valid_after',
    header: async () =>
      v1(await signPayload(payer, authorization(payer.address, srv.payTo, { validAfter: String(now() + 600) }))),
  },
  {
    name: 'v2 valid only in ten minutes',
    version: 2,
    reason: 'invalid_exact_evm_payload_authorization_valid_after',
    header: async () =>
      v2(await signPayload(payer, authorization(payer.address, srv.payTo, { validAfter: String(now() + 600) }))),
  },
  {
    name: 'v1 payer without enough USDC',
    version: 1,
    reason: 'insufficient_funds',
    payer: broke.address,
    header: () => captureHeader(1, chain, broke, url),
  },
  {
    name: 'v2 payer without enough USDC',
    version: 2,
    reason: 'insufficient_funds',
    payer: broke.address,
    header: () => captureHeader(2, chain, broke, url),
  },
  { name: 'v1 payload in PAYMENT-SIGNATURE', version: 2, reason: 'invalid_x402_version', header: () => genuine[1] },
  {
    name: 'v1 payload without authorization',
    version: 1,
    reason: 'invalid_payload',
    payer: '',
    header: () => v1({ signature: '0x00' }),
  },
  {
    name: 'v2 without accepted',
    version: 2,
    reason: 'invalid_payload',
    header: () =>
      tamper(2, (p) => {
        delete p.accepted;
      }),
  },
];

const servedBefore = await srv.served();
const payToBefore = await chain.balanceOf(srv.payTo);

for (const c of cases) {
  t.test(c.name, async (t) => {
    const header = await c.header();
    const name = c.version === 2 ? 'PAYMENT-SIGNATURE' : 'X-PAYMENT';
    const res = await postJson(fetch, url, { goal: c.name }, { [name]: header });
    t.equal(res.status, 402);
    t.equal(res.headers.get('cache-control'), 'no-store');
    const body = await res.json();
    t.equal(body.error, c.reason, 'the body names the reason');
    t.type(body.detail, 'string');
    t.equal(body.accepts.length, 1, 'the v1 challenge again');
    t.match(
      decodeHeader(res.headers.get('payment-required')),
      { x402Version: 2, error: c.reason, accepts: [accepted] },
      'the v2 challenge again',
    );
    const receipt = decodeHeader(res.headers.get(c.version === 2 ? 'payment-response' : 'x-payment-response'));
    t.same(receipt, {
      success: false,
      errorReason: c.reason,
      transaction: '',
      network: c.version === 2 ? 'eip155:8453' : 'base',
      payer: c.payer ?? payer.address,
    });
  });
}

t.test('unreadable headers: 400 with a detail', async (t) => {
  for (const [name, value, says] of [
    ['X-PAYMENT', 'not base64!', /base64/],
    ['PAYMENT-SIGNATURE', Buffer.from('{"x402Version": 2,').toString('base64'), /not JSON/],
    ['X-PAYMENT', Buffer.from('[1,2]').toString('base64'), /JSON object/],
  ] as const) {
    const res = await postJson(fetch, url, { goal: 'refusal' }, { [name]: value });
    t.equal(res.status, 400, name);
    t.match(await res.json(), { detail: says });
  }
  const both = await postJson(
    fetch,
    url,
    { goal: 'refusal' },
    { 'X-PAYMENT': genuine[1], 'PAYMENT-SIGNATURE': genuine[2] },
  );
  t.equal(both.status, 400);
  t.match(await both.json(), { detail: /not both/ });
});

t.test('nothing was served, claimed or paid', async (t) => {
  t.equal(await srv.served(), servedBefore);
  t.same(await srv.store.countPaymentsByState(), { verified: 0, settling: 0, settled: 0, failed: 0 });
  t.equal(await chain.balanceOf(srv.payTo), payToBefore);
  t.equal(await chain.balanceOf(payer.address), PRICE * 10n);
});

t.test('the untampered headers still pay (the refusals were about the tampering)', async (t) => {
  for (const version of [1, 2] as const) {
    const res = await postJson(
      fetch,
      url,
      { goal: 'refusal' },
      { [version === 2 ? 'PAYMENT-SIGNATURE' : 'X-PAYMENT']: genuine[version] },
    );
    t.equal(res.status, 200, `v${version}`);
  }
  t.equal(await srv.served(), servedBefore + 2);
});
