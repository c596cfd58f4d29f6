/**
 * GuardRequest.transaction and typed_data over HTTP: malformed addresses, hex, integers and typed
 * data are 422s whose `loc` names the field; well-formed ones are accepted with their defaults.
 */
import t from 'tap';
import { startTestApp, post } from '../helpers/app.js';

const FROM = '0x1111111111111111111111111111111111111111';
const TOKEN = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const permit = (message: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: TOKEN },
  types: {
    Permit: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'nonce', type: 'uint256' },
      { name: 'deadline', type: 'uint256' },
    ],
  },
  primaryType: 'Permit',
  message: { owner: FROM, spender: FROM, value: '1', nonce: 0, deadline: '1', ...message },
  ...extra,
});

interface Bad {
  name: string;
  body: Record<string, unknown>;
  loc: Array<string | number>;
  type: string;
}

const tx = (over: Record<string, unknown>) => ({ action: 'transfer', transaction: { from: FROM, ...over } });
const bad: Bad[] = [
  {
    name: 'from missing',
    body: { action: 'transfer', transaction: {} },
    loc: ['body', 'transaction', 'from'],
    type: 'missing',
  },
  {
    name: 'from short',
    body: tx({ from: '0x1234' }),
    loc: ['body', 'transaction', 'from'],
    type: 'string_pattern_mismatch',
  },
  {
    name: 'to not hex',
    body: tx({ to: `0x${'zz'.repeat(20)}` }),
    loc: ['body', 'transaction', 'to'],
    type: 'string_pattern_mismatch',
  },
  {
    name: 'data odd length',
    body: tx({ data: '0xabc' }),
    loc: ['body', 'transaction', 'data'],
    type: 'string_pattern_mismatch',
  },
  {
    name: 'data no prefix',
    body: tx({ data: 'abcd' }),
    loc: ['body', 'transaction', 'data'],
    type: 'string_pattern_mismatch',
  },
  {
    name: 'value negative',
    body: tx({ value: '-1' }),
    loc: ['body', 'transaction', 'value'],
    type: 'string_pattern_mismatch',
  },
  { name: 'value a number', body: tx({ value: 5 }), loc: ['body', 'transaction', 'value'], type: 'string_type' },
  {
    name: 'value beyond uint256',
    body: tx({ value: '9'.repeat(78) }),
    loc: ['body', 'transaction', 'value'],
    type: 'int_range',
  },
  { name: 'gas too low', body: tx({ gas: 5 }), loc: ['body', 'transaction', 'gas'], type: 'greater_than_equal' },
  {
    name: 'transaction a string',
    body: { action: 'swap', transaction: 'x' },
    loc: ['body', 'transaction'],
    type: 'dict_type',
  },
  {
    name: 'typed data without message',
    body: { action: 'approve', typed_data: { domain: {}, types: {}, primaryType: 'X' } },
    loc: ['body', 'typed_data', 'message'],
    type: 'missing',
  },
  {
    name: 'verifyingContract malformed',
    body: { action: 'approve', typed_data: permit({}, { domain: { verifyingContract: '0x12' } }) },
    loc: ['body', 'typed_data', 'domain', 'verifyingContract'],
    type: 'string_pattern_mismatch',
  },
  {
    name: 'primaryType not in types',
    body: { action: 'approve', typed_data: permit({}, { primaryType: 'Nope' }) },
    loc: ['body', 'typed_data', 'primaryType'],
    type: 'value_error',
  },
  {
    name: 'spender not an address',
    body: { action: 'approve', typed_data: permit({ spender: '0xdead' }) },
    loc: ['body', 'typed_data', 'message', 'spender'],
    type: 'address_invalid',
  },
  {
    name: 'value beyond uint256',
    body: { action: 'approve', typed_data: permit({ value: `0x1${'0'.repeat(64)}` }) },
    loc: ['body', 'typed_data', 'message', 'value'],
    type: 'int_range',
  },
  {
    name: 'value not an integer',
    body: { action: 'approve', typed_data: permit({ value: 'lots' }) },
    loc: ['body', 'typed_data', 'message', 'value'],
    type: 'int_parsing',
  },
  {
    name: 'message field missing',
    body: { action: 'approve', typed_data: permit({ deadline: undefined }) },
    loc: ['body', 'typed_data', 'message', 'deadline'],
    type: 'missing',
  },
  {
    name: 'unknown field type',
    body: {
      action: 'approve',
      typed_data: { ...permit({}), types: { Permit: [{ name: 'owner', type: 'uint7' }] } },
    },
    loc: ['body', 'typed_data', 'types', 'Permit', 0, 'type'],
    type: 'value_error',
  },
  {
    name: 'types entry not a list',
    body: { action: 'approve', typed_data: { ...permit({}), types: { Permit: 'owner address' } } },
    loc: ['body', 'typed_data', 'types', 'Permit'],
    type: 'list_type',
  },
  {
    name: 'cyclic struct types',
    body: {
      action: 'approve',
      typed_data: {
        domain: {},
        types: { A: [{ name: 'b', type: 'B' }], B: [{ name: 'a', type: 'A[]' }] },
        primaryType: 'A',
        message: { b: { a: [] } },
      },
    },
    loc: ['body', 'typed_data'],
    type: 'value_error',
  },
];

t.test('malformed transaction and typed data are 422 with exact loc', async (t) => {
  const app = await startTestApp();
  t.teardown(() => app.close());
  for (const c of bad) {
    const res = await post(`${app.url}/v1/guard`, c.body);
    t.equal(res.status, 422, `${c.name}: 422`);
    const hit = (res.body.detail as Array<{ loc: unknown[]; type: string }>).find(
      (d) => JSON.stringify(d.loc) === JSON.stringify(c.loc),
    );
    t.ok(hit, `${c.name}: a detail at ${c.loc.join('.')} (got ${JSON.stringify(res.body.detail)})`);
    t.equal(hit?.type, c.type, `${c.name}: type`);
  }
});

t.test('well-formed fields are accepted; absent or null ones change nothing', async (t) => {
  const app = await startTestApp();
  t.teardown(() => app.close());
  const plain = await post(`${app.url}/v1/guard`, { action: 'approve', approval_amount: '1', strict_mode: false });
  const nulls = await post(`${app.url}/v1/guard`, {
    action: 'approve',
    approval_amount: '1',
    strict_mode: false,
    transaction: null,
    typed_data: null,
  });
  t.equal(plain.status, 200);
  t.equal(nulls.status, 200);
  t.same(nulls.body.checks, plain.body.checks, 'the same plan');
  t.equal(nulls.body.verdict, plain.body.verdict, 'the same verdict');
  const hexValue = await post(`${app.url}/v1/guard`, {
    action: 'contract_call',
    strict_mode: false,
    typed_data: permit({ value: '0xffff', nonce: '0x01' }),
  });
  t.equal(hexValue.status, 200, 'hex integers in a message are accepted');
});

t.test("a caller's node on a private address is refused by the SSRF rules, without a connection", async (t) => {
  const app = await startTestApp();
  t.teardown(() => app.close());
  // 10.0.0.0/8 is private: the address classifier refuses it before any packet is sent.
  const res = await post(`${app.url}/v1/guard`, {
    action: 'contract_call',
    rpc_url: 'http://10.11.12.13:8545/',
    transaction: { from: FROM, to: TOKEN },
  });
  t.equal(res.status, 200);
  const sim = res.body.evidence.find((e: { name: string }) => e.name === 'transaction_simulation');
  t.equal(sim.status, 'fail');
  t.equal(sim.reason, 'target_forbidden');
  t.equal(res.body.verdict, 'block');
});

t.test('/v1/capabilities and /openapi.json describe the new fields from the schema', async (t) => {
  const app = await startTestApp();
  t.teardown(() => app.close());
  const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as {
    guard: { fields: Array<{ name: string; type: unknown; required: boolean }> };
  };
  const field = (name: string) => caps.guard.fields.find((f) => f.name === name);
  t.same(field('transaction')?.type, ['object', 'null']);
  t.same(field('typed_data')?.type, ['object', 'null']);
  t.equal(field('transaction')?.required, false);
  const doc = (await (await fetch(`${app.url}/openapi.json`)).json()) as Record<string, any>;
  const guard = JSON.stringify(doc).includes('"typed_data"') && JSON.stringify(doc).includes('"transaction"');
  t.ok(guard, 'the OpenAPI document carries both fields');
});
