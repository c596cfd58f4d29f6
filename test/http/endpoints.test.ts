/**
 * The endpoint table is the one source the billing gate's pointers come from: every request shape
 * sold per call points at a keyed path and an x402 path of the same shape, and signup is free.
 */
import t from 'tap';
import {
  keyedPathFor,
  payPerCallPathFor,
  POST_ENDPOINTS,
  SCHEMA_POST_ENDPOINTS,
  SIGNUP_PATH,
} from '../../src/http/endpoints.js';

const byPath = new Map(SCHEMA_POST_ENDPOINTS.map((e) => [e.path, e]));

t.test('the gate points a request shape at the keyed and x402 paths serving it', async (t) => {
  t.equal(keyedPathFor('DecideRequest'), '/v1/decide');
  t.equal(keyedPathFor('GuardRequest'), '/v1/guard');
  t.equal(payPerCallPathFor('DecideRequest'), '/v1/x402/decide');
  t.equal(payPerCallPathFor('GuardRequest'), '/v1/x402/guard');
  t.equal(keyedPathFor('StablecoinIntelligenceRequest'), null, 'an agent path is not offered as the keyed one');
  t.equal(payPerCallPathFor('YieldRoutingRequest'), null, 'no payment-only path for an agent shape');
  for (const e of SCHEMA_POST_ENDPOINTS.filter((x) => x.access === 'payment_only')) {
    const keyed = keyedPathFor(e.request);
    t.ok(keyed !== null, `${e.path} has a keyed alternative`);
    t.equal(byPath.get(keyed ?? '')?.request, e.request, `${keyed} serves the same shape as ${e.path}`);
    t.equal(byPath.get(keyed ?? '')?.access, 'paid');
  }
});

t.test('signup is the free entry of the table', async (t) => {
  t.equal(SIGNUP_PATH, '/v1/api-keys/signup');
  t.equal(byPath.get(SIGNUP_PATH)?.access, 'free');
  t.same(
    POST_ENDPOINTS.filter((e) => e.access === 'free').map((e) => e.path),
    [SIGNUP_PATH],
    'nothing else is free among the POSTs',
  );
});
