/**
 * transaction_simulation (guard-only: planned when a guard request carries `transaction`): the
 * transaction is simulated on the chain's node (docs/action-scan.md §3), what it moves and
 * approves is valued in USD and judged by the rules of src/scan/rules.ts. One node call (plus
 * the head in the same batch), then the price provider and the tokens' decimals concurrently.
 * A request's rpc_url goes through the caller dispatcher and its SSRF rules; the operator's RPC
 * for the chain (RPC_URLS) is trusted. No node at all is `error no_rpc`.
 */
import { approvalChanges, assetChanges, type AssetChange } from '../scan/changes.js';
import { matchSimulationRules, type SimulationFacts, simulationMessage } from '../scan/rules.js';
import { simulate } from '../scan/simulate.js';
import { valueChanges } from '../scan/value.js';
import { rpcSource } from '../net/rpc.js';
import { checkError, fromUpstreamFail, neverThrow } from './outcome.js';
import { isOperatorUrl } from './trust.js';
import type { CheckModule, CheckOutcome, TransactionSimulationCheck } from './types.js';

/** State moves every block: a simulation is reused within one block at most. */
export const SIMULATION_TTL_S = 2;

/** The native coin's symbol for messages, by chain. */
export const NATIVE_SYMBOLS: Readonly<Record<string, string>> = Object.freeze({
  polygon: 'POL',
  bsc: 'BNB',
  avalanche: 'AVAX',
});

/** From priced asset changes and approvals to the result (pure). */
export function evaluateSimulation(
  check: TransactionSimulationCheck,
  sim: {
    method: string;
    block: number | null;
    reverted: boolean;
    revertReason: string | null;
    gasUsed: number | null;
    effectsKnown: boolean;
  },
  changes: AssetChange[],
  approvals: ReturnType<typeof approvalChanges>,
  source: string,
  priceError: string | null = null,
): CheckOutcome {
  const netUsdOut =
    Math.round(changes.filter((c) => c.direction === 'out').reduce((s, c) => s + (c.usd ?? 0), 0) * 1e4) / 1e4;
  const facts: SimulationFacts = {
    action: check.action,
    amountUsd: check.amount_usd,
    knownSafe: new Set(check.known_safe_addresses.map((a) => a.toLowerCase())),
    reverted: sim.reverted,
    effectsKnown: sim.effectsKnown,
    assetChanges: changes,
    approvalChanges: approvals,
    netUsdOut,
  };
  const v = matchSimulationRules(facts);
  const native = NATIVE_SYMBOLS[check.chain] ?? 'ETH';
  const observed = {
    method: sim.method,
    block: sim.block,
    reverted: sim.reverted,
    revert_reason: sim.revertReason,
    gas_used: sim.gasUsed,
    asset_changes: changes,
    approval_changes: approvals,
    net_usd_out: netUsdOut,
    signals: v.signals.map((s) => s.reason),
    ...(priceError ? { price_error: priceError } : {}),
  };
  const expected = {
    amount_usd: check.amount_usd,
    max_usd_out: check.amount_usd === null ? null : Math.round((check.amount_usd * 1.05 + 1) * 1e4) / 1e4,
    known_safe_addresses: check.known_safe_addresses,
  };
  return {
    status: v.status,
    reason: v.reason,
    message: simulationMessage(facts, v, {
      method: sim.method,
      block: sim.block,
      revertReason: sim.revertReason,
      native,
    }),
    observed,
    expected,
    source,
    ttl_s: SIMULATION_TTL_S,
  };
}

export const transactionSimulation: CheckModule<TransactionSimulationCheck> = {
  type: 'transaction_simulation',
  upstream: ['rpc', 'price_provider'],
  run: neverThrow(async (check, ctx) => {
    if (!check.rpc_url)
      return checkError(
        'no_rpc',
        `No rpc_url given and no RPC configured for chain ${check.chain}: the transaction cannot be simulated.`,
        null,
        { observed: { inputs: ['rpc_url', 'RPC_URLS'] } },
      );
    const url = check.rpc_url;
    const rpcOpts = {
      signal: ctx.signal,
      safe: !isOperatorUrl(ctx.config, url),
      allowPrivate: ctx.config.allowPrivateTargets,
      source: rpcSource(url),
    };
    const tx = check.transaction;
    const r = await simulate(url, tx, { ...rpcOpts, overrides: check.state_overrides });
    if (!r.ok) return fromUpstreamFail(r, SIMULATION_TTL_S);
    const sim = r.data;
    const changes = assetChanges(tx.from, sim.logs, sim.nativeTransfers);
    const approvals = approvalChanges(tx.from, sim.logs);
    const priceError = await valueChanges(ctx.config, check.chain, url, rpcOpts, changes, ctx.signal);
    return evaluateSimulation(check, sim, changes, approvals, r.source, priceError);
  }),
};
