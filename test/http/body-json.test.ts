/**
 * sendJson's text (src/http/errors.ts, bodyJson): a property or an array element that carries its
 * own JSON text (an answer's attestation, its evidence items) is written from that text, and the
 * whole is exactly JSON.stringify's.
 */
import t from 'tap';
import { Attester } from '../../src/attest/attester.js';
import type { CheckOutcome, CheckResult } from '../../src/checks/types.js';
import { result } from '../../src/engine/runner.js';
import { bodyJson } from '../../src/http/errors.js';
import { JSON_TEXT } from '../../src/wire.js';

const attester = new Attester(`0x${'42'.repeat(32)}`);

t.test('an answer with an attestation: the same text as JSON.stringify, and the body is left as it was', async (t) => {
  for (const chainId of [8453, 1, 0, 2 ** 40])
    for (const policyHash of [null, `0x${'ab'.repeat(32)}`]) {
      const attestation = await attester.attest(
        { verdict: 'block', risk: 'high', confidence: 0.4567, expires_in: 0 },
        {
          answerId: `a-${chainId}`,
          body: Buffer.from('{"x":"é"}'),
          chainId,
          policyHash,
          transaction: { from: `0x${'11'.repeat(20)}`, to: null, value: '5', data: '0x' },
        },
      );
      t.type(attestation[JSON_TEXT], 'string', 'the attestation carries its text');
      const body = { verdict: 'block', evidence: [{ message: 'quote " and \\ and \u2028', n: 1.5 }], attestation };
      t.equal(bodyJson(body), JSON.stringify(body), `chain ${chainId}, policy ${policyHash ?? 'none'}`);
      t.equal(body.attestation, attestation, 'the property is back');
      t.same(Object.keys(body), ['verdict', 'evidence', 'attestation'], 'in its place');
    }
});

t.test('where a carried text is used, and where JSON.stringify is left to walk', async (t) => {
  // A text that is not the value's own shows where it was used.
  const own = { [JSON_TEXT]: '{"not":"this"}', a: 1 };
  for (const body of [
    null,
    [1, 2],
    [own],
    'text',
    {},
    { a: 1 },
    { only: { a: 1 } },
    { toJSON: () => ({ other: own }) },
  ])
    t.equal(bodyJson(body), JSON.stringify(body), JSON.stringify(body) ?? 'undefined');
  t.equal(bodyJson({ only: own }), '{"only":{"not":"this"}}', 'a lone property: no comma before it');
  t.equal(bodyJson({ own, last: true }), '{"own":{"not":"this"},"last":true}', 'a property anywhere in the body');
  t.equal(bodyJson({ list: [1, own, 'x'] }), '{"list":[1,{"not":"this"},"x"]}', 'an element of an array property');
  t.equal(bodyJson({ deep: { own } }), '{"deep":{"own":{"a":1}}}', 'deeper than that: walked');
  t.equal(bodyJson(Object.freeze({ a: 1, own })), '{"a":1,"own":{"not":"this"}}', 'a frozen body is not changed');
  // An inherited property is not the body's: JSON leaves it out, and so does bodyJson.
  const child = Object.create({ own }) as Record<string, unknown>;
  child.mine = 2;
  t.equal(bodyJson(child), '{"mine":2}');
  // toJSON is called with the key it is owed: a body that has one anywhere bodyJson looks is JSON.stringify's.
  const keyed = { toJSON: (key: string) => `key ${key}` };
  for (const body of [
    { a: own, b: keyed },
    { a: own, b: [keyed] },
    { a: [own, new Date(0)] },
    { a: own, d: new Date(0) },
  ])
    t.equal(bodyJson(body), JSON.stringify(body), JSON.stringify(body));
  // What JSON leaves out of an object and writes as null in an array.
  // A hole at index 3.
  const list: unknown[] = [undefined, () => 1, Symbol('s')];
  list.length = 4;
  list.push(2, own);
  const odd = {
    u: undefined,
    f: () => 1,
    s: Symbol('s'),
    n: Number.NaN,
    i: -0,
    list,
  };
  t.equal(bodyJson(odd), JSON.stringify({ ...odd, list: [null, null, null, null, 2, { not: 'this' }] }));
  t.throws(() => bodyJson({ a: own, b: 1n }), TypeError, 'a BigInt throws as it does in JSON.stringify');
});

const outcome = (o: Partial<CheckOutcome> = {}): CheckOutcome => ({
  status: 'pass',
  reason: null,
  message: 'ethereum/usd at 3120.55 is within bounds, "quoted" \\ \u2028 é 😀',
  observed: { price: 3120.55, quote: 'usd', when: new Date(0), nested: [1, null, { x: 1e21 }] },
  expected: { min_price: 1000, max_price: null },
  source: 'price_provider',
  ttl_s: 30,
  ...o,
});

t.test('evidence items: each carries its text, the same as JSON.stringify of the item', async (t) => {
  const cases: Array<[string, CheckResult]> = [
    ['a cached pass', result('price', 'price', outcome(), 0, true, 7)],
    ['a fresh pass', result('dex_price', 'dex_price', outcome(), 174, false, 0)],
    ['a name to escape', result('http["a"]\\', 'http', outcome(), 1, false, 0)],
    [
      'an error with retry_after_s',
      result('rpc', 'rpc_health', outcome({ status: 'error', reason: 'rate_limited', retry_after_s: 3 }), 5, false, 0),
    ],
    ['no observed, no expected', result('x', 'x', outcome({ observed: undefined, expected: undefined }), 0, true, 0)],
    ['observed null', result('x', 'x', outcome({ observed: null, source: null }), 0, true, 0)],
    ['a fractional latency', result('x', 'x', outcome({ ttl_s: 0 }), 12.5, false, 0)],
  ];
  for (const [what, item] of cases) {
    const text = (item as unknown as { [JSON_TEXT]?: string })[JSON_TEXT];
    t.type(text, 'string', `${what}: carries a text`);
    t.equal(text, JSON.stringify(item), `${what}: the same text`);
    t.same(JSON.parse(text as string), JSON.parse(JSON.stringify(item)), `${what}: the same value`);
  }
  // One outcome serves many answers: its part is kept, each item's own fields are its own.
  const shared = outcome();
  const a = result('price', 'price', shared, 0, true, 1);
  const b = result('other', 'price', shared, 3, false, 29);
  const body = {
    verdict: 'proceed',
    evidence: [a, b, { type: 'policy', observed: { reserved_usd: 5 } }],
    failure_modes: [],
  };
  t.equal(bodyJson(body), JSON.stringify(body), 'an answer whose items share an outcome, beside a plain item');
  t.equal(bodyJson(body), JSON.stringify(body), 'and again, from the kept part');
});

t.test('an evidence item that cannot vouch for its text is walked', async (t) => {
  const changed: Array<[string, (r: Record<string, unknown>) => void]> = [
    ['a status changed', (r) => (r.status = 'fail')],
    ['a message changed', (r) => (r.message = 'other')],
    ['observed replaced', (r) => (r.observed = { other: 1 })],
    ['a name that is not a string', (r) => (r.name = 7)],
    ['an age that is not finite', (r) => (r.age_s = Number.POSITIVE_INFINITY)],
    ['a latency that is not a number', (r) => (r.latency_ms = '5')],
    ['cached that is not a boolean', (r) => (r.cached = 1)],
    ['a retry that is NaN', (r) => (r.retry_after_s = Number.NaN)],
  ];
  for (const [what, change] of changed) {
    const item = result('price', 'price', outcome(), 4, true, 2);
    change(item as unknown as Record<string, unknown>);
    t.equal((item as unknown as { [JSON_TEXT]?: string })[JSON_TEXT], undefined, `${what}: no text`);
    const body = { evidence: [item] };
    t.equal(bodyJson(body), JSON.stringify(body), `${what}: the answer is JSON.stringify's`);
  }
});

t.test('the scalars of a body, written without JSON.stringify, are its text exactly', async (t) => {
  // A carried text, so that bodyJson writes the body itself rather than leaving it to JSON.stringify.
  const own = { a: 1, [JSON_TEXT]: '{"a":1}' };
  const strings = [
    '',
    'proceed',
    'quote " inside',
    'back \\ slash',
    'control \u0001 and \n and \u001f',
    'lone \ud800 high',
    'lone \udfff low',
    'pair 😀',
    'line sep \u2028 and \u2029',
    'é and ü',
    'long and plain '.repeat(10),
    `long with a quote ${'x'.repeat(40)} " at the end`,
    `long with a lone surrogate ${'x'.repeat(40)} \udc00`,
  ];
  const numbers = [0, -0, 1, -1.5, 0.1, 1e21, 1e-7, 2 ** 53, Number.MAX_VALUE, Number.NaN, Infinity, -Infinity];
  // Named by index: a line separator in a test's name would end its line of output.
  strings.forEach((s, i) => {
    const body = { [s]: s, list: [s], own };
    t.equal(bodyJson(body), JSON.stringify(body), `string ${i}`);
  });
  for (const n of numbers) {
    const body = { n, list: [n], own };
    t.equal(bodyJson(body), JSON.stringify(body), `number ${Object.is(n, -0) ? '-0' : String(n)}`);
  }
  for (const v of [true, false, null]) {
    const body = { v, list: [v], own };
    t.equal(bodyJson(body), JSON.stringify(body), `${v}`);
  }
  // A boxed value is an object: JSON.stringify unwraps it, and so does the walk it is left to.
  const boxed = { s: Object('boxed'), n: Object(2), b: Object(false), own };
  t.equal(bodyJson(boxed), JSON.stringify(boxed), 'boxed values');
});
