/** Table-driven: every request schema, valid bodies with defaults applied, invalid ones with exact loc and type. */
import t from 'tap';
import { validator, toValidationDetail, type SchemaId } from '../../src/http/validation.js';
import { CHECK_TYPES } from '../../src/schema-info.js';

interface Valid {
  schema: SchemaId;
  name: string;
  body: unknown;
  expect: Record<string, unknown>;
}
interface Invalid {
  schema: SchemaId;
  name: string;
  body: unknown;
  loc: Array<string | number>;
  type: string;
  msg?: RegExp;
}

const url = 'https://status.example.com/';
const valid: Valid[] = [
  {
    schema: 'DecideRequest',
    name: 'goal only',
    body: { goal: 'swap' },
    expect: { goal: 'swap', allow_decide_on_partial: false },
  },
  { schema: 'DecideRequest', name: 'unknown fields ignored', body: { goal: 'g', extra: 1 }, expect: { goal: 'g' } },
  {
    schema: 'DecideRequest',
    name: 'http defaults',
    body: { goal: 'g', checks: [{ type: 'http', url }] },
    expect: { checks: [{ type: 'http', url, method: 'GET', expect_status: 200 }] },
  },
  {
    schema: 'DecideRequest',
    name: 'rpc defaults',
    body: { goal: 'g', checks: [{ type: 'rpc', rpc_url: url, method_name: 'eth_blockNumber' }] },
    expect: { checks: [{ type: 'rpc', expect_hex_result: false }] },
  },
  {
    schema: 'DecideRequest',
    name: 'price defaults',
    body: { goal: 'g', checks: [{ type: 'price', asset_id: 'ethereum' }] },
    expect: { checks: [{ source: 'price_provider', quote: 'usd' }] },
  },
  {
    schema: 'DecideRequest',
    name: 'tx defaults',
    body: { goal: 'g', checks: [{ type: 'tx', rpc_url: url, tx_hash: `0x${'ab'.repeat(32)}` }] },
    expect: { checks: [{ require_success: true }] },
  },
  {
    schema: 'DecideRequest',
    name: 'dex_price bounds optional',
    body: { goal: 'g', checks: [{ type: 'dex_price', chain: 'base', pair_address: '0xabc' }] },
    expect: { checks: [{ type: 'dex_price', chain: 'base' }] },
  },
  {
    schema: 'DecideRequest',
    name: 'stablecoin_depeg defaults',
    body: { goal: 'g', checks: [{ type: 'stablecoin_depeg', asset_id: 'usd-coin' }] },
    expect: { checks: [{ quote: 'usd', warn_deviation_pct: 0.005, block_deviation_pct: 0.02 }] },
  },
  {
    schema: 'DecideRequest',
    name: 'bridge defaults',
    body: { goal: 'g', checks: [{ type: 'bridge_exploit_monitor', status_url: url }] },
    expect: { checks: [{ expect_status: 200 }] },
  },
  {
    schema: 'DecideRequest',
    name: 'rug_pull_risk defaults',
    body: { goal: 'g', checks: [{ type: 'rug_pull_risk', chain: 'base', pair_address: '0xp' }] },
    expect: { checks: [{ min_liquidity_usd: 50000, min_pair_age_minutes: 1440, max_fdv_to_liquidity_ratio: 20 }] },
  },
  {
    schema: 'DecideRequest',
    name: 'approval hex amount',
    body: { goal: 'g', checks: [{ type: 'approval_amount', amount: '0xFFff' }] },
    expect: { checks: [{ amount: '0xFFff' }] },
  },
  {
    schema: 'DecideRequest',
    name: 'contract_verified',
    body: {
      goal: 'g',
      checks: [{ type: 'contract_verified', chain: 'base', contract_address: `0x${'1'.repeat(40)}` }],
    },
    expect: { checks: [{ chain: 'base' }] },
  },
  {
    schema: 'GuardRequest',
    name: 'published example',
    body: { action: 'swap', chain: 'base', amount_usd: 2500, strict_mode: true },
    expect: { action: 'swap', chain: 'base', stablecoin_asset_id: 'usd-coin', strict_mode: true },
  },
  {
    schema: 'GuardRequest',
    name: 'guard defaults',
    body: { action: 'bridge' },
    expect: { chain: 'base', stablecoin_asset_id: 'usd-coin', strict_mode: true },
  },
  {
    schema: 'GuardRequest',
    name: 'nulls allowed',
    body: { action: 'approve', chain: null, rpc_url: null, amount_usd: null },
    expect: { chain: null, rpc_url: null },
  },
  {
    schema: 'ApiKeySignupRequest',
    name: 'email only',
    body: { email: 'a@example.com' },
    expect: { email: 'a@example.com' },
  },
  {
    schema: 'ApiKeySignupRequest',
    name: 'null plan',
    body: { email: 'a@example.com', requested_plan: null, website: null },
    expect: { requested_plan: null },
  },
  {
    schema: 'StablecoinIntelligenceRequest',
    name: 'empty body',
    body: {},
    expect: { quote: 'usd', warn_deviation_pct: 0.005, block_deviation_pct: 0.02 },
  },
  { schema: 'BridgeRiskRequest', name: 'one url', body: { bridge_status_urls: [url] }, expect: { strict_mode: true } },
  {
    schema: 'YieldRoutingRequest',
    name: 'option defaults',
    body: { options: [{ name: 'a', apy: 5 }] },
    expect: {
      min_liquidity_usd: 50000,
      max_risk_score: 70,
      options: [{ name: 'a', apy: 5, chain: 'base', risk_score: 50, stablecoin_asset_id: 'usd-coin' }],
    },
  },
];

const invalid: Invalid[] = [
  {
    schema: 'DecideRequest',
    name: 'empty object',
    body: {},
    loc: ['body', 'goal'],
    type: 'missing',
    msg: /Field required/,
  },
  { schema: 'DecideRequest', name: 'goal not a string', body: { goal: 5 }, loc: ['body', 'goal'], type: 'string_type' },
  { schema: 'DecideRequest', name: 'root is an array', body: [], loc: ['body'], type: 'model_attributes_type' },
  {
    schema: 'DecideRequest',
    name: 'partial not a bool',
    body: { goal: 'g', allow_decide_on_partial: 'yes' },
    loc: ['body', 'allow_decide_on_partial'],
    type: 'bool_type',
  },
  {
    schema: 'DecideRequest',
    name: 'checks not a list',
    body: { goal: 'g', checks: {} },
    loc: ['body', 'checks'],
    type: 'list_type',
  },
  {
    schema: 'DecideRequest',
    name: 'unknown check type',
    body: { goal: 'g', checks: [{ type: 'teleport' }] },
    loc: ['body', 'checks', 0],
    type: 'union_tag_invalid',
    msg: /'teleport'.*'http', 'rpc', 'price', 'tx', 'dex_price', 'stablecoin_depeg', 'bridge_exploit_monitor', 'rug_pull_risk', 'approval_amount', 'contract_verified'/,
  },
  {
    schema: 'DecideRequest',
    name: 'check without type',
    body: { goal: 'g', checks: [{ url }] },
    loc: ['body', 'checks', 0],
    type: 'union_tag_not_found',
  },
  {
    schema: 'DecideRequest',
    name: 'http without url',
    body: { goal: 'g', checks: [{ type: 'http' }] },
    loc: ['body', 'checks', 0, 'url'],
    type: 'missing',
  },
  {
    schema: 'DecideRequest',
    name: 'http bad url',
    body: { goal: 'g', checks: [{ type: 'http', url: 'not a url' }] },
    loc: ['body', 'checks', 0, 'url'],
    type: 'url_parsing',
  },
  {
    schema: 'DecideRequest',
    name: 'http bad method',
    body: { goal: 'g', checks: [{ type: 'http', url, method: 'POST' }] },
    loc: ['body', 'checks', 0, 'method'],
    type: 'enum',
    msg: /'GET' or 'HEAD'/,
  },
  {
    schema: 'DecideRequest',
    name: 'http status as string',
    body: { goal: 'g', checks: [{ type: 'http', url, expect_status: '200' }] },
    loc: ['body', 'checks', 0, 'expect_status'],
    type: 'int_type',
  },
  {
    schema: 'DecideRequest',
    name: 'http header value not string',
    body: { goal: 'g', checks: [{ type: 'http', url, headers: { a: 1 } }] },
    loc: ['body', 'checks', 0, 'headers', 'a'],
    type: 'string_type',
  },
  {
    schema: 'DecideRequest',
    name: 'rpc without method',
    body: { goal: 'g', checks: [{ type: 'rpc', rpc_url: url }] },
    loc: ['body', 'checks', 0, 'method_name'],
    type: 'missing',
  },
  {
    schema: 'DecideRequest',
    name: 'rpc min block not int',
    body: { goal: 'g', checks: [{ type: 'rpc', rpc_url: url, method_name: 'm', min_block_number: 1.5 }] },
    loc: ['body', 'checks', 0, 'min_block_number'],
    type: 'int_type',
  },
  {
    schema: 'DecideRequest',
    name: 'price bound as string',
    body: { goal: 'g', checks: [{ type: 'price', asset_id: 'x', min_price: '1' }] },
    loc: ['body', 'checks', 0, 'min_price'],
    type: 'float_type',
  },
  {
    schema: 'DecideRequest',
    name: 'price other source',
    body: { goal: 'g', checks: [{ type: 'price', asset_id: 'x', source: 'other' }] },
    loc: ['body', 'checks', 0, 'source'],
    type: 'literal_error',
  },
  {
    schema: 'DecideRequest',
    name: 'tx bad hash',
    body: { goal: 'g', checks: [{ type: 'tx', rpc_url: url, tx_hash: '0x12' }] },
    loc: ['body', 'checks', 0, 'tx_hash'],
    type: 'string_pattern_mismatch',
  },
  {
    schema: 'DecideRequest',
    name: 'dex without chain',
    body: { goal: 'g', checks: [{ type: 'dex_price', pair_address: 'p' }] },
    loc: ['body', 'checks', 0, 'chain'],
    type: 'missing',
  },
  {
    schema: 'DecideRequest',
    name: 'depeg pct not a number',
    body: { goal: 'g', checks: [{ type: 'stablecoin_depeg', asset_id: 'x', warn_deviation_pct: 'a' }] },
    loc: ['body', 'checks', 0, 'warn_deviation_pct'],
    type: 'float_type',
  },
  {
    schema: 'DecideRequest',
    name: 'bridge keyword not string',
    body: { goal: 'g', checks: [{ type: 'bridge_exploit_monitor', status_url: url, safe_keywords: [1] }] },
    loc: ['body', 'checks', 0, 'safe_keywords', 0],
    type: 'string_type',
  },
  {
    schema: 'DecideRequest',
    name: 'rug age not int',
    body: {
      goal: 'g',
      checks: [{ type: 'rug_pull_risk', chain: 'base', pair_address: 'p', min_pair_age_minutes: 'old' }],
    },
    loc: ['body', 'checks', 0, 'min_pair_age_minutes'],
    type: 'int_type',
  },
  {
    schema: 'DecideRequest',
    name: 'approval amount words',
    body: { goal: 'g', checks: [{ type: 'approval_amount', amount: 'lots' }] },
    loc: ['body', 'checks', 0, 'amount'],
    type: 'string_pattern_mismatch',
    msg: /decimal integer string/,
  },
  {
    schema: 'DecideRequest',
    name: 'approval amount number',
    body: { goal: 'g', checks: [{ type: 'approval_amount', amount: 5 }] },
    loc: ['body', 'checks', 0, 'amount'],
    type: 'string_type',
  },
  {
    schema: 'DecideRequest',
    name: 'unknown chain',
    body: {
      goal: 'g',
      checks: [{ type: 'contract_verified', chain: 'mars', contract_address: `0x${'1'.repeat(40)}` }],
    },
    loc: ['body', 'checks', 0, 'chain'],
    type: 'enum',
  },
  {
    schema: 'DecideRequest',
    name: 'second check wrong',
    body: {
      goal: 'g',
      checks: [
        { type: 'approval_amount', amount: '1' },
        { type: 'http', url: 'x' },
      ],
    },
    loc: ['body', 'checks', 1, 'url'],
    type: 'url_parsing',
  },
  {
    schema: 'DecideRequest',
    name: 'too many checks',
    body: { goal: 'g', checks: Array.from({ length: 21 }, () => ({ type: 'approval_amount', amount: '1' })) },
    loc: ['body', 'checks'],
    type: 'too_long',
  },
  {
    schema: 'DecideRequest',
    name: 'deadline above max',
    body: { goal: 'g', context: { deadline_ms: 60000 } },
    loc: ['body', 'context', 'deadline_ms'],
    type: 'less_than_equal',
  },
  { schema: 'GuardRequest', name: 'no action', body: {}, loc: ['body', 'action'], type: 'missing' },
  {
    schema: 'GuardRequest',
    name: 'unknown action',
    body: { action: 'fly' },
    loc: ['body', 'action'],
    type: 'enum',
    msg: /'swap'.*'contract_call'/,
  },
  {
    schema: 'GuardRequest',
    name: 'strict as string',
    body: { action: 'swap', strict_mode: 'true' },
    loc: ['body', 'strict_mode'],
    type: 'bool_type',
  },
  {
    schema: 'GuardRequest',
    name: 'bad rpc url',
    body: { action: 'swap', rpc_url: 'nope' },
    loc: ['body', 'rpc_url'],
    type: 'url_parsing',
  },
  {
    schema: 'GuardRequest',
    name: 'amount as string',
    body: { action: 'swap', amount_usd: '100' },
    loc: ['body', 'amount_usd'],
    type: 'float_type',
  },
  {
    schema: 'GuardRequest',
    name: 'approval words',
    body: { action: 'approve', approval_amount: 'max' },
    loc: ['body', 'approval_amount'],
    type: 'string_pattern_mismatch',
  },
  { schema: 'ApiKeySignupRequest', name: 'no email', body: {}, loc: ['body', 'email'], type: 'missing' },
  {
    schema: 'ApiKeySignupRequest',
    name: 'bad email',
    body: { email: 'not-an-email' },
    loc: ['body', 'email'],
    type: 'value_error',
  },
  {
    schema: 'ApiKeySignupRequest',
    name: 'bad plan',
    body: { email: 'a@example.com', requested_plan: 'Gold' },
    loc: ['body', 'requested_plan'],
    type: 'enum',
  },
  {
    schema: 'StablecoinIntelligenceRequest',
    name: 'asset ids not a list',
    body: { asset_ids: 'usd-coin' },
    loc: ['body', 'asset_ids'],
    type: 'list_type',
  },
  { schema: 'BridgeRiskRequest', name: 'no urls', body: {}, loc: ['body', 'bridge_status_urls'], type: 'missing' },
  {
    schema: 'BridgeRiskRequest',
    name: 'bad url',
    body: { bridge_status_urls: ['x'] },
    loc: ['body', 'bridge_status_urls', 0],
    type: 'url_parsing',
  },
  { schema: 'YieldRoutingRequest', name: 'no options', body: {}, loc: ['body', 'options'], type: 'missing' },
  {
    schema: 'YieldRoutingRequest',
    name: 'option without apy',
    body: { options: [{ name: 'a' }] },
    loc: ['body', 'options', 0, 'apy'],
    type: 'missing',
  },
  {
    schema: 'YieldRoutingRequest',
    name: 'risk above 100',
    body: { options: [{ name: 'a', apy: 1, risk_score: 101 }] },
    loc: ['body', 'options', 0, 'risk_score'],
    type: 'less_than_equal',
  },
];

t.test('valid bodies pass and get their defaults', async (t) => {
  for (const c of valid) {
    const body = structuredClone(c.body);
    const fn = validator(c.schema);
    t.ok(fn(body), `${c.schema}: ${c.name}`, { errors: fn.errors });
    t.match(body, c.expect, `${c.schema}: ${c.name} defaults`);
  }
});

t.test('invalid bodies: exact loc and type', async (t) => {
  for (const c of invalid) {
    const fn = validator(c.schema);
    t.notOk(fn(structuredClone(c.body)), `${c.schema}: ${c.name} is rejected`);
    const detail = toValidationDetail(fn.errors ?? []);
    const hit = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(c.loc) && d.type === c.type);
    t.ok(hit, `${c.schema}: ${c.name} → ${JSON.stringify(c.loc)} ${c.type}`, { detail });
    if (hit && c.msg) t.match(hit.msg, c.msg, `${c.name}: message`);
    for (const d of detail) t.ok(d.msg.length > 10 && /^[A-Z]|^value/.test(d.msg), `${c.name}: a sentence (${d.msg})`);
  }
});

t.test('one detail entry per problem', async (t) => {
  const fn = validator('DecideRequest');
  t.notOk(fn({ goal: 1, allow_decide_on_partial: 'no', checks: [{ type: 'http' }, { type: 'price' }] }));
  const detail = toValidationDetail(fn.errors ?? []);
  t.same(
    detail.map((d) => [d.loc.join('.'), d.type]).sort(),
    [
      ['body.goal', 'string_type'],
      ['body.allow_decide_on_partial', 'bool_type'],
      ['body.checks.0.url', 'missing'],
      ['body.checks.1.asset_id', 'missing'],
    ].sort(),
  );
});

t.test('the ten check types come from the schema', async (t) => {
  t.same(CHECK_TYPES, [
    'http',
    'rpc',
    'price',
    'tx',
    'dex_price',
    'stablecoin_depeg',
    'bridge_exploit_monitor',
    'rug_pull_risk',
    'approval_amount',
    'contract_verified',
  ]);
});
