/** docs/rules.md §3 as a table: results in, verdict, risk, confidence, expiry and failure modes out. */
import t from 'tap';
import { judge, DEFAULT_POLICY, type JudgePolicy } from '../../src/engine/judge.js';
import type { CheckResult } from '../../src/checks/types.js';
import type { CheckStatus } from '../../src/wire.js';

function r(name: string, status: CheckStatus, extra: Partial<CheckResult> = {}): CheckResult {
  return {
    name,
    type: name.replace(/\[.*$/, ''),
    status,
    reason: status === 'pass' ? null : (extra.reason ?? `${name}_${status}`),
    message: 'm',
    source: null,
    latency_ms: 1,
    cached: false,
    age_s: 0,
    ttl_s: 30,
    ...extra,
  };
}

interface Row {
  name: string;
  results: CheckResult[];
  policy?: JudgePolicy;
  verdict: string;
  risk: string;
  confidence: [number, number];
  expires_in?: number;
  failure_modes?: string[];
  retry_after_s?: number | null;
}

const rows: Row[] = [
  {
    name: 'all pass, fresh',
    results: [r('price', 'pass'), r('http', 'pass', { ttl_s: 60 })],
    verdict: 'proceed',
    risk: 'low',
    confidence: [0.9, 1],
    expires_in: 30,
    failure_modes: [],
  },
  {
    name: 'any fail blocks',
    results: [r('price', 'fail', { reason: 'price_above_max' }), r('http', 'pass'), r('rpc', 'warn', { reason: 'x' })],
    verdict: 'block',
    risk: 'high',
    confidence: [0.9, 1],
    failure_modes: ['price:price_above_max', 'rpc:x'],
  },
  {
    name: 'fail with an error still blocks, explicit breach ≥ 0.9',
    results: [
      r('price', 'fail', { reason: 'price_below_min' }),
      r('dex_price', 'error', { reason: 'upstream_timeout', ttl_s: 0 }),
    ],
    verdict: 'block',
    risk: 'high',
    confidence: [0.9, 0.96],
  },
  {
    name: 'heuristic-only block is less certain',
    results: [
      r('rug_pull_risk', 'fail', {
        reason: 'rug_risk_high',
        observed: { signals: ['pair_too_young', 'fdv_liquidity_ratio_high'] },
        basis: 'heuristic',
        components: ['pair_too_young', 'fdv_liquidity_ratio_high'],
        ttl_s: 60,
      }),
    ],
    verdict: 'block',
    risk: 'high',
    confidence: [0.6, 0.85],
    expires_in: 60,
    failure_modes: [
      'rug_pull_risk:rug_risk_high',
      'rug_pull_risk:pair_too_young',
      'rug_pull_risk:fdv_liquidity_ratio_high',
    ],
  },
  {
    name: 'warn waits',
    results: [r('tx', 'warn', { reason: 'tx_pending', ttl_s: 5 }), r('price', 'pass')],
    verdict: 'wait',
    risk: 'medium',
    confidence: [0.5, 0.85],
    expires_in: 5,
    retry_after_s: 5,
  },
  {
    name: 'error waits without partial',
    results: [
      r('price', 'pass'),
      r('http', 'error', { reason: 'upstream_timeout', ttl_s: 0, retry_after_s: 3 } as Partial<CheckResult>),
    ],
    verdict: 'wait',
    risk: 'medium',
    confidence: [0.4, 0.6],
    retry_after_s: 3,
    failure_modes: ['http:upstream_timeout'],
  },
  {
    name: 'error with partial and a pass proceeds, medium',
    results: [r('price', 'pass'), r('http', 'error', { reason: 'upstream_timeout', ttl_s: 0 })],
    policy: { allowPartial: true, warnVerdict: 'wait' },
    verdict: 'proceed',
    risk: 'medium',
    confidence: [0.4, 0.6],
    expires_in: 30,
  },
  {
    name: 'partial with only errors waits',
    results: [r('http', 'error', { ttl_s: 0 })],
    policy: { allowPartial: true, warnVerdict: 'wait' },
    verdict: 'wait',
    risk: 'medium',
    confidence: [0, 0],
  },
  {
    name: 'nothing evaluated',
    results: [],
    verdict: 'wait',
    risk: 'medium',
    confidence: [0, 0],
    failure_modes: ['no_checks'],
    expires_in: 0,
  },
  {
    name: 'only skipped',
    results: [r('bridge_exploit_monitor', 'skipped', { reason: 'missing_input' })],
    verdict: 'wait',
    risk: 'medium',
    confidence: [0, 0],
    failure_modes: ['bridge_exploit_monitor:missing_input', 'no_checks'],
  },
  {
    name: 'non-strict: warns proceed with medium risk',
    results: [r('price', 'warn'), r('http', 'pass')],
    policy: { allowPartial: true, warnVerdict: 'proceed' },
    verdict: 'proceed',
    risk: 'medium',
    confidence: [0.5, 1],
  },
  {
    name: 'strict high value: warns block',
    results: [r('price', 'warn'), r('http', 'pass')],
    policy: { allowPartial: false, warnVerdict: 'block' },
    verdict: 'block',
    risk: 'high',
    confidence: [0.85, 1],
  },
  {
    name: 'cached results expire by time left',
    results: [r('price', 'pass', { cached: true, age_s: 25, ttl_s: 30 }), r('http', 'pass', { ttl_s: 30 })],
    verdict: 'proceed',
    risk: 'low',
    confidence: [0.9, 1],
    expires_in: 5,
  },
  {
    name: 'every error lowers confidence',
    results: [r('a', 'pass'), r('b', 'pass'), r('c', 'error', { ttl_s: 0 }), r('d', 'error', { ttl_s: 0 })],
    policy: { allowPartial: true, warnVerdict: 'wait' },
    verdict: 'proceed',
    risk: 'medium',
    confidence: [0.45, 0.55],
  },
];

for (const row of rows) {
  t.test(row.name, async (t) => {
    const v = judge(row.results, row.policy ?? DEFAULT_POLICY);
    t.equal(v.verdict, row.verdict, 'verdict');
    t.equal(v.risk, row.risk, 'risk');
    t.ok(
      v.confidence >= row.confidence[0] && v.confidence <= row.confidence[1],
      `confidence ${v.confidence} in [${row.confidence}]`,
    );
    if (row.expires_in !== undefined) t.equal(v.expires_in, row.expires_in, 'expires_in');
    if (row.failure_modes) t.same(v.failure_modes, row.failure_modes, 'failure modes');
    if (row.retry_after_s !== undefined) t.equal(v.retry_after_s, row.retry_after_s, 'retry_after_s');
    t.equal(v.retry_after_s !== undefined, v.verdict === 'wait', 'a wait carries retry_after_s, nothing else does');
    t.ok(Number.isInteger(v.expires_in) && v.expires_in >= 0, 'expires_in is whole seconds');
  });
}

t.test('an error never becomes a pass', async (t) => {
  for (const policy of [DEFAULT_POLICY, { allowPartial: true, warnVerdict: 'proceed' as const }]) {
    const v = judge([r('x', 'error', { ttl_s: 0 })], policy);
    t.not(v.verdict, 'proceed');
  }
});
