/**
 * Every DecideResponse is signed: the signer each answer names is recovered with viem's and with
 * ethers' EIP-712 implementations (not the code that signs), and every signed field is checked
 * against the body and the request: verdict, risk, confidence, expiry, the request body's bytes,
 * the action, and the policy hash (zero: these answers are under no policy).
 */
import t, { type Test } from 'tap';
import type { ValidateFunction } from 'ajv';
import { verifyTypedData as ethersVerifyTypedData } from 'ethers';
import { encodeAbiParameters, keccak256, toBytes, verifyTypedData, zeroAddress, type Hex } from 'viem';
import { startTestApp } from '../helpers/app.js';
import { loadConfig } from '../../src/config.js';
import { DecideResponse } from '../../src/generated/validators.js';

const validateResponse = DecideResponse as unknown as ValidateFunction;
const app = await startTestApp();
t.teardown(() => app.close());

const VERDICTS = ['proceed', 'wait', 'block'];
const RISKS = ['low', 'medium', 'high'];

/** POSTs `text` exactly as given and reads the JSON answer. */
async function send(path: string, text: string, headers: Record<string, string> = {}) {
  const res = await fetch(app.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: text,
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** The signer recovered by viem, and every signed field against the answer and the request bytes. */
async function checkSigned(t: Test, body: any, sent: string, chainId: number, actionHash: Hex) {
  t.ok(validateResponse(body), `the answer fits the DecideResponse schema ${JSON.stringify(validateResponse.errors)}`);
  const a = body.attestation;
  t.ok(a, 'the answer carries an attestation');
  const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as any;
  t.equal(a.signer, caps.attestation.signer, 'the signer is the published one');
  t.ok(
    await verifyTypedData({
      address: caps.attestation.signer,
      domain: a.typed_data.domain,
      types: a.typed_data.types,
      primaryType: a.typed_data.primaryType,
      message: a.typed_data.message,
      signature: a.signature,
    }),
    'viem recovers the published signer from the signature',
  );
  const { domain, types, message } = a.typed_data;
  t.equal(ethersVerifyTypedData(domain, types, message, a.signature), caps.attestation.signer, 'so does ethers');
  t.same(a.typed_data.domain, { name: 'Preflight', version: '2', chainId });
  t.same(a.typed_data.types, caps.attestation.types, 'the types are the published ones');
  const m = a.typed_data.message;
  t.equal(VERDICTS[Number(m.verdict)], body.verdict, 'verdict');
  t.equal(RISKS[Number(m.risk)], body.risk, 'risk');
  t.equal(Number(m.confidenceBps), Math.round(body.confidence * 10000), 'confidence in basis points');
  t.equal(Number(m.expiresAt) - Number(m.issuedAt), body.expires_in, 'expiresAt = issuedAt + expires_in');
  t.ok(Math.abs(Number(m.issuedAt) - Date.now() / 1000) < 10, 'issued now');
  t.equal(m.requestHash, keccak256(toBytes(sent)), 'requestHash is keccak256 of the body bytes as sent');
  t.equal(m.actionHash, actionHash, 'actionHash');
  t.equal(m.policyHash, ZERO, 'policyHash: 32 zero bytes for an answer under no policy');
  return m;
}

const ZERO: Hex = `0x${'00'.repeat(32)}`;
// Odd spacing and key order on purpose: the hash is of these bytes, not of a re-serialisation.
const DECIDE =
  '{ "checks": [ {"type":"approval_amount", "amount":"1000", "spender":"0x1111111111111111111111111111111111111111"} ],\n  "goal":"bounded allowance" }';

for (const path of ['/v1/decide', '/v1/agents/decision-verification/decide', '/v1/agents/defi-risk/verify']) {
  t.test(`${path}: signed for Base, no action, id from the answer's request id`, async (t) => {
    const { status, body } = await send(path, DECIDE);
    t.equal(status, 200);
    const m = await checkSigned(t, body, DECIDE, 8453, ZERO);
    t.equal(m.id, keccak256(toBytes(body.decision.request_id)), 'id = keccak256(request id)');
  });
}

t.test('a block verdict is signed as a block', async (t) => {
  const text = JSON.stringify({
    goal: 'unlimited',
    checks: [{ type: 'approval_amount', amount: (2n ** 256n - 1n).toString() }],
  });
  const { body } = await send('/v1/decide', text);
  t.equal(body.verdict, 'block');
  const m = await checkSigned(t, body, text, 8453, ZERO);
  t.equal(m.verdict, '2');
});

for (const path of ['/v1/guard', '/v1/agents/execution-guard/execute']) {
  t.test(`${path}: signed for the request chain`, async (t) => {
    for (const [chain, id] of [
      [undefined, 8453],
      ['base', 8453],
      ['ethereum', 1],
      ['arbitrum', 42161],
      ['some-other-chain', 0],
    ] as const) {
      const text = JSON.stringify({
        action: 'transfer',
        amount_usd: 25,
        strict_mode: false,
        ...(chain ? { chain } : {}),
      });
      const { status, body } = await send(path, text);
      t.equal(status, 200, `${chain}`);
      await checkSigned(t, body, text, id, ZERO);
    }
  });
}

t.test('a guard with a transaction signs its action hash', async (t) => {
  const from = '0x2222222222222222222222222222222222222222';
  const to = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
  const data =
    '0xa9059cbb0000000000000000000000003333333333333333333333333333333333333333000000000000000000000000000000000000000000000000000000000000000a';
  const expected = (chainId: number, target: Hex, value: bigint, calldata: Hex) =>
    keccak256(
      encodeAbiParameters(
        [{ type: 'uint256' }, { type: 'address' }, { type: 'address' }, { type: 'uint256' }, { type: 'bytes32' }],
        [BigInt(chainId), from, target, value, keccak256(calldata)],
      ),
    );
  const cases: Array<[string, Record<string, unknown>, Hex]> = [
    ['a token transfer', { from, to, value: '0', data }, expected(8453, to, 0n, data)],
    ['value in hex, no data', { from, to, value: '0xde0b6b3a7640000' }, expected(8453, to, 10n ** 18n, '0x')],
    ['decimal value', { from, to, value: '1000000000000000000', data: '0x' }, expected(8453, to, 10n ** 18n, '0x')],
    ['a deployment (to null)', { from, to: null, data: '0x6000' }, expected(8453, zeroAddress, 0n, '0x6000')],
  ];
  for (const [name, transaction, hash] of cases) {
    const text = JSON.stringify({ action: 'contract_call', chain: 'base', strict_mode: false, transaction });
    const { status, body } = await send('/v1/guard', text);
    t.equal(status, 200, name);
    await checkSigned(t, body, text, 8453, hash);
  }
  const onOptimism = JSON.stringify({
    action: 'transfer',
    chain: 'optimism',
    strict_mode: false,
    transaction: { from, to },
  });
  const { body } = await send('/v1/guard', onOptimism);
  await checkSigned(t, body, onOptimism, 10, expected(10, to, 0n, '0x'));
});

t.test('two answers never share an id, even when a caller repeats its request id', async (t) => {
  const ids = new Set<string>();
  const answers = await Promise.all(
    Array.from({ length: 120 }, (_, i) =>
      send(
        i % 2 ? '/v1/decide' : '/v1/guard',
        i % 2 ? DECIDE : '{"action":"transfer"}',
        i < 30 ? { 'x-request-id': 'same-id' } : {},
      ),
    ),
  );
  for (const a of answers) ids.add(a.body.attestation.typed_data.message.id);
  t.equal(ids.size, answers.length, 'every id is different');
  // Signed together in batches on the signing thread: each answer still has its own signature.
  const verified = await Promise.all(
    answers.map(({ body }) =>
      verifyTypedData({
        address: body.attestation.signer,
        ...body.attestation.typed_data,
        signature: body.attestation.signature,
      }),
    ),
  );
  t.equal(verified.filter(Boolean).length, answers.length, 'every concurrent answer verifies');
  t.equal(answers[0].body.decision.request_id, 'same-id', "the caller's request id still correlates");
});

t.test('/v1/capabilities publishes the signer, domain and types, and the OpenAPI describes the field', async (t) => {
  const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as any;
  t.match(caps.attestation, {
    signer: /^0x[0-9a-fA-F]{40}$/,
    domain: { name: 'Preflight', version: '2' },
    domain_chain_id: { decide: 8453, chains: { base: 8453, ethereum: 1 } },
    primaryType: 'Verdict',
  });
  t.same(
    caps.attestation.types.Verdict.map((f: { name: string; type: string }) => `${f.type} ${f.name}`),
    [
      'bytes32 id',
      'uint8 verdict',
      'uint8 risk',
      'uint16 confidenceBps',
      'bytes32 requestHash',
      'bytes32 actionHash',
      'bytes32 policyHash',
      'uint64 issuedAt',
      'uint64 expiresAt',
    ],
  );
  const openapi = (await (await fetch(`${app.url}/openapi.json`)).json()) as any;
  t.same(openapi.components.schemas.DecideResponse.properties.attestation.$ref, '#/components/schemas/Attestation');
  t.ok(openapi.components.schemas.Attestation.properties.typed_data);
});

t.test('ATTESTATIONS=off: answers carry no attestation and capabilities say so', async (t) => {
  const off = await startTestApp({ ATTESTATIONS: 'off' });
  t.teardown(() => off.close());
  const res = await fetch(`${off.url}/v1/decide`, { method: 'POST', body: DECIDE });
  const body = (await res.json()) as any;
  t.equal(res.status, 200);
  t.notOk('attestation' in body);
  const caps = (await (await fetch(`${off.url}/v1/capabilities`)).json()) as any;
  t.equal(caps.attestation, null);
});

t.test(
  'ATTESTATION_SIGNING: prepared by default; every mode signs as the one signer; anything else stops start-up',
  async (t) => {
    t.equal(loadConfig({}).attestationSigning, 'prepared');
    t.throws(
      () => loadConfig({ ATTESTATION_SIGNING: 'gpu' }),
      /ATTESTATION_SIGNING must be one of prepared, auto, thread, inline/,
    );
    const signatures: string[] = [];
    for (const mode of ['inline', 'thread', 'auto', 'prepared']) {
      const app = await startTestApp({ ATTESTATION_SIGNING: mode, ATTESTATION_KEY: `0x${'11'.repeat(32)}` });
      t.teardown(() => app.close());
      const res = await fetch(`${app.url}/v1/decide`, { method: 'POST', body: DECIDE });
      const body = (await res.json()) as any;
      t.equal(res.status, 200, mode);
      t.ok(
        await verifyTypedData({
          address: body.attestation.signer,
          ...body.attestation.typed_data,
          signature: body.attestation.signature,
        }),
        `${mode}: viem verifies the signature`,
      );
      signatures.push(body.attestation.signer);
    }
    t.equal(new Set(signatures).size, 1, 'one signer whatever the mode');
  },
);
