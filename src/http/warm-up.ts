/**
 * The event loop's share of the warm-up (docs/api-reference.md, "Health and readiness"): the
 * request rules of the decide and guard endpoints run once on bodies that pass them, so no caller
 * pays for compiling them: V8 compiles a function on its first call, and the decide request's
 * validator alone took 5 ms the first time.
 */
import { warmUpItems } from '../engine/warm-up.js';
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
