/**
 * The guard's own check types keep the public CheckModule contract (same context, same outcome),
 * but their check objects are not among the ten public variants, so they get their own type.
 * A decide request cannot name them: the Check schema admits only the public types.
 */
import type { CheckContext, CheckOutcome } from '../checks/types.js';

export interface GuardCheckModule<C extends { type: string }> {
  type: C['type'];
  run(check: C, ctx: CheckContext): Promise<CheckOutcome>;
}
