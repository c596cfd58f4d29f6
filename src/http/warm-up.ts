/**
 * The event loop's share of the warm-up (docs/api-reference.md, "Health and readiness"). V8
 * compiles a function on its first call and optimises it after several, and a fresh process's
 * first decide paid that on its event loop: 12 ms more than the twentieth (the decide request's
 * validator alone took 5 ms). Before the service says it is ready, this thread runs:
 * - the decide and guard request rules on bodies that pass them;
 * - the engine's own path (cache miss, results landing, cache hit), the judge and the answer's
 *   shape and serialisation, on an engine of its own whose checks run here against the stand-in
 *   upstream of src/engine/warm-up.ts: no request leaves the machine, and the service's cache
 *   and metrics never see it;
 * - the key lookup's statement, for a key that cannot exist.
 */
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { buildDecideResponse } from '../engine/decide-response.js';
import { createEngine } from '../engine/runner.js';
import { UNCOUNTED, WARM_ROUNDS, WARM_TIMEOUT_MS, warmUpItems, withStandIn } from '../engine/warm-up.js';
import { createExecutor } from '../engine/worker-pool.js';
import type { Store } from '../store/types.js';
import type { SchemaId } from './validation.js';
import { bodyProblems } from './validation.js';

/** A body of each warmed endpoint that its rules accept. */
export function warmUpBodies(): Array<[SchemaId, unknown]> {
  const pair = `0x${'00'.repeat(19)}02`;
  return [
    ['DecideRequest', { goal: 'warm up', checks: warmUpItems('http://127.0.0.1:1').map((i) => i.check) }],
    [
      'GuardRequest',
      { action: 'swap', chain: 'base', pair_address: pair, amount_usd: 1, stablecoin_asset_id: 'usd-coin' },
    ],
    [
      'GuardRequest',
      {
        action: 'transfer',
        chain: 'base',
        amount_usd: 1,
        transaction: { from: `0x${'00'.repeat(19)}03`, to: `0x${'00'.repeat(19)}04`, value: '0x0', data: '0x' },
      },
    ],
  ];
}

/** Runs the rules on each warm-up body; returns the problems found (none: the bodies are current). */
export function warmValidators(): string[] {
  const found: string[] = [];
  for (const [id, body] of warmUpBodies())
    for (const p of bodyProblems(id, body)) found.push(`${id} ${p.loc.join('.')}: ${p.msg}`);
  return found;
}

/**
 * WARM_ROUNDS decides' worth of the engine, judge and answer on this thread against the stand-in;
 * the first round misses the cache, the others hit it. Returns the last answer's verdict.
 */
export async function warmEngine(config: Readonly<Config>): Promise<string> {
  return withStandIn(config, async (local, base) => {
    const engine = createEngine({
      config: local,
      metrics: UNCOUNTED,
      executor: createExecutor({ ...local, poolThreads: 0 }),
    });
    try {
      let verdict = '';
      for (let round = 0; round < WARM_ROUNDS; round++) {
        const planned = warmUpItems(base).map((i) => ({ name: i.type, check: i.check }));
        const results = await engine.run(planned as never, { deadlineMs: WARM_TIMEOUT_MS, requestId: 'warm-up' });
        const response = buildDecideResponse(
          results,
          { allowPartial: false, warnVerdict: 'wait' },
          { requestId: 'warm-up', deadlineMs: WARM_TIMEOUT_MS, judged: { goal: 'warm up' } },
        );
        verdict = JSON.parse(JSON.stringify(response)).verdict;
      }
      return verdict;
    } finally {
      await engine.close();
    }
  });
}

/** The event loop's warm-up; what it could not do is returned as problems, never thrown. */
export async function warmEventLoop(
  config: Readonly<Config>,
  store: Pick<Store, 'findApiKeyByHash'>,
): Promise<string[]> {
  const problems = warmValidators();
  try {
    const verdict = await warmEngine(config);
    if (verdict !== 'proceed') problems.push(`the warm-up decide answered ${verdict}, not proceed`);
  } catch (err) {
    problems.push(`the engine's warm-up failed: ${(err as Error).message}`);
  }
  await store.findApiKeyByHash(randomBytes(32).toString('hex')).catch(() => undefined);
  return problems;
}
