import t from 'tap';
import { evaluateRpcHealth } from '../../src/checks/rpc_health.js';
import { evaluateLiquidityDepth } from '../../src/checks/liquidity_depth.js';
import type { LiquidityDepthCheck, RpcHealthCheck } from '../../src/checks/types.js';
import type { DexPairView } from '../../src/checks/dex-pair.js';

const NOW = 1_750_000_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;

t.test('rpc_health: chain id, head age, node errors', async (t) => {
  const base: RpcHealthCheck = { type: 'rpc_health', rpc_url: 'http://127.0.0.1:8545', chain: 'base', chain_id: 8453 };
  const replies = (chainId: number, ageS: number) => [
    { result: hex(chainId) },
    { result: hex(31_000_000) },
    { result: { number: hex(31_000_000), timestamp: hex(NOW / 1000 - ageS) } },
  ];
  const table: Array<{
    name: string;
    check?: Partial<RpcHealthCheck>;
    replies: any[];
    status: string;
    reason: string | null;
    message?: RegExp;
  }> = [
    {
      name: 'right chain, fresh head',
      replies: replies(8453, 2),
      status: 'pass',
      reason: null,
      message: /base \(8453\) has head block 31000000, 2 s old \(limit 60 s\)/,
    },
    { name: 'head at the limit still passes', replies: replies(8453, 60), status: 'pass', reason: null },
    {
      name: 'stale head warns',
      replies: replies(8453, 61),
      status: 'warn',
      reason: 'head_stale',
      message: /from 61 s ago; stale after 60 s/,
    },
    {
      name: 'other chain fails',
      replies: replies(1, 2),
      status: 'fail',
      reason: 'chain_mismatch',
      message: /chain id 1, not base \(8453\)/,
    },
    { name: 'mismatch beats staleness', replies: replies(1, 600), status: 'fail', reason: 'chain_mismatch' },
    {
      name: 'chain without an id: reported, not compared',
      check: { chain: 'solana', chain_id: null },
      replies: replies(1, 2),
      status: 'pass',
      reason: null,
      message: /chain id 1 \(solana has no known id/,
    },
    {
      name: 'JSON-RPC error fails',
      replies: [
        { error: { code: -32601, message: 'the method eth_chainId does not exist' } },
        { result: '0x1' },
        { result: null },
      ],
      status: 'fail',
      reason: 'rpc_error',
    },
    {
      name: 'rate limit is an error',
      replies: [{ result: '0x2105' }, { error: { code: -32016, message: 'over rate limit' } }, { result: null }],
      status: 'error',
      reason: 'upstream_rate_limited',
    },
    {
      name: 'no latest block is an error',
      replies: [{ result: '0x2105' }, { result: '0x10' }, { result: null }],
      status: 'error',
      reason: 'upstream_bad_response',
    },
  ];
  for (const c of table) {
    const out = evaluateRpcHealth({ ...base, ...c.check }, c.replies, NOW, 60, '127.0.0.1:8545');
    t.equal(out.status, c.status, `${c.name}: status`);
    t.equal(out.reason, c.reason, `${c.name}: reason`);
    if (c.message) t.match(out.message, c.message, `${c.name}: message`);
  }
  const ok = evaluateRpcHealth(base, replies(8453, 5), NOW, 60, 'h');
  t.same(ok.observed, { chain_id: 8453, head_block: 31_000_000, head_age_s: 5, head_timestamp: NOW / 1000 - 5 });
  t.same(ok.expected, { chain_id: 8453, max_head_age_s: 60 });
  t.equal(ok.ttl_s, 10);
});

t.test('liquidity_depth: price impact tiers and the liquidity floor', async (t) => {
  const check = (amount: number | null): LiquidityDepthCheck => ({
    type: 'liquidity_depth',
    chain: 'base',
    pair_address: '0xpair',
    amount_usd: amount,
    impact_pass_pct: 0.01,
    impact_warn_pct: 0.03,
    min_liquidity_usd: 50_000,
  });
  const pair = (liquidityUsd: number | null): DexPairView => ({
    priceUsd: 1,
    liquidityUsd,
    volumeH24: 1,
    buysH24: 1,
    sellsH24: 1,
    fdv: 1,
    pairCreatedAt: null,
    baseSymbol: 'WETH',
    quoteSymbol: 'USDC',
    url: null,
  });
  const table: Array<{
    name: string;
    amount: number | null;
    liquidity: number | null;
    status: string;
    reason: string | null;
    impact?: number | null;
    message?: RegExp;
  }> = [
    {
      name: '1 % exactly passes',
      amount: 10_000,
      liquidity: 1_000_000,
      status: 'pass',
      reason: null,
      impact: 0.01,
      message: /\$10,000 into WETH\/USDC with \$1,000,000 of liquidity is an estimated 1% price impact/,
    },
    {
      name: '2 % warns',
      amount: 20_000,
      liquidity: 1_000_000,
      status: 'warn',
      reason: 'price_impact_high',
      impact: 0.02,
    },
    {
      name: '3 % exactly warns',
      amount: 30_000,
      liquidity: 1_000_000,
      status: 'warn',
      reason: 'price_impact_high',
      impact: 0.03,
    },
    {
      name: '3.1 % fails',
      amount: 31_000,
      liquidity: 1_000_000,
      status: 'fail',
      reason: 'price_impact_too_high',
      impact: 0.031,
      message: /block above 3%/,
    },
    {
      name: 'thin pool fails whatever the amount',
      amount: 10,
      liquidity: 49_999,
      status: 'fail',
      reason: 'liquidity_below_min',
      message: /\$49,999 of liquidity, below the minimum \$50,000/,
    },
    {
      name: 'no amount: liquidity only',
      amount: null,
      liquidity: 60_000,
      status: 'pass',
      reason: null,
      impact: null,
      message: /no amount_usd/,
    },
    { name: 'no amount, thin pool', amount: null, liquidity: 1_000, status: 'fail', reason: 'liquidity_below_min' },
    { name: 'liquidity missing upstream', amount: 10, liquidity: null, status: 'error', reason: 'field_missing' },
  ];
  for (const c of table) {
    const out = evaluateLiquidityDepth(check(c.amount), pair(c.liquidity));
    t.equal(out.status, c.status, `${c.name}: status`);
    t.equal(out.reason, c.reason, `${c.name}: reason`);
    if (c.impact !== undefined) t.equal((out.observed as any).price_impact_pct, c.impact, `${c.name}: impact`);
    if (c.message) t.match(out.message, c.message, `${c.name}: message`);
  }
  const missing = evaluateLiquidityDepth(check(10), null);
  t.equal(missing.status, 'fail');
  t.equal(missing.reason, 'pair_not_found');
});
