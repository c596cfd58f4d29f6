/**
 * sendJson's text (src/http/errors.ts, bodyJson): a last property that carries its own JSON text
 * (an answer's attestation) is written from that text, and the whole is exactly JSON.stringify's.
 */
import t from 'tap';
import { Attester } from '../../src/attest/attester.js';
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

t.test('anything else is JSON.stringify', async (t) => {
  const own = { [JSON_TEXT]: '{"not":"this"}', a: 1 };
  for (const body of [
    null,
    [1, 2],
    'text',
    {},
    { a: 1 },
    { own, last: true }, // the text is used only for the last property
    { only: { a: 1 } },
    { toJSON: () => ({ other: own }) },
  ])
    t.equal(bodyJson(body), JSON.stringify(body), JSON.stringify(body) ?? 'undefined');
  t.equal(bodyJson({ only: own }), '{"only":{"not":"this"}}', 'a lone property: no comma before it');
  // A frozen body cannot have the property set aside: it is walked as it is.
  const frozen = Object.freeze({ a: 1, own });
  t.equal(bodyJson(frozen), '{"a":1,"own":{"a":1}}');
  // An inherited last property is not the body's own to set aside.
  const child = Object.create({ own }) as Record<string, unknown>;
  t.equal(bodyJson(child), JSON.stringify(child));
  t.notOk(Object.hasOwn(child, 'own'), 'and the body is left without an own copy');
});
