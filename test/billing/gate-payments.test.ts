/**
 * The gate's hand-off to payments. First against the PaymentGate contract with a recording
 * implementation (which branch calls what, and when onServed fires), then against the real x402
 * engine for the answers a caller sees; paying for real is covered by the x402 tests.
 */
import t from 'tap';
import type { PaymentGate } from '../../src/billing/gate.js';
import type { ApiRequest } from '../../src/http/api.js';
import { sendJson } from '../../src/http/errors.js';
import { hashApiKey } from '../../src/billing/keys.js';
import { usagePeriod } from '../../src/billing/quota.js';
import { createX402 } from '../../src/billing/x402/index.js';
import { captureLogger, post } from '../helpers/app.js';
import { DECIDE, signup, startBilledApp } from './harness.js';

/** Payments carried in a test header: `good` is accepted, `bad` refused with a 402. */
function recordingPayments() {
  const calls: string[] = [];
  const value = (req: ApiRequest) => req.headers['x-test-payment'];
  const gate: PaymentGate = {
    configured: true,
    hasPayment: (req) => value(req) !== undefined,
    challenge(_req, res, note) {
      calls.push('challenge');
      sendJson(res, 402, { detail: 'payment required', note: note ?? null });
    },
    async handle(req, res) {
      calls.push('handle');
      if (value(req) !== 'good') {
        sendJson(res, 402, { detail: 'payment refused' });
        return { ok: false };
      }
      return { ok: true, onServed: () => calls.push('served') };
    },
  };
  return { gate, calls };
}

const rec = recordingPayments();
const b = await startBilledApp(
  { FREE_TIER_MONTHLY_LIMIT: '1' },
  {
    payments: () => rec.gate,
    handlers: {
      yield: () => {
        throw new Error('handler crashed');
      },
    },
  },
);
t.teardown(() => b.close());
const settle = () => new Promise((r) => setTimeout(r, 20));
const fresh = async () => {
  rec.calls.length = 0;
  return signup(b.url, `payer-${Math.random().toString(36).slice(2)}@example.com`);
};

t.test('no key, no payment: the challenge, with a note that a key works too', async (t) => {
  rec.calls.length = 0;
  const r = await post(`${b.url}/v1/decide`, DECIDE);
  t.equal(r.status, 402);
  t.match(r.body.note, /API key also works here.*\/v1\/api-keys\/signup/);
  t.same(rec.calls, ['challenge']);
});

t.test('a payment and no key: served, then onServed once', async (t) => {
  rec.calls.length = 0;
  const r = await post(`${b.url}/v1/decide`, DECIDE, { 'x-test-payment': 'good' });
  t.equal(r.status, 200);
  await settle();
  t.same(rec.calls, ['handle', 'served']);
  t.match(b.app.logs.filter((l) => l.msg === 'request').at(-1), { auth: 'payment', status: 200 });
});

t.test('a refused payment: the payment side answered, the handler never ran', async (t) => {
  rec.calls.length = 0;
  const r = await post(`${b.url}/v1/decide`, DECIDE, { 'x-test-payment': 'bad' });
  t.same([r.status, r.body.detail], [402, 'payment refused']);
  await settle();
  t.same(rec.calls, ['handle']);
});

t.test('a paid call that ends in a 5xx is not reported served', async (t) => {
  rec.calls.length = 0;
  const r = await post(
    `${b.url}/v1/agents/yield-routing/recommend`,
    { options: [{ name: 'a', apy: 5 }] },
    { 'x-test-payment': 'good' },
  );
  t.equal(r.status, 500);
  await settle();
  t.same(rec.calls, ['handle']);
});

t.test('a key with quota left wins over an attached payment, which stays untouched', async (t) => {
  const key = await fresh();
  const r = await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key, 'x-test-payment': 'good' });
  t.equal(r.status, 200);
  t.equal(r.headers.get('ratelimit-remaining'), '0');
  await settle();
  t.same(rec.calls, []);
});

t.test('a used-up key: 429 pointing at pay-per-call, or the attached payment pays', async (t) => {
  const key = await fresh();
  await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key });
  const over = await post(`${b.url}/v1/agents/decision-verification/decide`, DECIDE, { 'x-api-key': key });
  t.equal(over.status, 429);
  t.match(over.body, {
    detail: /used up.*paid with x402 at \/v1\/x402\/decide/,
    pay_per_call: { endpoint: '/v1/x402/decide', price: '0.01 USDC on base' },
  });
  const paid = await post(`${b.url}/v1/decide`, DECIDE, { 'x-api-key': key, 'x-test-payment': 'good' });
  t.equal(paid.status, 200);
  t.equal(paid.headers.get('ratelimit-remaining'), '0', 'the key is still reported used up');
  await settle();
  t.same(rec.calls, ['handle', 'served']);
  const id = (await b.store.findApiKeyByHash(hashApiKey(key)))!.id;
  t.equal(await b.store.getUsage(id, usagePeriod(new Date())), 1);
});

t.test('an unknown key is 401 even with a payment attached', async (t) => {
  rec.calls.length = 0;
  const r = await post(`${b.url}/v1/decide`, DECIDE, {
    'x-api-key': 'pvk_' + 'Z'.repeat(43),
    'x-test-payment': 'good',
  });
  t.equal(r.status, 401);
  t.same(rec.calls, []);
});

t.test('x402-only endpoints ignore keys: a key alone gets the challenge, without the key note', async (t) => {
  const key = await fresh();
  const r = await post(`${b.url}/v1/acp/decide`, DECIDE, { 'x-api-key': key });
  t.same([r.status, r.body.note], [402, null]);
  const paid = await post(`${b.url}/v1/x402/decide`, DECIDE, { 'x-api-key': key, 'x-test-payment': 'good' });
  t.equal(paid.status, 200);
  t.equal(paid.headers.get('ratelimit-limit'), null, 'no key was consulted');
  await settle();
  t.same(rec.calls, ['challenge', 'handle', 'served']);
});

t.test('with the real x402 engine', async (t) => {
  const env = {
    FREE_TIER_MONTHLY_LIMIT: '1',
    X402_PAY_TO: '0x' + '22'.repeat(20),
    X402_SETTLEMENT: 'facilitator',
    X402_FACILITATOR_URL: 'http://127.0.0.1:9',
  };
  const x = await startBilledApp(env, {
    payments: (config, store) => createX402({ config, store, logger: captureLogger().logger }),
  });
  t.teardown(() => x.close());

  const none = await post(`${x.url}/v1/decide`, DECIDE);
  t.equal(none.status, 402);
  t.ok(none.headers.get('payment-required'), 'v2 challenge header');
  t.match(none.body, {
    x402Version: 1,
    accepts: [{ network: 'base', maxAmountRequired: '10000' }],
    note: /API key/,
    api_key_signup: '/v1/api-keys/signup',
  });

  const key = await signup(x.url, 'real-x402@example.com');
  t.equal(
    (await post(`${x.url}/v1/x402/decide`, DECIDE, { 'x-api-key': key })).status,
    402,
    'a key does not open an x402-only endpoint',
  );
  t.equal((await post(`${x.url}/v1/decide`, DECIDE, { 'x-api-key': key })).status, 200);
  const over = await post(`${x.url}/v1/decide`, DECIDE, { 'x-api-key': key });
  t.match([over.status, over.body.pay_per_call], [429, { endpoint: '/v1/x402/decide' }]);
  const garbled = await post(`${x.url}/v1/decide`, DECIDE, { 'x-api-key': key, 'x-payment': '%%%not-base64%%%' });
  t.equal(garbled.status, 400, 'the attached payment was handed to x402, which could not read it');
  t.same(await x.store.countPaymentsByState(), { verified: 0, settling: 0, settled: 0, failed: 0 }, 'nothing claimed');
});
