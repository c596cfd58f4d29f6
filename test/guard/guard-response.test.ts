import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { GuardRequest as validateGuard, DecideResponse as validateResponse } from '../../src/generated/validators.js';
import type { GuardRequest } from '../../src/generated/types.js';
import type { CheckResult } from '../../src/checks/types.js';
import type { CheckStatus } from '../../src/wire.js';
import { planGuard } from '../../src/guard/plan.js';
import { guardResponse } from '../../src/guard/guard-response.js';

const PAIR = '0x88a43bbdf9d098eec7bceda4e2494615dfd9bb9c';
const TX = `0x${'ab'.repeat(32)}`;
const ADDR = `0x${'12'.repeat(20)}`;
const bare = loadConfig({});
const operator = loadConfig({
  RPC_URLS: 'base=http://127.0.0.1:8545',
  BRIDGE_STATUS_URLS: 'https://a.example/status,https://b.example/status',
});

function req(body: Record<string, unknown>): GuardRequest {
  const copy = structuredClone(body);
  if (!validateGuard(copy)) throw new Error(`invalid body ${JSON.stringify(body)}`);
  return copy as unknown as GuardRequest;
}

/** What the engine would answer: `status` or `status:reason` per evidence name; pass by default. */
function engineResults(
  planned: Array<{ name: string; check: { type: string } }>,
  outcomes: Record<string, string>,
): CheckResult[] {
  return planned.map((p) => {
    const [status, reason] = (outcomes[p.name] ?? 'pass').split(':') as [CheckStatus, string | undefined];
    return {
      name: p.name,
      type: p.check.type,
      status,
      reason: status === 'pass' ? null : (reason ?? status),
      message: `${p.name} observed 42 against a limit of 7.`,
      source: 'emulated',
      latency_ms: 3,
      cached: false,
      age_s: 0,
      ttl_s: status === 'error' ? 0 : 30,
      ...(status === 'error' ? { retry_after_s: 2 } : {}),
    };
  });
}

interface Scenario {
  name: string;
  body: Record<string, unknown>;
  config?: typeof bare;
  outcomes?: Record<string, string>;
  verdict: 'proceed' | 'wait' | 'block';
  risk: 'low' | 'medium' | 'high';
  checks: Record<string, CheckStatus>;
  failure_modes: string[];
}

const SWAP_ALL = {
  rpc_health: 'pass',
  price_deviation: 'pass',
  liquidity_depth: 'pass',
  rug_pull_risk: 'pass',
} as const;
const scenarios: Scenario[] = [
  // swap
  {
    name: 'swap, published example, nothing configured',
    body: { action: 'swap', chain: 'base', amount_usd: 100, strict_mode: true },
    verdict: 'proceed',
    risk: 'low',
    checks: { rpc_health: 'skipped', price_deviation: 'pass', liquidity_depth: 'skipped', rug_pull_risk: 'skipped' },
    failure_modes: [],
  },
  {
    name: 'swap, every input given, all pass',
    body: { action: 'swap', pair_address: PAIR, amount_usd: 500 },
    config: operator,
    verdict: 'proceed',
    risk: 'low',
    checks: SWAP_ALL,
    failure_modes: [],
  },
  {
    name: 'swap, price impact warns, strict',
    body: { action: 'swap', pair_address: PAIR, amount_usd: 5000 },
    config: operator,
    outcomes: { liquidity_depth: 'warn:price_impact_high' },
    verdict: 'wait',
    risk: 'medium',
    checks: { ...SWAP_ALL, liquidity_depth: 'warn' },
    failure_modes: ['liquidity_depth:price_impact_high'],
  },
  {
    name: 'swap, price impact warns, strict, high value',
    body: { action: 'swap', pair_address: PAIR, amount_usd: 25_000 },
    config: operator,
    outcomes: { liquidity_depth: 'warn:price_impact_high' },
    verdict: 'block',
    risk: 'high',
    checks: { ...SWAP_ALL, liquidity_depth: 'warn' },
    failure_modes: ['liquidity_depth:price_impact_high'],
  },
  {
    name: 'swap, price impact warns, non-strict, high value',
    body: { action: 'swap', pair_address: PAIR, amount_usd: 25_000, strict_mode: false },
    config: operator,
    outcomes: { liquidity_depth: 'warn:price_impact_high' },
    verdict: 'proceed',
    risk: 'medium',
    checks: { ...SWAP_ALL, liquidity_depth: 'warn' },
    failure_modes: ['liquidity_depth:price_impact_high'],
  },
  // transfer
  {
    name: 'transfer, stablecoin depegged',
    body: { action: 'transfer', amount_usd: 50 },
    outcomes: { price_deviation: 'fail:depegged' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'skipped', price_deviation: 'fail', liquidity_depth: 'skipped' },
    failure_modes: ['price_deviation:depegged'],
  },
  {
    name: 'transfer, peg warning at exactly 10,000 blocks',
    body: { action: 'transfer', amount_usd: 10_000 },
    outcomes: { price_deviation: 'warn:depeg_warning' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'skipped', price_deviation: 'warn', liquidity_depth: 'skipped' },
    failure_modes: ['price_deviation:depeg_warning'],
  },
  {
    name: 'transfer, peg warning just under 10,000 waits',
    body: { action: 'transfer', amount_usd: 9_999.99 },
    outcomes: { price_deviation: 'warn:depeg_warning' },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'skipped', price_deviation: 'warn', liquidity_depth: 'skipped' },
    failure_modes: ['price_deviation:depeg_warning'],
  },
  // bridge
  {
    name: 'bridge, no status URL, strict',
    body: { action: 'bridge', amount_usd: 100 },
    verdict: 'wait',
    risk: 'medium',
    checks: {
      rpc_health: 'skipped',
      price_deviation: 'pass',
      liquidity_depth: 'skipped',
      bridge_exploit_monitor: 'warn',
    },
    failure_modes: ['bridge_exploit_monitor:missing_input'],
  },
  {
    name: 'bridge, no status URL, strict, high value',
    body: { action: 'bridge', amount_usd: 50_000 },
    verdict: 'block',
    risk: 'high',
    checks: {
      rpc_health: 'skipped',
      price_deviation: 'pass',
      liquidity_depth: 'skipped',
      bridge_exploit_monitor: 'warn',
    },
    failure_modes: ['bridge_exploit_monitor:missing_input'],
  },
  {
    name: 'bridge, no status URL, non-strict',
    body: { action: 'bridge', amount_usd: 50_000, strict_mode: false },
    verdict: 'proceed',
    risk: 'low',
    checks: {
      rpc_health: 'skipped',
      price_deviation: 'pass',
      liquidity_depth: 'skipped',
      bridge_exploit_monitor: 'skipped',
    },
    failure_modes: ['bridge_exploit_monitor:missing_input'],
  },
  {
    name: 'bridge, operator pages, one mentions an exploit',
    body: { action: 'bridge' },
    config: operator,
    outcomes: { 'bridge_exploit_monitor[1]': 'fail:danger_keyword' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'pass', price_deviation: 'pass', liquidity_depth: 'skipped', bridge_exploit_monitor: 'fail' },
    failure_modes: ['bridge_exploit_monitor[1]:danger_keyword'],
  },
  {
    name: 'bridge, request page and RPC, all pass',
    body: { action: 'bridge', bridge_status_url: 'https://status.example/', rpc_url: 'https://rpc.example/' },
    verdict: 'proceed',
    risk: 'low',
    checks: { rpc_health: 'pass', price_deviation: 'pass', liquidity_depth: 'skipped', bridge_exploit_monitor: 'pass' },
    failure_modes: [],
  },
  // yield_deposit
  {
    name: 'yield_deposit, RPC times out, strict',
    body: { action: 'yield_deposit', rpc_url: 'https://rpc.example/' },
    outcomes: { rpc_health: 'error:upstream_timeout' },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'error', price_deviation: 'pass', liquidity_depth: 'skipped' },
    failure_modes: ['rpc_health:upstream_timeout'],
  },
  {
    name: 'yield_deposit, RPC times out, non-strict',
    body: { action: 'yield_deposit', rpc_url: 'https://rpc.example/', strict_mode: false },
    outcomes: { rpc_health: 'error:upstream_timeout' },
    verdict: 'proceed',
    risk: 'medium',
    checks: { rpc_health: 'error', price_deviation: 'pass', liquidity_depth: 'skipped' },
    failure_modes: ['rpc_health:upstream_timeout'],
  },
  {
    name: 'yield_deposit, stale head warns',
    body: { action: 'yield_deposit', rpc_url: 'https://rpc.example/' },
    outcomes: { rpc_health: 'warn:head_stale' },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'warn', price_deviation: 'pass', liquidity_depth: 'skipped' },
    failure_modes: ['rpc_health:head_stale'],
  },
  // generic
  {
    name: 'generic, only check errors, non-strict',
    body: { action: 'generic', strict_mode: false },
    outcomes: { price_deviation: 'error:upstream_rate_limited' },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'skipped', price_deviation: 'error', liquidity_depth: 'skipped' },
    failure_modes: ['price_deviation:upstream_rate_limited'],
  },
  {
    name: 'generic, chain mismatch',
    body: { action: 'generic', chain: 'ethereum', rpc_url: 'https://rpc.example/' },
    outcomes: { rpc_health: 'fail:chain_mismatch' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'fail', price_deviation: 'pass', liquidity_depth: 'skipped' },
    failure_modes: ['rpc_health:chain_mismatch'],
  },
  // approve
  {
    name: 'approve, no amount, strict',
    body: { action: 'approve' },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'skipped', approval_amount: 'warn' },
    failure_modes: ['approval_amount:missing_input'],
  },
  {
    name: 'approve, no amount, non-strict: nothing evaluated',
    body: { action: 'approve', strict_mode: false },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'skipped', approval_amount: 'skipped' },
    failure_modes: ['approval_amount:missing_input', 'no_checks'],
  },
  {
    name: 'approve, unlimited to a verified contract',
    body: {
      action: 'approve',
      approval_amount: '0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
      spender: ADDR,
    },
    outcomes: { approval_amount: 'fail:unlimited_approval' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'skipped', approval_amount: 'fail', contract_verified: 'pass', counterparty_screen: 'pass' },
    failure_modes: ['approval_amount:unlimited_approval'],
  },
  {
    name: 'approve, spender is not an address',
    body: { action: 'approve', approval_amount: '1000', spender: 'uniswap-router' },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'skipped', approval_amount: 'pass', contract_verified: 'error' },
    failure_modes: ['contract_verified:invalid_input'],
  },
  // mint
  {
    name: 'mint, tx pending, strict, high value',
    body: { action: 'mint', tx_hash: TX, rpc_url: 'https://rpc.example/', amount_usd: 20_000 },
    outcomes: { tx_confirmation: 'warn:tx_pending' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'pass', price_deviation: 'pass', liquidity_depth: 'skipped', tx_confirmation: 'warn' },
    failure_modes: ['tx_confirmation:tx_pending'],
  },
  {
    name: 'mint, tx reverted',
    body: { action: 'mint', tx_hash: TX, rpc_url: 'https://rpc.example/' },
    outcomes: { tx_confirmation: 'fail:tx_reverted' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'pass', price_deviation: 'pass', liquidity_depth: 'skipped', tx_confirmation: 'fail' },
    failure_modes: ['tx_confirmation:tx_reverted'],
  },
  // stake
  {
    name: 'stake, tx hash but no RPC, strict',
    body: { action: 'stake', tx_hash: TX },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'skipped', price_deviation: 'pass', liquidity_depth: 'skipped', tx_confirmation: 'warn' },
    failure_modes: ['tx_confirmation:missing_input'],
  },
  {
    name: 'stake, tx hash but no RPC, non-strict',
    body: { action: 'stake', tx_hash: TX, strict_mode: false },
    verdict: 'proceed',
    risk: 'low',
    checks: { rpc_health: 'skipped', price_deviation: 'pass', liquidity_depth: 'skipped', tx_confirmation: 'skipped' },
    failure_modes: ['tx_confirmation:missing_input'],
  },
  // add_liquidity
  {
    name: 'add_liquidity, rug signals',
    body: { action: 'add_liquidity', pair_address: PAIR },
    outcomes: { rug_pull_risk: 'fail:rug_risk_high' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'skipped', price_deviation: 'pass', liquidity_depth: 'pass', rug_pull_risk: 'fail' },
    failure_modes: ['rug_pull_risk:rug_risk_high'],
  },
  {
    name: 'add_liquidity, pool too thin',
    body: { action: 'add_liquidity', pair_address: PAIR, amount_usd: 1000 },
    outcomes: { liquidity_depth: 'fail:liquidity_below_min', rug_pull_risk: 'fail:liquidity_below_min' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'skipped', price_deviation: 'pass', liquidity_depth: 'fail', rug_pull_risk: 'fail' },
    failure_modes: ['liquidity_depth:liquidity_below_min', 'rug_pull_risk:liquidity_below_min'],
  },
  // contract_call
  {
    name: 'contract_call, not verified',
    body: { action: 'contract_call', contract_address: ADDR },
    outcomes: { contract_verified: 'fail:not_verified' },
    verdict: 'block',
    risk: 'high',
    checks: { rpc_health: 'skipped', contract_verified: 'fail', counterparty_screen: 'pass' },
    failure_modes: ['contract_verified:not_verified'],
  },
  {
    name: 'contract_call, nothing to check',
    body: { action: 'contract_call' },
    verdict: 'wait',
    risk: 'medium',
    checks: { rpc_health: 'skipped' },
    failure_modes: ['no_checks'],
  },
  {
    name: 'contract_call, verified, operator RPC',
    body: { action: 'contract_call', contract_address: ADDR },
    config: operator,
    verdict: 'proceed',
    risk: 'low',
    checks: { rpc_health: 'pass', contract_verified: 'pass', counterparty_screen: 'pass' },
    failure_modes: [],
  },
];

t.test('guard scenarios: verdict, risk, checks map, failure modes', async (t) => {
  const actions = new Set<string>();
  for (const s of scenarios) {
    const r = req(s.body);
    actions.add(r.action);
    const plan = planGuard(r, s.config ?? bare);
    const res = guardResponse(r, plan, engineResults(plan.planned, s.outcomes ?? {}), {
      requestId: 'req-1',
      deadlineMs: 250,
      latencyMs: 12.4,
    });
    t.equal(res.verdict, s.verdict, `${s.name}: verdict`);
    t.equal(res.risk, s.risk, `${s.name}: risk`);
    t.same(res.checks, s.checks, `${s.name}: checks`);
    t.same(res.failure_modes, s.failure_modes, `${s.name}: failure modes`);
    t.ok(validateResponse(res), `${s.name}: matches DecideResponse`);
    t.equal(res.latency_ms, 12);
  }
  t.equal(actions.size, 10, 'every action value is covered');
});

t.test('evidence is named after the plan entry with the underlying type, in plan order', async (t) => {
  const r = req({ action: 'swap', pair_address: PAIR, amount_usd: 500 });
  const plan = planGuard(r, operator);
  const res = guardResponse(r, plan, engineResults(plan.planned, {}), {
    requestId: 'req-2',
    deadlineMs: 250,
    latencyMs: 5,
  });
  t.same(
    res.evidence.map((e) => [e.name, e.type]),
    [
      ['rpc_health', 'rpc_health'],
      ['price_deviation', 'stablecoin_depeg'],
      ['liquidity_depth', 'liquidity_depth'],
      ['rug_pull_risk', 'rug_pull_risk'],
    ],
  );
  const missing = planGuard(req({ action: 'bridge' }), bare);
  const out = guardResponse(req({ action: 'bridge' }), missing, engineResults(missing.planned, {}), {
    requestId: 'req-3',
    deadlineMs: 250,
    latencyMs: 5,
  });
  t.same(
    out.evidence.map((e) => e.name),
    ['rpc_health', 'price_deviation', 'liquidity_depth', 'bridge_exploit_monitor'],
  );
  t.match(out.evidence[3], {
    type: 'bridge_exploit_monitor',
    status: 'warn',
    reason: 'missing_input',
    observed: { inputs: ['bridge_status_url', 'BRIDGE_STATUS_URLS'] },
  });
});

t.test('decision, reasoning and expiry', async (t) => {
  const r = req({ action: 'swap', pair_address: PAIR, amount_usd: 25_000 });
  const plan = planGuard(r, operator);
  const res = guardResponse(r, plan, engineResults(plan.planned, { liquidity_depth: 'warn:price_impact_high' }), {
    requestId: 'req-4',
    deadlineMs: 400,
    latencyMs: 33,
  });
  t.match(res.decision, {
    verdict: 'block',
    request_id: 'req-4',
    action: 'swap',
    chain: 'base',
    amount_usd: 25_000,
    strict_mode: true,
    high_value_tier: true,
    deadline_ms: 400,
  });
  t.match(
    res.reasoning,
    /^Block on swap of \$25,000 on base, strict mode; at \$10,000 or more every warning blocks\. liquidity_depth warn: liquidity_depth observed 42 against a limit of 7\./,
  );
  t.match(res.reasoning, /rpc_health pass: rpc_health observed 42/);
  t.equal(res.expires_in, 30);
  t.ok(res.confidence >= 0 && res.confidence <= 1);
  const wait = guardResponse(
    req({ action: 'bridge' }),
    planGuard(req({ action: 'bridge' }), bare),
    engineResults(planGuard(req({ action: 'bridge' }), bare).planned, {}),
    { requestId: 'req-5', deadlineMs: 250, latencyMs: 1 },
  );
  t.type(wait.decision.retry_after_s, 'number', 'a wait carries retry_after_s');
  t.match(wait.reasoning, /bridge_exploit_monitor warn: A bridge needs a status page/);
});
