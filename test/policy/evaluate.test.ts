/**
 * The evaluation on its own (docs/policies.md §2, §3): the allow and block list semantics, what a
 * signed order and a declared approval show, the order of the reasons, the never-relaxed verdict,
 * and a rolling window's retry. Pure functions, fed evidence shaped as the checks write it.
 */
import t from 'tap';
import { actionFacts } from '../../src/policy/facts.js';
import { compilePolicy, evaluateRules, policyItem } from '../../src/policy/evaluate.js';
import { applyPolicy, type JudgedAnswer } from '../../src/policy/service.js';
import { limitWindows, secondsUntilFits } from '../../src/policy/windows.js';
import type { GuardRequest } from '../../src/generated/types.js';
import type { CheckResult } from '../../src/checks/types.js';
import { bodyJson } from '../../src/http/errors.js';
import { JSON_TEXT } from '../../src/wire.js';

const A = '0x00000000000000000000000000000000000000a1';
const B = '0x00000000000000000000000000000000000000b2';
const SPENDER = '0x00000000000000000000000000000000000000c3';
const ref = { name: 'p', version: 1, hash: `0x${'ab'.repeat(32)}` };

const result = (type: string, observed: unknown, status: CheckResult['status'] = 'pass'): CheckResult => ({
  name: type,
  type,
  status,
  reason: null,
  message: '',
  observed,
  expected: null,
  source: null,
  latency_ms: 0,
  cached: false,
  age_s: 0,
  ttl_s: 60,
});
const sim = (outs: Array<[string, number | null]>, approvals: Array<[string, boolean]> = []) =>
  result('transaction_simulation', {
    asset_changes: outs.map(([to, usd]) => ({ asset: '0xusdc', direction: 'out', counterparty: to, usd, amount: '1' })),
    approval_changes: approvals.map(([spender, unlimited]) => ({ token: '0xusdc', spender, amount: '5', unlimited })),
  });
const txReq = (over: Partial<GuardRequest> = {}): GuardRequest =>
  ({
    action: 'transfer',
    chain: 'base',
    strict_mode: true,
    transaction: { from: A, to: B, value: '0', data: '0x' },
    ...over,
  }) as GuardRequest;

t.test('allow lists need every value listed; block lists any', async (t) => {
  const p = compilePolicy(ref, {
    address_sets: { ok: [A] },
    rules: [
      { id: 'pay', effect: 'allow', match: { recipients: ['$ok'] } },
      { id: 'deny', effect: 'block', match: { recipients: [B] } },
    ],
  });
  const one = evaluateRules(p, actionFacts(txReq(), [sim([[A, 10]])]), 0);
  t.same([one.matchedRule, one.violations], ['pay', []]);
  const both = evaluateRules(
    p,
    actionFacts(txReq(), [
      sim([
        [A, 10],
        [B, 5],
      ]),
    ]),
    0,
  );
  t.same(
    both.violations.map((v) => v.code),
    ['policy_rule_blocked', 'policy_no_rule_matched'],
    'one unlisted recipient: not covered, and the block rule catches it',
  );
  const approval = evaluateRules(p, actionFacts(txReq(), [sim([], [[SPENDER, false]])]), 0);
  t.same(
    approval.violations.map((v) => v.code),
    ['policy_no_rule_matched'],
    'an approval shows no recipient',
  );
});

t.test('an unreadable simulation leaves the rules undecided: value unknown, never a guess', async (t) => {
  const p = compilePolicy(ref, { rules: [{ id: 'pay', effect: 'allow', match: { recipients: [A] } }] });
  const r = evaluateRules(p, actionFacts(txReq(), [result('transaction_simulation', null, 'error')]), 0);
  t.same(
    r.violations.map((v) => [v.code, v.status]),
    [
      ['policy_value_unknown', 'error'],
      ['policy_value_unknown', 'error'],
    ],
  );
});

t.test("a signed order's third parties are its recipients; its gives its outflow", async (t) => {
  const req = {
    action: 'swap',
    chain: 'base',
    typed_data: { domain: { verifyingContract: B } },
  } as unknown as GuardRequest;
  const facts = actionFacts(req, [
    result('signature_scan', {
      kind: 'cow_order',
      third_parties: [SPENDER],
      gives: [{ token: '0xweth' }],
      gives_usd: 250,
    }),
  ]);
  t.same([facts.recipients, facts.tokens, facts.outflowUsd, facts.to], [[SPENDER], ['0xweth'], 250, [B]]);
});

t.test('a declared approve shows its spender and is held to approvals', async (t) => {
  const req = {
    action: 'approve',
    chain: 'base',
    spender: SPENDER,
    approval_amount: (2n ** 256n - 1n).toString(),
    amount_usd: 10,
  } as unknown as GuardRequest;
  const p = compilePolicy(ref, { default: 'allow' });
  t.same(
    evaluateRules(p, actionFacts(req, []), 0).violations.map((v) => v.code),
    ['policy_unlimited_approval'],
  );
  const allowed = compilePolicy(ref, { default: 'allow', approvals: { allow_unlimited: true } });
  t.same(evaluateRules(allowed, actionFacts(req, []), 0).violations, []);
});

t.test('the policy item is never relaxed: a warn waits even when the checks would proceed leniently', async (t) => {
  // applyPolicy changes the answer it is given: each call gets a fresh one.
  const base = (): JudgedAnswer => ({
    verdict: 'proceed',
    risk: 'low',
    confidence: 0.9,
    expires_in: 60,
    decision: { verdict: 'proceed', summary: 'Proceed: fine.', counts: { pass: 1 } },
    evidence: [],
    failure_modes: [],
    checks: {},
  });
  const warn = policyItem({
    policy: ref,
    violations: [{ code: 'policy_limit_exceeded', status: 'warn', limit: 'd', observed: 1, bound: 1, message: 'full' }],
    matchedRule: null,
    limits: [],
    outflowUsd: 1,
    reservedUsd: null,
    retryAfterS: 3600,
    latencyMs: 0,
  });
  const out = applyPolicy(base(), warn, ref, false);
  t.same(
    [out.verdict, out.decision.retry_after_s, out.decision.verdict, out.decision.policy],
    ['wait', 3600, 'wait', ref],
  );
  t.match(out.decision.summary, /^Wait/);
  t.same(
    [out.decision.counts, out.checks, out.failure_modes],
    [{ pass: 1, warn: 1 }, { policy: 'warn' }, ['policy:policy_limit_exceeded']],
  );
  const fail = policyItem({
    policy: ref,
    violations: [
      { code: 'policy_rule_blocked', status: 'fail', rule: 'x', observed: 'x', bound: null, message: 'blocked' },
    ],
    matchedRule: null,
    limits: [],
    outflowUsd: 1,
    reservedUsd: null,
    latencyMs: 0,
  });
  t.equal(applyPolicy(base(), fail, ref, true).verdict, 'block');
  t.equal(applyPolicy(base(), fail, ref, true).decision.dry_run, true);
});

t.test("a rolling window's retry: when enough of its oldest buckets have aged out", async (t) => {
  const now = 10_000_000;
  const limit = { id: 'r', window: { rolling_s: 100 }, max_usd: 100 } as const;
  const [lw] = limitWindows([limit], now);
  t.equal(lw.step, 1000, 'a hundredth of 100 s');
  const buckets = [
    { bucket: now - 90_000, usd: 60, n: 1 },
    { bucket: now - 10_000, usd: 30, n: 1 },
  ];
  // 90 used; 30 more fits once the 60 of the oldest bucket ages out: 90 s ago + 1 s bucket + 100 s window.
  t.equal(secondsUntilFits(limit, lw, buckets, 30, now), 11);
  t.equal(secondsUntilFits({ id: 'd', window: 'day', max_usd: 1 }, lw, [], 5, Date.UTC(2026, 0, 1, 23, 0, 0)), 3600);
});

t.test("the policy item's own JSON text is JSON.stringify's, or none", async (t) => {
  const frozen = Object.freeze({ name: 'pay "ops" \\ team\u2028', version: 3, hash: `0x${'cd'.repeat(32)}` });
  const limits = [
    { id: 'daily', used_usd: 123456.78, count: 0, max_usd: 1e15, max_count: null },
    { id: 'hourly \u0001 count', used_usd: 0.1 + 0.2, count: 5123, max_usd: null, max_count: 1e21 },
  ];
  const inputs: Array<[string, Parameters<typeof policyItem>[0]]> = [
    [
      'a pass with two limits and a reservation',
      {
        policy: frozen,
        violations: [],
        matchedRule: 'swaps',
        limits,
        outflowUsd: 1234.5,
        reservedUsd: 1234.5,
        latencyMs: 0.4,
      },
    ],
    [
      'a reference that is not frozen, no rule, numbers JSON writes as null',
      {
        policy: { ...ref },
        violations: [],
        matchedRule: null,
        limits: [],
        outflowUsd: Number.NaN,
        reservedUsd: null,
        latencyMs: Number.POSITIVE_INFINITY,
      },
    ],
    [
      'a warn with a retry',
      {
        policy: frozen,
        violations: [
          {
            code: 'policy_limit_exceeded',
            status: 'warn',
            limit: 'daily',
            observed: { used_usd: 1 },
            bound: { max_usd: 1 },
            message: 'full "now"',
          },
        ],
        matchedRule: 'r\ud800',
        limits,
        outflowUsd: 10,
        reservedUsd: null,
        retryAfterS: 3600,
        latencyMs: 2,
      },
    ],
    [
      'no policy: an error with retry_after_s',
      {
        policy: null,
        violations: [
          { code: 'policy_unavailable', status: 'error', observed: null, bound: null, message: 'the store is down' },
        ],
        matchedRule: null,
        limits: [],
        outflowUsd: null,
        reservedUsd: null,
        latencyMs: 0,
      },
    ],
  ];
  for (const [what, input] of inputs) {
    const item = policyItem(input);
    const text = (item as unknown as { [JSON_TEXT]?: string })[JSON_TEXT];
    t.equal(text, JSON.stringify(item), what);
    t.notOk(Object.keys(item).includes(String(JSON_TEXT)), `${what}: the text is not a property JSON sees`);
    t.equal(bodyJson({ evidence: [item] }), JSON.stringify({ evidence: [item] }), `${what}: as sent`);
  }
  // Changed after it was made: the text follows the change, or there is none and the item is walked.
  const changes: Array<[string, (i: Record<string, unknown>) => void]> = [
    ['a message changed', (i) => (i.message = 'other "text"')],
    ['a field added', (i) => (i.extra = 1)],
    ['a field removed', (i) => delete i.source],
    ['observed replaced', (i) => (i.observed = { any: ['thing'] })],
    ['a limit given a field', (i) => ((i.observed as { limits: Array<Record<string, unknown>> }).limits[0].note = 'x')],
    ['a limit id made a number', (i) => ((i.observed as { limits: Array<Record<string, unknown>> }).limits[1].id = 7)],
    ['expected set', (i) => (i.expected = { max: 1 })],
    ['retry_after_s set to undefined', (i) => (i.retry_after_s = undefined)],
  ];
  for (const [what, change] of changes) {
    const item = policyItem({ ...inputs[0][1], limits: limits.map((l) => ({ ...l })) });
    change(item as unknown as Record<string, unknown>);
    const text = (item as unknown as { [JSON_TEXT]?: string })[JSON_TEXT];
    if (text !== undefined) t.equal(text, JSON.stringify(item), `${what}: the text follows`);
    t.equal(bodyJson({ evidence: [item] }), JSON.stringify({ evidence: [item] }), `${what}: as sent`);
  }
});
