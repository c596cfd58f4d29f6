import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { GuardRequest as validateGuard } from '../../src/generated/validators.js';
import type { GuardRequest } from '../../src/generated/types.js';
import { planGuard, type GuardPlan } from '../../src/guard/plan.js';

const PAIR = '0x88a43bbdf9d098eec7bceda4e2494615dfd9bb9c';
const TX = `0x${'ab'.repeat(32)}`;
const ADDR = `0x${'12'.repeat(20)}`;

const bare = loadConfig({});
const operator = loadConfig({
  RPC_URLS: 'base=http://127.0.0.1:8545',
  BRIDGE_STATUS_URLS: 'https://status.bridge-a.example/api/v2/status.json,https://status.bridge-b.example/',
});

/** A request as the validator leaves it: defaults applied. */
function req(body: Record<string, unknown>): GuardRequest {
  const copy = structuredClone(body);
  if (!validateGuard(copy)) throw new Error(`invalid test body ${JSON.stringify(body)}`);
  return copy as unknown as GuardRequest;
}

/** entry → 'run' | unresolved kind, in plan order. */
function shape(plan: GuardPlan): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of plan.entries) {
    const u = plan.unresolved.find((x) => x.entry === e);
    out[e] = u ? u.kind : 'run';
  }
  return out;
}

const cases: Array<{
  name: string;
  body: Record<string, unknown>;
  config?: typeof bare;
  want: Record<string, string>;
}> = [
  {
    name: 'published example, nothing configured',
    body: { action: 'swap', chain: 'base', amount_usd: 100 },
    want: { rpc_health: 'skipped', price_deviation: 'run', liquidity_depth: 'skipped', rug_pull_risk: 'skipped' },
  },
  {
    name: 'swap with pair and operator RPC',
    body: { action: 'swap', chain: 'base', pair_address: PAIR, amount_usd: 100 },
    config: operator,
    want: { rpc_health: 'run', price_deviation: 'run', liquidity_depth: 'run', rug_pull_risk: 'run' },
  },
  {
    name: 'transfer',
    body: { action: 'transfer' },
    want: { rpc_health: 'skipped', price_deviation: 'run', liquidity_depth: 'skipped' },
  },
  {
    name: 'bridge without status URL',
    body: { action: 'bridge' },
    want: {
      rpc_health: 'skipped',
      price_deviation: 'run',
      liquidity_depth: 'skipped',
      bridge_exploit_monitor: 'missing',
    },
  },
  {
    name: 'bridge with operator URLs',
    body: { action: 'bridge' },
    config: operator,
    want: { rpc_health: 'run', price_deviation: 'run', liquidity_depth: 'skipped', bridge_exploit_monitor: 'run' },
  },
  {
    name: 'yield_deposit',
    body: { action: 'yield_deposit', rpc_url: 'https://rpc.example/' },
    want: { rpc_health: 'run', price_deviation: 'run', liquidity_depth: 'skipped' },
  },
  {
    name: 'generic',
    body: { action: 'generic', chain: null },
    want: { rpc_health: 'skipped', price_deviation: 'run', liquidity_depth: 'skipped' },
  },
  {
    name: 'approve without amount',
    body: { action: 'approve' },
    want: { rpc_health: 'skipped', approval_amount: 'missing' },
  },
  {
    name: 'approve with spender',
    body: { action: 'approve', approval_amount: '1000', spender: ADDR },
    want: { rpc_health: 'skipped', approval_amount: 'run', contract_verified: 'run', counterparty_screen: 'run' },
  },
  {
    name: 'approve, spender not an address',
    body: { action: 'approve', approval_amount: '1000', spender: 'uniswap' },
    want: { rpc_health: 'skipped', approval_amount: 'run', contract_verified: 'invalid' },
  },
  {
    name: 'mint with tx and rpc',
    body: { action: 'mint', tx_hash: TX, rpc_url: 'https://rpc.example/' },
    want: { rpc_health: 'run', price_deviation: 'run', liquidity_depth: 'skipped', tx_confirmation: 'run' },
  },
  {
    name: 'stake with tx and no RPC',
    body: { action: 'stake', tx_hash: TX },
    want: { rpc_health: 'skipped', price_deviation: 'run', liquidity_depth: 'skipped', tx_confirmation: 'missing' },
  },
  {
    name: 'add_liquidity with pair',
    body: { action: 'add_liquidity', pair_address: PAIR },
    want: { rpc_health: 'skipped', price_deviation: 'run', liquidity_depth: 'run', rug_pull_risk: 'run' },
  },
  {
    name: 'contract_call with contract',
    body: { action: 'contract_call', contract_address: ADDR },
    want: { rpc_health: 'skipped', contract_verified: 'run', counterparty_screen: 'run' },
  },
  {
    name: 'contract_call on a chain without id',
    body: { action: 'contract_call', chain: 'solana', contract_address: ADDR },
    want: { rpc_health: 'skipped', contract_verified: 'invalid', counterparty_screen: 'run' },
  },
];

t.test('plan per action: entries and what each lacks', async (t) => {
  for (const c of cases) t.same(shape(planGuard(req(c.body), c.config ?? bare)), c.want, c.name);
});

t.test('defaults: chain null is base, stablecoin null is usd-coin, quote usd', async (t) => {
  const plan = planGuard(req({ action: 'swap', chain: null, stablecoin_asset_id: null, pair_address: PAIR }), operator);
  const byName = Object.fromEntries(plan.planned.map((p) => [p.name, p.check]));
  t.same(byName.price_deviation, {
    type: 'stablecoin_depeg',
    asset_id: 'usd-coin',
    quote: 'usd',
    warn_deviation_pct: 0.005,
    block_deviation_pct: 0.02,
  });
  t.same(byName.rpc_health, { type: 'rpc_health', rpc_url: 'http://127.0.0.1:8545', chain: 'base', chain_id: 8453 });
  t.match(byName.liquidity_depth, {
    type: 'liquidity_depth',
    chain: 'base',
    pair_address: PAIR,
    amount_usd: null,
    min_liquidity_usd: 50000,
  });
  t.same(byName.rug_pull_risk, {
    type: 'rug_pull_risk',
    chain: 'base',
    pair_address: PAIR,
    min_liquidity_usd: 50000,
    min_pair_age_minutes: 1440,
    max_fdv_to_liquidity_ratio: 20,
  });
});

t.test('stablecoin_asset_id and the request rpc_url win over defaults and the operator', async (t) => {
  const plan = planGuard(
    req({ action: 'transfer', chain: 'ethereum', stablecoin_asset_id: 'dai', rpc_url: 'https://eth.example/' }),
    loadConfig({ RPC_URLS: 'ethereum=http://127.0.0.1:9999' }),
  );
  const byName = Object.fromEntries(plan.planned.map((p) => [p.name, p.check]));
  t.equal(byName.price_deviation.asset_id, 'dai');
  t.same(byName.rpc_health, { type: 'rpc_health', rpc_url: 'https://eth.example/', chain: 'ethereum', chain_id: 1 });
});

t.test('bridge: the request URL replaces the operator list; several operator URLs are named entry[i]', async (t) => {
  const own = planGuard(req({ action: 'bridge', bridge_status_url: 'https://status.mine.example/' }), operator);
  t.same(
    own.planned.filter((p) => p.entry === 'bridge_exploit_monitor').map((p) => [p.name, p.check.status_url]),
    [['bridge_exploit_monitor', 'https://status.mine.example/']],
  );
  const ops = planGuard(req({ action: 'bridge' }), operator);
  t.same(
    ops.planned.filter((p) => p.entry === 'bridge_exploit_monitor').map((p) => [p.name, p.check.status_url]),
    [
      ['bridge_exploit_monitor[0]', 'https://status.bridge-a.example/api/v2/status.json'],
      ['bridge_exploit_monitor[1]', 'https://status.bridge-b.example'],
    ],
  );
});

t.test('approve: contract_address wins over spender; approval carries spender and safe list', async (t) => {
  const other = `0x${'34'.repeat(20)}`;
  const plan = planGuard(
    req({
      action: 'approve',
      approval_amount: '0xff',
      spender: ADDR,
      contract_address: other,
      known_safe_addresses: [ADDR],
    }),
    bare,
  );
  const byName = Object.fromEntries(plan.planned.map((p) => [p.name, p.check]));
  t.same(byName.approval_amount, {
    type: 'approval_amount',
    amount: '0xff',
    spender: ADDR,
    known_safe_addresses: [ADDR],
  });
  t.same(byName.contract_verified, { type: 'contract_verified', chain: 'base', contract_address: other });
});

t.test('missing inputs name the fields and say what is lacking', async (t) => {
  const bridge = planGuard(req({ action: 'bridge' }), bare).unresolved.find(
    (u) => u.entry === 'bridge_exploit_monitor',
  )!;
  t.same(bridge.inputs, ['bridge_status_url', 'BRIDGE_STATUS_URLS']);
  t.equal(bridge.type, 'bridge_exploit_monitor');
  t.match(bridge.message, /no bridge_status_url/);
  const approve = planGuard(req({ action: 'approve' }), bare).unresolved.find((u) => u.entry === 'approval_amount')!;
  t.same(approve.inputs, ['approval_amount']);
});

t.test('every action plans something and never an entry twice', async (t) => {
  const actions = [
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
  ];
  for (const action of actions) {
    const plan = planGuard(req({ action }), operator);
    t.ok(plan.entries.length > 0, action);
    t.equal(new Set(plan.entries).size, plan.entries.length, `${action}: unique entries`);
  }
});
