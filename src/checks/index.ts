/**
 * The check registry: every check type the service runs, one module each, looked up by `type`:
 * the ten a decide request may name and the guard-only ones the guard plans. Adding a type means
 * adding its schema, its module and one line here; nothing else branches on the type.
 */
import type { Check } from '../generated/types.js';
import {
  type CheckModule,
  type CheckOutcome,
  type CheckType,
  NO_UPSTREAM,
  type PublicCheckType,
  type UpstreamLabel,
} from './types.js';
import { approvalAmount } from './approval_amount.js';
import { bridgeExploitMonitor } from './bridge_exploit_monitor.js';
import { contractVerified } from './contract_verified.js';
import { counterpartyScreen } from './counterparty_screen.js';
import { delegationScan } from './delegation_scan.js';
import { dexPrice } from './dex_price.js';
import { http } from './http.js';
import { liquidityDepth } from './liquidity_depth.js';
import { price } from './price.js';
import { rpc } from './rpc.js';
import { rpcHealth } from './rpc_health.js';
import { rugPullRisk } from './rug_pull_risk.js';
import { signatureScan } from './signature_scan.js';
import { stablecoinDepeg } from './stablecoin_depeg.js';
import { transactionSimulation } from './transaction_simulation.js';
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
  // Guard-only: the Check schema does not admit these, so only the guard's plan names them.
  rpc_health: rpcHealth,
  liquidity_depth: liquidityDepth,
  transaction_simulation: transactionSimulation,
  signature_scan: signatureScan,
  delegation_scan: delegationScan,
  // Runs on the main thread, where the screening lists are (docs/screening.md §4).
  counterparty_screen: counterpartyScreen,
} satisfies Record<CheckType, CheckModule<any>>;

/** The module for a check; the registry's keys are exactly the check types. */
export function moduleFor<C extends Check>(check: C): CheckModule<C> {
  return checks[check.type as PublicCheckType] as unknown as CheckModule<C>;
}

/** The module registered for `type`, or undefined for a type nobody registered. */
export function moduleOf(type: string): CheckModule<any> | undefined {
  return Object.hasOwn(checks, type) ? checks[type as CheckType] : undefined;
}

/**
 * The label an outcome of `type` is counted under in the upstream metric (see
 * CheckModule.upstream); null for a check that calls no upstream.
 */
export function upstreamLabel(type: string, outcome: Pick<CheckOutcome, 'source'>): UpstreamLabel | null {
  const declared = moduleOf(type)?.upstream;
  if (declared === undefined) return 'other';
  if (declared === NO_UPSTREAM) return null;
  if (typeof declared === 'string') return declared;
  return declared.find((label) => label === outcome.source) ?? declared[0];
}

/** Where a request names several checks of one type, this field tells them apart in names. */
const QUALIFIERS: Partial<Record<PublicCheckType, (c: any) => unknown>> = {
  price: (c) => c.asset_id,
  stablecoin_depeg: (c) => c.asset_id,
  dex_price: (c) => c.pair_address,
  rug_pull_risk: (c) => c.pair_address,
  contract_verified: (c) => c.contract_address,
  tx: (c) => c.tx_hash,
};

/**
 * Stable evidence name (docs/rules.md §1): the type alone when it occurs once; with several of one
 * type, `type[qualifier]` when the qualifier (asset id, pair, address, tx hash) tells them apart,
 * else `type[i]` with i the check's index in the request.
 */
export function checkName(check: Check, index: number, all: readonly Check[]): string {
  const same = all.filter((c) => c.type === check.type);
  if (same.length <= 1) return check.type;
  const q = QUALIFIERS[check.type as PublicCheckType];
  if (q) {
    const mine = q(check);
    const clash = same.filter((c) => q(c) === mine).length > 1;
    if (typeof mine === 'string' && mine !== '' && !clash) return `${check.type}[${mine}]`;
  }
  return `${check.type}[${index}]`;
}
