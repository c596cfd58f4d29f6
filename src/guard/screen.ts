/**
 * The guard's side of counterparty_screen (docs/screening.md §4, §5): the simulation's
 * counterparties join the addresses the request named, the check runs on the main thread with the
 * lists, and the counterparties of an answered proceed are learned for the account.
 */
import { counterpartyScreen, readAhead, type CounterpartyScreenCheck } from '../checks/counterparty_screen.js';
import { checkError } from '../checks/outcome.js';
import type { CheckResult, RecipientCode } from '../checks/types.js';
import type { Config } from '../config.js';
import type { GuardRequest } from '../generated/types.js';
import { result } from '../engine/runner.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { deadline } from '../net/deadline.js';
import type { Role } from '../screening/rules.js';
import type { Screening } from '../screening/service.js';
import type { ScreeningView } from '../screening/view.js';
import { addRole, type GuardPlannedCheck } from './plan.js';

/** Roles whose addresses an answered proceed teaches: they received value, an approval or a delegation. */
const LEARNED: ReadonlySet<Role> = new Set(['recipient', 'spender', 'delegate']);

interface SimObserved {
  asset_changes?: Array<{ direction?: string; counterparty?: string }>;
  approval_changes?: Array<{ spender?: string; amount?: string }>;
}

/** The simulation's outgoing counterparties (recipients) and the spenders of approvals it grants. */
function simulated(results: readonly CheckResult[], into: Map<string, Set<Role>>): void {
  for (const r of results) {
    if (r.type !== 'transaction_simulation') continue;
    const o = (r.observed ?? {}) as SimObserved;
    for (const c of o.asset_changes ?? []) if (c.direction === 'out') addRole(into, c.counterparty, 'recipient');
    for (const a of o.approval_changes ?? []) if (a.amount !== '0') addRole(into, a.spender, 'spender');
  }
}

/** ERC-20 `transfer(to, amount)` and `transferFrom(from, to, amount)`: where their `to` sits in the calldata. */
const TRANSFER_TO: Readonly<Record<string, number>> = { '0xa9059cbb': 10, '0x23b872dd': 74 };

/**
 * Who a transaction's calldata pays, read before the simulation: an ERC-20 transfer's `to`, when
 * the word holding it is a well-formed address. Only a hint for reading ahead; the screen's
 * recipients are still the simulation's.
 */
export function calldataRecipient(data: unknown): string | null {
  if (typeof data !== 'string' || data.length < 10) return null;
  const at = TRANSFER_TO[data.slice(0, 10).toLowerCase()];
  if (at === undefined || data.length < at + 64) return null;
  const word = data.slice(at, at + 64).toLowerCase();
  return /^0{24}[0-9a-f]{40}$/.test(word) ? `0x${word.slice(24)}` : null;
}

/**
 * Starts the screen's code reads for the recipients the request names (and an ERC-20 transfer's
 * `to`) while the checks run (readAhead): a fresh recipient then costs one round of the node's
 * latency, not a second one after the simulation. The reads go to screenGuard.
 */
export function readRecipientsAhead(
  config: Readonly<Config>,
  planned: GuardPlannedCheck,
  body: GuardRequest,
): Map<string, Promise<RecipientCode>> {
  const check = planned.check as unknown as CounterpartyScreenCheck;
  const roles = new Map<string, Set<Role>>();
  for (const a of check.addresses) if (a.roles.includes('recipient')) addRole(roles, a.address, 'recipient');
  addRole(roles, calldataRecipient(body.transaction?.data), 'recipient');
  return readAhead(config, check.rpc_url, [...roles.keys()]);
}

export async function screenGuard(
  deps: { config: Readonly<Config>; screening?: ScreeningView | null; metrics?: Metrics },
  planned: GuardPlannedCheck,
  results: readonly CheckResult[],
  account: string | null,
  remainingMs: number,
  /** The addresses of the policy's sets; null: the policy store could not be read. */
  policySets: readonly string[] | null = [],
  /** The recipients' code reads started with the checks (readRecipientsAhead). */
  readsAhead?: ReadonlyMap<string, Promise<RecipientCode>>,
): Promise<CheckResult> {
  const started = performance.now();
  const base = planned.check as unknown as CounterpartyScreenCheck;
  if (policySets === null) {
    const outcome = checkError(
      'known_counterparties_unavailable',
      "The policy's address sets could not be read: a lookalike of an address in them cannot be ruled out.",
      null,
    );
    deps.metrics?.check('counterparty_screen', outcome.status, 'miss', 0);
    return result(planned.name, 'counterparty_screen', outcome, Math.round(performance.now() - started), false, 0);
  }
  const roles = new Map<string, Set<Role>>();
  for (const a of base.addresses) for (const role of a.roles) addRole(roles, a.address, role);
  simulated(results, roles);
  const check: CounterpartyScreenCheck = {
    ...base,
    addresses: [...roles].map(([address, r]) => ({ address, roles: [...r] })),
    known_addresses: [...new Set([...base.known_addresses, ...policySets.map((a) => a.toLowerCase())])],
    account,
  };
  const timeoutMs = Math.max(1, Math.round(remainingMs));
  // A timer cleared when the screen answers: AbortSignal.timeout's fires later whatever happens,
  // building a DOMException in another request's time.
  const limit = deadline(undefined, timeoutMs);
  const outcome = await counterpartyScreen
    .run(check, {
      config: deps.config,
      signal: limit.signal,
      timeoutMs,
      ...(deps.screening ? { screening: deps.screening } : {}),
      ...(readsAhead ? { readsAhead } : {}),
    })
    .finally(limit.done);
  const latency = Math.round(performance.now() - started);
  deps.metrics?.check('counterparty_screen', outcome.status, 'miss', latency / 1000);
  countHits(deps.metrics, outcome);
  return result(planned.name, 'counterparty_screen', outcome, latency, false, 0);
}

const HIT_RULES: Readonly<Record<string, string>> = {
  sanctioned_address: 'sanctions',
  blocklisted_address: 'blocklist',
  address_lookalike: 'lookalike',
  recipient_delegated_to_sweeper: 'sweeper',
};

/** One hit per failing address and rule (the metric's label is the rule, never an address). */
export function countHits(metrics: Metrics | undefined, outcome: { observed?: unknown }): void {
  if (!metrics) return;
  const addrs = (outcome.observed as { addresses?: Array<{ reasons: string[] }> } | undefined)?.addresses ?? [];
  for (const a of addrs) for (const r of a.reasons) if (HIT_RULES[r]) metrics.screeningHit(HIT_RULES[r]);
}

/** How long an answer waits for its counterparties to be recorded. */
const LEARN_WAIT_MS = 250;

/** Learns the recipients, spenders and delegates of an answered proceed for the account. */
export async function learnFromProceed(
  screening: Pick<Screening, 'learn'>,
  account: string,
  results: readonly CheckResult[],
  logger: Logger,
): Promise<void> {
  const screen = results.find((r) => r.type === 'counterparty_screen');
  const addrs =
    (screen?.observed as { addresses?: Array<{ address: string; roles: Role[] }> } | undefined)?.addresses ?? [];
  const learned = addrs.filter((a) => a.roles.some((r) => LEARNED.has(r))).map((a) => a.address);
  // The answer waits for the write (the next answer knows them), but never longer than LEARN_WAIT_MS:
  // a store that hangs delays no answer; the write goes on and a failure is logged.
  const write = screening.learn(account, learned).catch((err) => {
    logger.warn({ err, account }, 'counterparties of a proceed not recorded');
  });
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([write, new Promise<void>((resolve) => (timer = setTimeout(resolve, LEARN_WAIT_MS)))]);
  clearTimeout(timer);
}
