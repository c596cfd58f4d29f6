/**
 * Shared by the stablecoin and yield agents: a stablecoin_depeg result read as a peg status,
 * and the common fields every agent answer carries.
 */
import type { CheckOutcome } from '../checks/types.js';

export type PegStatus = 'pegged' | 'warning' | 'depegged' | 'unknown';

/** pass → pegged, warn → warning, fail depegged → depegged; anything else could not be judged. */
export function pegStatus(o: Pick<CheckOutcome, 'status' | 'reason'>): PegStatus {
  if (o.status === 'pass') return 'pegged';
  if (o.status === 'warn') return 'warning';
  if (o.status === 'fail' && o.reason === 'depegged') return 'depegged';
  return 'unknown';
}

/** Worst first: a depeg outranks an unknown peg, which outranks a warning. */
export const PEG_SEVERITY: Readonly<Record<PegStatus, number>> = { depegged: 3, unknown: 2, warning: 1, pegged: 0 };

/** Provider asset ids are lowercase; the price client answers under the lowercased id. */
export function normaliseAssetId(id: string): string {
  return id.trim().toLowerCase();
}
