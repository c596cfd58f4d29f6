/**
 * The judge reads what results carry, not what they are called: a fail's basis (bound or
 * heuristic), the inputs a check judged without, and the signals a combined result rests on.
 * These travel from a module's outcome through the runner's evidence item to the judge, and
 * stay out of the serialized evidence.
 */
import t from 'tap';
import { evaluateRug } from '../../src/checks/rug_pull_risk.js';
import type { DexPairView } from '../../src/checks/dex-pair.js';
import type { CheckOutcome } from '../../src/checks/types.js';
import { judge } from '../../src/engine/judge.js';
import { result } from '../../src/engine/runner.js';
import type { RugPullRiskCheck } from '../../src/generated/types.js';

const NOW = Date.UTC(2024, 2, 20);
const DAY = 86_400_000;
const rug: RugPullRiskCheck = {
  type: 'rug_pull_risk',
  chain: 'base',
  pair_address: '0xd0b53D9277642d899DF5C87A3966A349A798F224',
  min_liquidity_usd: 50_000,
  min_pair_age_minutes: 1440,
  max_fdv_to_liquidity_ratio: 20,
};
/** An established, healthy pool: no rug signal fires. */
const pair = (over: Partial<DexPairView> = {}): DexPairView => ({
  priceUsd: 1.02,
  liquidityUsd: 2_000_000,
  volumeH24: 900_000,
  buysH24: 400,
  sellsH24: 380,
  fdv: 30_000_000,
  pairCreatedAt: NOW - 400 * DAY,
  baseSymbol: 'AAA',
  quoteSymbol: 'WETH',
  url: null,
  ...over,
});
const judged = (outcome: CheckOutcome) => judge([result('rug_pull_risk', 'rug_pull_risk', outcome, 12, false, 0)]);

t.test('rug_pull_risk: an unknown pair age lowers confidence, the same figures with a known age do not', async (t) => {
  const known = evaluateRug(rug, pair(), NOW);
  const unknown = evaluateRug(rug, pair({ pairCreatedAt: null }), NOW);
  t.equal(known.status, 'pass');
  t.equal(unknown.status, 'pass', 'an unknown age is not a signal by itself');
  const k = judged(known);
  const u = judged(unknown);
  t.equal(k.verdict, 'proceed');
  t.equal(u.verdict, 'proceed');
  t.equal(k.confidence, 1, 'every input known: full confidence');
  t.ok(u.confidence < k.confidence, `unknown age ${u.confidence} < known age ${k.confidence}`);
  t.equal(u.confidence, 0.8, 'one unknown input costs one factor of 0.8');
  // Missing trade counts are unknown inputs too, and they add up.
  const blind = judged(evaluateRug(rug, pair({ pairCreatedAt: null, buysH24: null, sellsH24: null }), NOW));
  t.ok(blind.confidence < u.confidence, `three unknown inputs ${blind.confidence} < one ${u.confidence}`);
});

t.test('what the judge reads stays out of the serialized evidence', async (t) => {
  const outcome = evaluateRug(rug, pair({ pairCreatedAt: NOW - 60 * 60_000, fdv: 100_000_000 }), NOW);
  t.equal(outcome.reason, 'rug_risk_high');
  const item = result('rug_pull_risk', 'rug_pull_risk', outcome, 5, false, 0);
  t.equal(item.basis, 'heuristic', 'the judge sees the basis');
  t.same(item.components, ['pair_too_young', 'fdv_liquidity_ratio_high']);
  const wire = JSON.parse(JSON.stringify(item)) as Record<string, unknown>;
  for (const k of ['basis', 'unknown_inputs', 'components']) t.notOk(k in wire, `${k} is not in the evidence`);
  t.same(judge([item]).failure_modes, [
    'rug_pull_risk:rug_risk_high',
    'rug_pull_risk:pair_too_young',
    'rug_pull_risk:fdv_liquidity_ratio_high',
  ]);
});

t.test('bound or heuristic comes from the result, whatever its reason code', async (t) => {
  const fail = (reason: string, basis?: 'bound' | 'heuristic'): CheckOutcome => ({
    status: 'fail',
    reason,
    message: 'm',
    source: null,
    ttl_s: 60,
    ...(basis ? { basis } : {}),
  });
  const conf = (o: CheckOutcome) => judge([result('x', 'x', o, 1, false, 0)]).confidence;
  t.equal(conf(fail('rug_risk_high', 'bound')), 1, 'a reason that sounds heuristic but rests on a bound: explicit');
  t.equal(conf(fail('price_above_max', 'heuristic')), 0.8, 'any reason resting on heuristics: the heuristic band');
  t.equal(conf(fail('price_above_max')), 1, 'no basis means a bound');
  const mixed = judge([
    result('a', 'a', fail('a_signal', 'heuristic'), 1, false, 0),
    result('b', 'b', fail('b_bound', 'bound'), 1, false, 0),
  ]);
  t.equal(mixed.confidence, 1, 'one explicit breach among heuristic fails is enough for ≥ 0.9');
  const heuristicUnknown = { ...fail('rug_risk_high', 'heuristic'), unknown_inputs: 1 };
  t.ok(conf(heuristicUnknown) < conf(fail('rug_risk_high', 'heuristic')), 'unknown inputs weaken a heuristic block');
  t.ok(conf(heuristicUnknown) >= 0.6, 'but never below the heuristic floor');
});
