/**
 * Whole fuzz requests: a valid-shaped body for the endpoint's schema (sometimes another
 * endpoint's), a few mutations, then the envelope: JSON, not JSON, empty, odd content types and
 * encodings, with the right key, a wrong one or none.
 *
 * Every URL a generated body carries names loopback (the sink) or is no http URL at all, so
 * nothing generated here can make the service resolve or dial anything off this machine.
 */
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { SCHEMA_POST_ENDPOINTS, type SchemaPostEndpoint } from '../../src/http/endpoints.js';
import { mutate, mutationArb, serialize, stringArb, numberArb, type Mutation } from './values.js';

export interface FuzzRequest {
  endpoint: SchemaPostEndpoint;
  body: string | Buffer;
  headers: Record<string, string>;
  /** The request presents the issued key (x-api-key or Bearer). */
  keyed: boolean;
  label: string;
}

export const PAIR = '0x88a43bbdf9d098eec7bceda4e2494615dfd9bb9c';
const HASH = `0x${'ab'.repeat(32)}`;
const ADDRESS = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const opt = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(a, { nil: null });
const num = (min: number, max: number): fc.Arbitrary<number> => fc.double({ min, max, noNaN: true });
const assets = fc.constantFrom('usd-coin', 'tether', 'dai', 'ethereum', 'not-listed');
const chains = fc.constantFrom('base', 'ethereum', 'solana', 'mars');
const contextArb = fc.record(
  { deadline_ms: fc.integer({ min: 50, max: 400 }), note: fc.string({ maxLength: 10 }) },
  { requiredKeys: [] },
);
const headersArb = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 12 }),
  fc.oneof(fc.string({ maxLength: 20 }), stringArb),
  { maxKeys: 3 },
);

/** GuardRequest.transaction: well-formed and malformed addresses, values, calldata and gas. */
const transactionArb = fc.record(
  {
    from: fc.constantFrom(ADDRESS, '0x1', `0x${'g'.repeat(40)}`),
    to: opt(fc.constantFrom(ADDRESS, 'x')),
    value: fc.constantFrom('0', '0x10', '9'.repeat(78), '-1', '0x'),
    data: fc.constantFrom('0x', '0xa9059cbb', '0xabc', `0x${'00'.repeat(68)}`),
    gas: opt(fc.integer({ min: -1, max: 200_000_000 })),
  },
  { requiredKeys: ['from'] },
);
const typedFieldArb = fc.record({
  name: fc.constantFrom('owner', 'spender', 'value', 'nonce', 'deadline', 'details', 'x'),
  type: fc.constantFrom(
    'address',
    'uint256',
    'uint160',
    'bytes32',
    'bytes',
    'string',
    'bool',
    'Permit',
    'Permit[]',
    'Details',
    'uint7',
    'bytes33',
    'int8',
  ),
});
const messageValueArb = fc.oneof(
  fc.constantFrom(ADDRESS, '0x12', `0x${'f'.repeat(64)}`, `0x1${'0'.repeat(64)}`, '-1', '1e18', true),
  fc.integer(),
  fc.jsonValue({ maxDepth: 2 }),
);
/** GuardRequest.typed_data: a real permit, or types and messages that may disagree with each other. */
const typedDataArb = fc.oneof(
  fc.constant({
    domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: ADDRESS },
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
    message: { owner: ADDRESS, spender: ADDRESS, value: `0x${'f'.repeat(64)}`, nonce: 0, deadline: 1 },
  }),
  fc.record(
    {
      domain: fc.record(
        {
          chainId: fc.oneof(fc.integer(), fc.constantFrom('8453', '0x2105', 'base', '-1')),
          verifyingContract: fc.constantFrom(ADDRESS, '0x12'),
          name: fc.string({ maxLength: 8 }),
        },
        { requiredKeys: [] },
      ),
      types: fc.dictionary(
        fc.constantFrom('Permit', 'Details', 'EIP712Domain', 'Other'),
        fc.array(typedFieldArb, { maxLength: 5 }),
        {
          maxKeys: 3,
        },
      ),
      primaryType: fc.constantFrom('Permit', 'Details', 'Other', 'EIP712Domain'),
      message: fc.dictionary(
        fc.constantFrom('owner', 'spender', 'value', 'nonce', 'deadline', 'details', 'x'),
        messageValueArb,
        {
          maxKeys: 6,
        },
      ),
    },
    { requiredKeys: ['domain', 'types', 'primaryType', 'message'] },
  ),
);

function schemaBodies(sinkPort: number): Record<string, fc.Arbitrary<unknown>> {
  const p = sinkPort;
  const url = fc.constantFrom(
    `http://127.0.0.1:${p}/status`,
    `http://127.0.0.1:${p}/rpc?key=1`,
    `http://localhost:${p}/`,
    `http://[::1]:${p}/`,
    `http://2130706433:${p}/`,
    `http://0x7f.1:${p}/`,
    `http://user:pw@127.0.0.1:${p}/`,
    `https://127.0.0.1:${p}/`,
    `ftp://127.0.0.1:${p}/`,
    'file:///etc/passwd',
    'gopher://127.0.0.1:70/_x',
    'not a url',
    '',
    `http://127.0.0.1:${p}/${'a'.repeat(2100)}`,
  );
  const check = fc.oneof(
    fc.record(
      {
        type: fc.constant('http'),
        url,
        method: fc.constantFrom('GET', 'HEAD'),
        expect_status: fc.integer({ min: 100, max: 599 }),
        must_contain: opt(fc.string()),
        headers: headersArb,
      },
      { requiredKeys: ['type', 'url'] },
    ),
    fc.record(
      {
        type: fc.constant('rpc'),
        rpc_url: url,
        method_name: fc.constantFrom('eth_blockNumber', 'eth_chainId'),
        params: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
        expect_hex_result: fc.boolean(),
        min_block_number: opt(fc.integer()),
      },
      { requiredKeys: ['type', 'rpc_url', 'method_name'] },
    ),
    fc.record(
      {
        type: fc.constant('price'),
        asset_id: assets,
        quote: fc.constantFrom('usd', 'eur'),
        min_price: opt(numberArb),
        max_price: opt(num(0, 1e6)),
      },
      { requiredKeys: ['type', 'asset_id'] },
    ),
    fc.record(
      { type: fc.constant('tx'), rpc_url: url, tx_hash: fc.constantFrom(HASH, '0x12'), require_success: fc.boolean() },
      { requiredKeys: ['type', 'rpc_url', 'tx_hash'] },
    ),
    fc.record(
      {
        type: fc.constant('dex_price'),
        chain: chains,
        pair_address: fc.constantFrom(PAIR, '0xdead'),
        min_price_usd: opt(num(0, 1e4)),
        min_liquidity_usd: opt(num(0, 1e9)),
      },
      { requiredKeys: ['type', 'chain', 'pair_address'] },
    ),
    fc.record(
      {
        type: fc.constant('stablecoin_depeg'),
        asset_id: assets,
        warn_deviation_pct: num(0, 1),
        block_deviation_pct: num(0, 1),
      },
      { requiredKeys: ['type', 'asset_id'] },
    ),
    fc.record(
      {
        type: fc.constant('bridge_exploit_monitor'),
        status_url: url,
        safe_keywords: fc.array(fc.string({ minLength: 1, maxLength: 10 }), { maxLength: 3 }),
        danger_keywords: fc.array(fc.string({ minLength: 1, maxLength: 10 }), { maxLength: 3 }),
        headers: headersArb,
      },
      { requiredKeys: ['type', 'status_url'] },
    ),
    fc.record(
      {
        type: fc.constant('rug_pull_risk'),
        chain: chains,
        pair_address: fc.constantFrom(PAIR, '0xbeef'),
        min_pair_age_minutes: fc.nat(),
        min_buys_h24: opt(fc.integer()),
      },
      { requiredKeys: ['type', 'chain', 'pair_address'] },
    ),
    fc.record(
      {
        type: fc.constant('approval_amount'),
        amount: fc.oneof(
          fc.bigInt({ min: 0n, max: 2n ** 256n }).map(String),
          fc.constantFrom('0xff', `0x${'f'.repeat(64)}`),
        ),
        spender: opt(fc.constantFrom(ADDRESS, 'nobody')),
        known_safe_addresses: fc.array(fc.constantFrom(ADDRESS), { maxLength: 2 }),
      },
      { requiredKeys: ['type', 'amount'] },
    ),
    fc.record(
      {
        type: fc.constant('contract_verified'),
        chain: fc.constantFrom('base', 'ethereum'),
        contract_address: fc.constantFrom(ADDRESS, `0x${'1'.repeat(40)}`),
      },
      { requiredKeys: ['type', 'chain', 'contract_address'] },
    ),
  );
  return {
    DecideRequest: fc.record(
      {
        goal: fc.oneof(fc.string({ minLength: 1, maxLength: 60 }), stringArb),
        checks: fc.array(check, { maxLength: 4 }),
        constraints: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
        allow_decide_on_partial: fc.boolean(),
        context: contextArb,
      },
      { requiredKeys: ['goal'] },
    ),
    GuardRequest: fc.record(
      {
        action: fc.constantFrom(
          'swap',
          'transfer',
          'bridge',
          'yield_deposit',
          'generic',
          'approve',
          'mint',
          'stake',
          'add_liquidity',
          'contract_call',
        ),
        chain: opt(chains),
        pair_address: opt(fc.constantFrom(PAIR, '0xdead')),
        stablecoin_asset_id: opt(assets),
        rpc_url: opt(url),
        tx_hash: opt(fc.constant(HASH)),
        bridge_status_url: opt(url),
        amount_usd: opt(num(0, 1e9)),
        strict_mode: fc.boolean(),
        context: contextArb,
        spender: opt(fc.constantFrom(ADDRESS, 'x')),
        approval_amount: opt(fc.constantFrom('1000000', `0x${'f'.repeat(64)}`)),
        contract_address: opt(fc.constant(ADDRESS)),
        known_safe_addresses: fc.array(fc.constant(ADDRESS), { maxLength: 2 }),
        transaction: opt(transactionArb),
        typed_data: opt(typedDataArb),
      },
      { requiredKeys: ['action'] },
    ),
    ApiKeySignupRequest: fc.record(
      {
        email: fc.emailAddress(),
        company: opt(fc.string({ maxLength: 30 })),
        full_name: opt(stringArb),
        use_case: opt(fc.string()),
        website: opt(url),
        requested_plan: fc.constantFrom('Basic', 'DeFi', 'Execution', null),
      },
      { requiredKeys: ['email'] },
    ),
    StablecoinIntelligenceRequest: fc.record(
      {
        asset_ids: fc.array(assets, { maxLength: 6 }),
        quote: fc.constantFrom('usd', 'eur', ''),
        warn_deviation_pct: num(0, 1),
        block_deviation_pct: num(0, 1),
      },
      { requiredKeys: [] },
    ),
    BridgeRiskRequest: fc.record(
      { bridge_status_urls: fc.array(url, { minLength: 1, maxLength: 4 }), strict_mode: fc.boolean() },
      { requiredKeys: ['bridge_status_urls'] },
    ),
    ScreenRequest: fc.record(
      {
        chain: opt(chains),
        addresses: fc.array(fc.constantFrom(ADDRESS, `0x${'1'.repeat(40)}`, '0xdead', ''), {
          minLength: 0,
          maxLength: 3,
        }),
        known_addresses: fc.array(fc.constantFrom(ADDRESS, `0x${'2'.repeat(40)}`), { maxLength: 2 }),
      },
      { requiredKeys: ['addresses'] },
    ),
    YieldRoutingRequest: fc.record(
      {
        options: fc.array(
          fc.record(
            {
              name: fc.string({ minLength: 1, maxLength: 20 }),
              apy: num(-100, 1000),
              chain: chains,
              protocol: opt(fc.string({ maxLength: 10 })),
              risk_score: num(0, 100),
              liquidity_usd: opt(num(0, 1e10)),
              stablecoin_asset_id: opt(assets),
            },
            { requiredKeys: ['name', 'apy'] },
          ),
          { minLength: 1, maxLength: 5 },
        ),
        min_liquidity_usd: num(0, 1e7),
        max_risk_score: num(0, 100),
        prefer_chain: opt(chains),
      },
      { requiredKeys: ['options'] },
    ),
  };
}

const GARBAGE = [
  '{',
  '{"goal":',
  '[',
  '{"goal":"g",}',
  "{'goal':'g'}",
  'NaN',
  'undefined',
  '{"goal":"g"}{"goal":"g"}',
  '\u0000',
  'null',
  'true',
  '1e999',
  '"\\ud800"',
  '{"goal":"\\u00"}',
  '{"a":1,"a":2}',
  '\ufeff{"goal":"g"}',
  `{"goal":"g"${' '.repeat(1000)}`,
  '\u00ff\u00fe{',
  ']]]]',
];

const garbageArb: fc.Arbitrary<string | Buffer> = fc.oneof(
  fc.constantFrom(...GARBAGE),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
);

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/json; charset=utf-16le',
  'application/json; charset=utf-8',
  'application/xml',
  '',
  ';;;===',
  'application/json; charset=',
];

type Envelope = { kind: 'json' | 'garbage' | 'empty' | 'encoded'; contentType: string | null; encoding: string | null };

const envelopeArb: fc.Arbitrary<Envelope> = fc.oneof(
  { weight: 75, arbitrary: fc.constant<Envelope>({ kind: 'json', contentType: 'application/json', encoding: null }) },
  { weight: 7, arbitrary: fc.constant<Envelope>({ kind: 'garbage', contentType: 'application/json', encoding: null }) },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom<string | null>('application/json', null)
      .map((contentType): Envelope => ({ kind: 'empty', contentType, encoding: null })),
  },
  {
    weight: 8,
    arbitrary: fc
      .constantFrom<string | null>(...CONTENT_TYPES, null)
      .map((contentType): Envelope => ({ kind: 'json', contentType, encoding: null })),
  },
  {
    weight: 7,
    arbitrary: fc
      .constantFrom('gzip', 'gzip-garbage', 'deflate', 'br', 'identity', 'x-unknown', 'GZIP')
      .map((encoding): Envelope => ({ kind: 'encoded', contentType: 'application/json', encoding })),
  },
);

const authArb = fc.oneof(
  { weight: 12, arbitrary: fc.constant('x-api-key') },
  { weight: 2, arbitrary: fc.constant('bearer') },
  { weight: 3, arbitrary: fc.constantFrom('wrong', 'none', 'empty', 'long', 'bearer-empty', 'basic', 'padded') },
);

/** Header values for the auth variants that are not the issued key as such. */
function authHeaders(auth: string, apiKey: string): Record<string, string> {
  switch (auth) {
    case 'x-api-key':
      return { 'x-api-key': apiKey };
    case 'bearer':
      return { authorization: `Bearer ${apiKey}` };
    case 'padded':
      return { 'x-api-key': ` ${apiKey}\t` }; // the same key, surrounding whitespace trimmed
    case 'wrong':
      return { 'x-api-key': `${apiKey.slice(0, -1)}${apiKey.endsWith('0') ? '1' : '0'}` };
    case 'empty':
      return { 'x-api-key': '' };
    case 'long':
      return { 'x-api-key': `pvk_${'k'.repeat(6000)}` };
    case 'bearer-empty':
      return { authorization: 'Bearer ' };
    case 'basic':
      return { authorization: `Basic ${Buffer.from(`${apiKey}:`).toString('base64')}` };
    default:
      return {};
  }
}

/** Requests for every POST endpoint; `apiKey` is the key the run signed up for. */
export function requestArb(sinkPort: number, apiKey: string): fc.Arbitrary<FuzzRequest> {
  const bodies = schemaBodies(sinkPort);
  const schemas = Object.keys(bodies);
  return fc
    .record({
      endpoint: fc.constantFrom(...SCHEMA_POST_ENDPOINTS),
      foreign: fc.oneof(
        { weight: 9, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom(...schemas) },
      ),
      mutations: fc.oneof(
        { weight: 2, arbitrary: fc.constant<Mutation[]>([]) },
        { weight: 3, arbitrary: fc.array(mutationArb, { minLength: 1, maxLength: 3 }) },
      ),
      envelope: envelopeArb,
      garbage: garbageArb,
      auth: authArb,
    })
    .chain((r) => bodies[r.foreign ?? r.endpoint.request].map((base) => ({ ...r, base })))
    .map((r): FuzzRequest => {
      const json = serialize(mutate(r.base, r.mutations));
      const headers: Record<string, string> = {};
      if (r.envelope.contentType !== null) headers['content-type'] = r.envelope.contentType;
      let body: string | Buffer = json;
      if (r.envelope.kind === 'garbage') body = r.garbage;
      if (r.envelope.kind === 'empty') body = '';
      if (r.envelope.kind === 'encoded') {
        const enc = r.envelope.encoding as string;
        headers['content-encoding'] = enc === 'gzip-garbage' ? 'gzip' : enc;
        body =
          enc === 'gzip' || enc === 'GZIP'
            ? gzipSync(json)
            : enc === 'identity'
              ? json
              : Buffer.concat([gzipSync(json).subarray(0, 12), Buffer.from(json.slice(0, 40))]);
      }
      Object.assign(headers, authHeaders(r.auth, apiKey));
      const label = `${r.endpoint.path} ${r.foreign ? `[${r.foreign} body] ` : ''}${r.envelope.kind}${r.envelope.encoding ? `:${r.envelope.encoding}` : ''} ct=${r.envelope.contentType} auth=${r.auth} mutations=${r.mutations.map((m) => m.op).join(',') || 'none'}`;
      return { endpoint: r.endpoint, body, headers, keyed: ['x-api-key', 'bearer', 'padded'].includes(r.auth), label };
    });
}
