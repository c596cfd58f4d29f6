/**
 * The guard planner (docs/rules.md §4): a GuardRequest and the operator's configuration become
 * the checks to run plus the entries that cannot run. Pure: no I/O, no clock.
 *
 * The plan is the PLAN table below, one row per plan entry. Each row says when the entry belongs
 * to the request at all (`applies`), what it lacks to run (`lacks`: nothing, an optional input
 * that skips it, an input the action needs, or an input it cannot use), and the check(s) it runs.
 */
import { CHAIN_IDS, type ChainName, type Config } from '../config.js';
import type { GuardRequest } from '../generated/types.js';
import { type Authorization, delegationOverrides, ZERO_ADDRESS } from '../scan/delegation.js';
import { readTypedData } from '../scan/typed-data.js';
import { orderParties } from '../scan/orders.js';
import type { TypedDataInput } from '../scan/typed-data-shape.js';
import type { Role } from '../screening/rules.js';

export type PlanEntryName =
  | 'rpc_health'
  | 'price_deviation'
  | 'liquidity_depth'
  | 'rug_pull_risk'
  | 'bridge_exploit_monitor'
  | 'tx_confirmation'
  | 'approval_amount'
  | 'contract_verified'
  | 'transaction_simulation'
  | 'signature_scan'
  | 'delegation_scan'
  | 'counterparty_screen';

/** One check for the engine; `entry` ties it back to its plan row. */
export interface GuardPlannedCheck {
  name: string;
  entry: PlanEntryName;
  check: { type: string; [k: string]: unknown };
}

/**
 * An entry that does not run. `skipped`: an optional input is absent. `missing`: the action
 * needs an input the request and the operator both lack. `invalid`: the input is present but
 * cannot be checked (a chain without a chain id, a spender that is not an address).
 */
export interface UnresolvedEntry {
  name: string;
  entry: PlanEntryName;
  type: string;
  kind: 'skipped' | 'missing' | 'invalid';
  /** The request fields (or settings) involved. */
  inputs: string[];
  message: string;
}

export interface GuardPlan {
  planned: GuardPlannedCheck[];
  unresolved: UnresolvedEntry[];
  /** Every entry that belongs to this request, in table order. */
  entries: PlanEntryName[];
}

/** The request with its defaults applied and the operator's inputs looked up. */
export interface ResolvedRequest {
  req: GuardRequest;
  chain: string;
  chainId: number | null;
  asset: string;
  /** The request's rpc_url, else the operator's RPC for the chain. */
  rpc: string | null;
  /** The request's bridge_status_url, else the operator's list. */
  bridgeUrls: readonly string[];
}

type Lack = Omit<UnresolvedEntry, 'name' | 'entry' | 'type'>;

interface PlanRow {
  entry: PlanEntryName;
  type: string;
  applies: (r: ResolvedRequest) => boolean;
  lacks: (r: ResolvedRequest) => Lack | null;
  build: (r: ResolvedRequest) => Array<GuardPlannedCheck['check']>;
}

/** Actions that move value get the peg and pool checks; approve and contract_call do not. */
const MOVES_VALUE = new Set<GuardRequest['action']>([
  'swap',
  'transfer',
  'bridge',
  'yield_deposit',
  'generic',
  'mint',
  'stake',
  'add_liquidity',
]);
const POOL_ACTIONS = new Set<GuardRequest['action']>(['swap', 'add_liquidity']);
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Thresholds of the guard's own checks (docs/rules.md §4), as data the check carries. */
export const GUARD_THRESHOLDS = Object.freeze({
  impactPassPct: 0.01,
  impactWarnPct: 0.03,
  minLiquidityUsd: 50_000,
  depegWarnPct: 0.005,
  depegBlockPct: 0.02,
  highValueUsd: 10_000,
});

const given = (v: string | null | undefined): v is string => typeof v === 'string' && v !== '';
const contractTarget = (r: ResolvedRequest): string | null =>
  given(r.req.contract_address)
    ? r.req.contract_address
    : r.req.action === 'approve' && given(r.req.spender)
      ? r.req.spender
      : null;
const lack = (kind: Lack['kind'], inputs: string[], message: string): Lack => ({ kind, inputs, message });

export const PLAN: readonly PlanRow[] = [
  {
    entry: 'rpc_health',
    type: 'rpc_health',
    applies: () => true,
    lacks: (r) =>
      r.rpc
        ? null
        : lack(
            'skipped',
            ['rpc_url', 'RPC_URLS'],
            `No rpc_url given and no RPC configured for chain ${r.chain}; node health not checked.`,
          ),
    build: (r) => [{ type: 'rpc_health', rpc_url: r.rpc!, chain: r.chain, chain_id: r.chainId }],
  },
  {
    entry: 'price_deviation',
    type: 'stablecoin_depeg',
    applies: (r) => MOVES_VALUE.has(r.req.action),
    lacks: () => null,
    build: (r) => [
      {
        type: 'stablecoin_depeg',
        asset_id: r.asset,
        quote: 'usd',
        warn_deviation_pct: GUARD_THRESHOLDS.depegWarnPct,
        block_deviation_pct: GUARD_THRESHOLDS.depegBlockPct,
      },
    ],
  },
  {
    entry: 'liquidity_depth',
    type: 'liquidity_depth',
    applies: (r) => MOVES_VALUE.has(r.req.action) || given(r.req.pair_address),
    lacks: (r) =>
      given(r.req.pair_address)
        ? null
        : lack('skipped', ['pair_address'], 'No pair_address given; pool depth not checked.'),
    build: (r) => [
      {
        type: 'liquidity_depth',
        chain: r.chain,
        pair_address: r.req.pair_address,
        amount_usd: r.req.amount_usd ?? null,
        impact_pass_pct: GUARD_THRESHOLDS.impactPassPct,
        impact_warn_pct: GUARD_THRESHOLDS.impactWarnPct,
        min_liquidity_usd: GUARD_THRESHOLDS.minLiquidityUsd,
      },
    ],
  },
  {
    entry: 'rug_pull_risk',
    type: 'rug_pull_risk',
    applies: (r) => POOL_ACTIONS.has(r.req.action),
    lacks: (r) =>
      given(r.req.pair_address)
        ? null
        : lack('skipped', ['pair_address'], 'No pair_address given; rug-pull signals not checked.'),
    build: (r) => [
      {
        type: 'rug_pull_risk',
        chain: r.chain,
        pair_address: r.req.pair_address,
        min_liquidity_usd: 50_000,
        min_pair_age_minutes: 1440,
        max_fdv_to_liquidity_ratio: 20,
      },
    ],
  },
  {
    entry: 'bridge_exploit_monitor',
    type: 'bridge_exploit_monitor',
    applies: (r) => r.req.action === 'bridge',
    lacks: (r) =>
      r.bridgeUrls.length > 0
        ? null
        : lack(
            'missing',
            ['bridge_status_url', 'BRIDGE_STATUS_URLS'],
            'A bridge needs a status page: no bridge_status_url given and none configured (BRIDGE_STATUS_URLS).',
          ),
    build: (r) => r.bridgeUrls.map((url) => ({ type: 'bridge_exploit_monitor', status_url: url, expect_status: 200 })),
  },
  {
    entry: 'tx_confirmation',
    type: 'tx',
    applies: (r) => given(r.req.tx_hash),
    lacks: (r) =>
      r.rpc
        ? null
        : lack(
            'missing',
            ['rpc_url', 'RPC_URLS'],
            `tx_hash given but no rpc_url and no RPC configured for chain ${r.chain}; the transaction cannot be confirmed.`,
          ),
    build: (r) => [{ type: 'tx', rpc_url: r.rpc!, tx_hash: r.req.tx_hash, require_success: true }],
  },
  {
    entry: 'approval_amount',
    type: 'approval_amount',
    applies: (r) => r.req.action === 'approve',
    lacks: (r) =>
      given(r.req.approval_amount)
        ? null
        : lack(
            'missing',
            ['approval_amount'],
            'An approve needs approval_amount; the allowance cannot be judged without it.',
          ),
    build: (r) => [
      {
        type: 'approval_amount',
        amount: r.req.approval_amount,
        spender: r.req.spender ?? null,
        known_safe_addresses: r.req.known_safe_addresses ?? [],
      },
    ],
  },
  {
    entry: 'contract_verified',
    type: 'contract_verified',
    applies: (r) => contractTarget(r) !== null,
    lacks: (r) => {
      const field = given(r.req.contract_address) ? 'contract_address' : 'spender';
      if (r.chainId === null)
        return lack(
          'invalid',
          ['chain'],
          `Chain ${r.chain} has no chain id known to source verification; ${field} not checked.`,
        );
      if (!ADDRESS.test(contractTarget(r)!))
        return lack('invalid', [field], `${field} ${contractTarget(r)} is not a 0x-prefixed 20-byte address.`);
      return null;
    },
    build: (r) => [{ type: 'contract_verified', chain: r.chain, contract_address: contractTarget(r) }],
  },
  {
    // Runs whenever a transaction is given; without a node the check answers `error no_rpc`
    // itself (docs/action-scan.md §2), so strict mode waits and non-strict ignores it.
    entry: 'transaction_simulation',
    type: 'transaction_simulation',
    applies: (r) => r.req.transaction !== undefined && r.req.transaction !== null,
    lacks: () => null,
    build: (r) => {
      const t = r.req.transaction!;
      return [
        {
          type: 'transaction_simulation',
          chain: r.chain,
          rpc_url: r.rpc,
          transaction: { from: t.from, to: t.to ?? null, value: t.value, data: t.data, gas: t.gas ?? null },
          action: r.req.action,
          amount_usd: r.req.amount_usd ?? null,
          known_safe_addresses: r.req.known_safe_addresses ?? [],
          // A type-4 transaction: its delegations are in place before it runs (docs/action-scan.md §6).
          ...(authorizationList(r).length > 0
            ? { state_overrides: delegationOverrides(authorizationList(r), r.chainId) }
            : {}),
        },
      ];
    },
  },
  {
    entry: 'signature_scan',
    type: 'signature_scan',
    applies: (r) => r.req.typed_data !== undefined && r.req.typed_data !== null,
    lacks: () => null,
    build: (r) => [
      {
        type: 'signature_scan',
        chain: r.chain,
        chain_id: r.chainId,
        rpc_url: r.rpc,
        typed_data: r.req.typed_data,
        amount_usd: r.req.amount_usd ?? null,
        known_safe_addresses: r.req.known_safe_addresses ?? [],
        signer: r.req.signer ?? null,
      },
    ],
  },
  {
    // Runs whenever an authorization is given; without a node the check answers `error no_rpc`.
    entry: 'delegation_scan',
    type: 'delegation_scan',
    applies: (r) => authorizations(r).length > 0,
    lacks: () => null,
    build: (r) => [
      {
        type: 'delegation_scan',
        chain: r.chain,
        rpc_url: r.rpc,
        authorizations: authorizations(r),
        known_safe_addresses: r.req.known_safe_addresses ?? [],
      },
    ],
  },
  {
    // Every address the request names, with its roles; the guard adds the simulation's
    // counterparties and runs it on the main thread, where the lists are (docs/screening.md §4).
    entry: 'counterparty_screen',
    type: 'counterparty_screen',
    applies: (r) => namedAddresses(r).length > 0,
    lacks: () => null,
    build: (r) => [
      {
        type: 'counterparty_screen',
        chain: r.chain,
        rpc_url: r.rpc,
        addresses: namedAddresses(r),
        known_addresses: (r.req.known_safe_addresses ?? []).filter((a) => ADDRESS.test(a)).map((a) => a.toLowerCase()),
        account: null,
      },
    ],
  },
];

/** Top-level typed-data fields that name who receives or may move value. */
const TYPED_ROLES: Readonly<Record<string, Role>> = {
  spender: 'spender',
  recipient: 'recipient',
  to: 'recipient',
  receiver: 'recipient',
};

/** Adds (address, role) to a role map, lowercased; the zero address and malformed ones are skipped. */
export function addRole(into: Map<string, Set<Role>>, address: unknown, role: Role): void {
  if (typeof address !== 'string' || !ADDRESS.test(address)) return;
  const a = address.toLowerCase();
  if (a === ZERO_ADDRESS) return;
  const roles = into.get(a) ?? new Set<Role>();
  roles.add(role);
  into.set(a, roles);
}

/**
 * The addresses a guard request names (docs/screening.md §4), each once with its roles:
 * transaction.to (a recipient too when it carries native value), the typed message's
 * verifyingContract, spender and recipient, a signed order's recipients, EIP-7702 delegates, the request's spender and
 * contract_address. The simulation's counterparties are added by the guard once it has run.
 */
export function namedAddresses(r: ResolvedRequest): Array<{ address: string; roles: Role[] }> {
  const m = new Map<string, Set<Role>>();
  const t = r.req.transaction;
  if (t) {
    addRole(m, t.to, 'to');
    if (t.to && !/^(0x0*|0)?$/i.test(String(t.value ?? '0'))) addRole(m, t.to, 'recipient');
  }
  const td = r.req.typed_data as TypedDataInput | null | undefined;
  if (td) {
    const read = readTypedData(td);
    addRole(m, read.verifyingContract, 'verifying_contract');
    addRole(m, read.spender, read.kind?.startsWith('eip3009') ? 'recipient' : 'spender');
    const fields = td.types[td.primaryType] ?? [];
    for (const f of fields)
      if (f.type === 'address' && Object.hasOwn(TYPED_ROLES, f.name))
        addRole(m, td.message[f.name], TYPED_ROLES[f.name]);
    // A signed order pays its recipients: the proceeds' and every fee's (docs/action-scan.md §7).
    for (const a of orderParties(td, r.req.signer ?? null)?.recipients ?? []) addRole(m, a, 'recipient');
  }
  for (const a of authorizations(r)) addRole(m, a.address, 'delegate');
  addRole(m, r.req.spender, 'spender');
  addRole(m, r.req.contract_address, 'contract');
  return [...m].map(([address, roles]) => ({ address, roles: [...roles] }));
}

/** The authorizations of a type-4 transaction, `authority` defaulting to its sender. */
function authorizationList(r: ResolvedRequest): Authorization[] {
  const t = r.req.transaction;
  if (!t?.authorization_list) return [];
  return t.authorization_list.map((a) => ({
    authority: a.authority ?? t.from,
    address: a.address,
    chain_id: a.chain_id,
    nonce: a.nonce ?? null,
  }));
}

/** Every authorization of the request: the one to sign, then the transaction's. */
function authorizations(r: ResolvedRequest): Authorization[] {
  const a = r.req.authorization;
  const one = a ? [{ authority: a.authority, address: a.address, chain_id: a.chain_id, nonce: a.nonce ?? null }] : [];
  return [...one, ...authorizationList(r)];
}

/** Defaults and operator inputs: chain null → base, asset null → usd-coin, RPC and bridge URLs. */
export function resolveRequest(
  req: GuardRequest,
  config: Pick<Config, 'rpcUrls' | 'bridgeStatusUrls'>,
): ResolvedRequest {
  const chain = given(req.chain) ? req.chain : 'base';
  const chainId = Object.hasOwn(CHAIN_IDS, chain) ? CHAIN_IDS[chain as ChainName] : null;
  const operatorRpc = Object.hasOwn(config.rpcUrls, chain) ? config.rpcUrls[chain] : undefined;
  // Check objects carry no trust flag: a decide request could set one. Whether a URL is the
  // operator's is decided where it is fetched, by comparing it with the configuration.
  const rpc = given(req.rpc_url) ? req.rpc_url : (operatorRpc ?? null);
  const bridgeUrls = given(req.bridge_status_url) ? [req.bridge_status_url] : config.bridgeStatusUrls;
  return {
    req,
    chain,
    chainId,
    asset: given(req.stablecoin_asset_id) ? req.stablecoin_asset_id : 'usd-coin',
    rpc,
    bridgeUrls,
  };
}

/** Plan a guard request: the checks to run and the entries that cannot run, in table order. */
export function planGuard(req: GuardRequest, config: Pick<Config, 'rpcUrls' | 'bridgeStatusUrls'>): GuardPlan {
  const r = resolveRequest(req, config);
  const plan: GuardPlan = { planned: [], unresolved: [], entries: [] };
  for (const row of PLAN) {
    if (!row.applies(r)) continue;
    plan.entries.push(row.entry);
    const missing = row.lacks(r);
    if (missing) {
      plan.unresolved.push({ name: row.entry, entry: row.entry, type: row.type, ...missing });
      continue;
    }
    const checks = row.build(r);
    // Several checks under one entry (several operator bridge URLs) are named entry[i] (docs/rules.md §1).
    checks.forEach((check, i) => {
      plan.planned.push({ name: checks.length > 1 ? `${row.entry}[${i}]` : row.entry, entry: row.entry, check });
    });
  }
  return plan;
}
