/**
 * The check registry: one module per type, looked up by `type`. Adding a type means adding a
 * schema, a module and one line here; nothing else branches on the type.
 */
import type { Check } from '../generated/types.js';
import type { CheckModule, CheckType } from './types.js';
import { approvalAmount } from './approval_amount.js';
import { bridgeExploitMonitor } from './bridge_exploit_monitor.js';
import { contractVerified } from './contract_verified.js';
import { dexPrice } from './dex_price.js';
import { http } from './http.js';
import { price } from './price.js';
import { rpc } from './rpc.js';
import { rugPullRisk } from './rug_pull_risk.js';
import { stablecoinDepeg } from './stablecoin_depeg.js';
import { tx } from './tx.js';

export const checks = {
  http,
  rpc,
  price,
  tx,
  dex_price: dexPrice,
  stablecoin_depeg: stablecoinDepeg,
  bridge_exploit_monitor: bridgeExploitMonitor,
  rug_pull_risk: rugPullRisk,
  approval_amount: approvalAmount,
  contract_verified: contractVerified,
} satisfies Record<CheckType, CheckModule<any>>;

/** The module for a check; the registry's keys are exactly the schema's check types. */
export function moduleFor<C extends Check>(check: C): CheckModule<C> {
  return checks[check.type as CheckType] as unknown as CheckModule<C>;
}

/** Where a request names several checks of one type, this field tells them apart in names. */
const QUALIFIERS: Partial<Record<CheckType, (c: any) => unknown>> = {
  price: (c) => c.asset_id,
  stablecoin_depeg: (c) => c.asset_id,
  dex_price: (c) => c.pair_address,
  rug_pull_risk: (c) => c.pair_address,
  contract_verified: (c) => c.contract_address,
  tx: (c) => c.tx_hash,
};

/**
 * Stable evidence name (semantics §1): the type alone when it occurs once; with several of one
 * type, `type[qualifier]` when the qualifier (asset id, pair, address, tx hash) tells them apart,
 * else `type[i]` with i the check's index in the request.
 */
export function checkName(check: Check, index: number, all: readonly Check[]): string {
  const same = all.filter((c) => c.type === check.type);
  if (same.length <= 1) return check.type;
  const q = QUALIFIERS[check.type as CheckType];
  if (q) {
    const mine = q(check);
    const clash = same.filter((c) => q(c) === mine).length > 1;
    if (typeof mine === 'string' && mine !== '' && !clash) return `${check.type}[${mine}]`;
  }
  return `${check.type}[${index}]`;
}
