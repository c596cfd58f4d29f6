/**
 * What an action shows to a policy (docs/policies.md §2, §3): from the guard request and the
 * evidence of the plan's checks (the simulation, the signature scan and the delegation scan),
 * the values each match field is compared with, the approvals and permits, and the outflow in USD.
 * Pure. A value the evidence could not give (a check that errored) is `null`, never a guess.
 */
import type { CheckResult } from '../checks/types.js';
import { UNLIMITED_THRESHOLD } from '../scan/changes.js';
import type { GuardRequest } from '../generated/types.js';
import { toBigInt } from '../scan/typed-data-shape.js';

export type ActionKind = 'transaction' | 'typed_data' | 'authorization' | 'declared';

export interface Grant {
  spender: string | null;
  token: string;
  unlimited: boolean;
  /** null: no USD value known. */
  usd: number | null;
}

export interface Permit extends Grant {
  /** Unix seconds it is valid until; null: it never ends (or its end is past any date). */
  validUntil: number | null;
}

export interface ActionFacts {
  kinds: ActionKind[];
  action: string;
  chain: string;
  to: string[];
  selectors: string[];
  /** null: the evidence that would tell could not be read. */
  recipients: string[] | null;
  spenders: string[] | null;
  delegates: string[];
  tokens: string[] | null;
  /** What leaves the acting account, in USD; null when it cannot be valued. */
  outflowUsd: number | null;
  approvals: Grant[] | null;
  permits: Permit[] | null;
  /** Why some facts are missing (a check's reason), for the message. */
  unreadable: string[];
}

/** Declared actions that move no value (docs/policies.md §3, Outflow). */
const NO_VALUE_ACTIONS = new Set(['approve']);

const uniq = (xs: string[]): string[] => [...new Set(xs)];
const isAddress = (v: unknown): v is string => typeof v === 'string' && /^0x[0-9a-fA-F]{40}$/.test(v);

interface SimObserved {
  asset_changes?: Array<{ asset: string; direction: string; counterparty: string; usd: number | null; amount: string }>;
  approval_changes?: Array<{ token: string; spender: string; amount: string; unlimited: boolean }>;
  net_usd_out?: number;
}

interface SigObserved {
  kind: string | null;
  /** A signed order (docs/action-scan.md §7): whom it pays besides the signer, what it gives. */
  third_parties?: string[];
  gives?: Array<{ token: string }>;
  gives_usd?: number | null;
  tokens: string[];
  spender: string | null;
  unlimited: boolean[];
  usd: number | null;
  grants_usd: Array<number | null>;
  valid_until: string | null;
}

/** The evidence item of a check type, when it ran to a definite answer (pass, warn or fail). */
function definite(results: readonly CheckResult[], type: string): CheckResult | null | 'unread' {
  const r = results.find((x) => x.type === type);
  if (!r) return null;
  return r.status === 'error' || r.status === 'skipped' || r.observed == null ? 'unread' : r;
}

/** The USD value per atomic unit of `token` the simulation priced, if it moved any. */
function unitPrice(changes: NonNullable<SimObserved['asset_changes']>, token: string): number | null {
  for (const c of changes) {
    if (c.asset !== token || c.usd === null) continue;
    const amount = Number(c.amount);
    if (amount > 0) return c.usd / amount;
  }
  return null;
}

const TRANSFER_KINDS = new Set(['eip3009_transfer', 'eip3009_receive', 'permit2_transfer', 'permit2_batch_transfer']);

export function actionFacts(req: GuardRequest, results: readonly CheckResult[]): ActionFacts {
  const tx = req.transaction ?? null;
  const td = req.typed_data ?? null;
  const auth = req.authorization ?? null;
  const kinds: ActionKind[] = [];
  if (tx) kinds.push('transaction');
  if (td) kinds.push('typed_data');
  if (auth) kinds.push('authorization');
  if (kinds.length === 0) kinds.push('declared');
  const facts: ActionFacts = {
    kinds,
    action: req.action,
    chain: req.chain ?? 'base',
    to: [],
    selectors: [],
    recipients: [],
    spenders: [],
    delegates: [],
    tokens: [],
    outflowUsd: 0,
    approvals: [],
    permits: [],
    unreadable: [],
  };
  const unread = (what: string) => {
    facts.unreadable.push(what);
    facts.recipients = null;
    facts.spenders = null;
    facts.tokens = null;
    facts.outflowUsd = null;
    facts.approvals = null;
    facts.permits = null;
  };
  const add = (field: 'recipients' | 'spenders' | 'tokens', values: string[]) => {
    const cur = facts[field];
    if (cur !== null) facts[field] = uniq([...cur, ...values.map((v) => v.toLowerCase())]);
  };
  const addUsd = (usd: number | null) => {
    if (facts.outflowUsd !== null) facts.outflowUsd = usd === null ? null : facts.outflowUsd + usd;
  };

  if (tx) {
    if (tx.to) facts.to.push(tx.to.toLowerCase());
    facts.selectors.push(tx.data && tx.data.length >= 10 ? tx.data.slice(0, 10).toLowerCase() : '0x');
    for (const a of tx.authorization_list ?? []) facts.delegates.push(a.address.toLowerCase());
    const sim = definite(results, 'transaction_simulation');
    if (sim === 'unread' || sim === null) unread('transaction_simulation');
    else {
      const o = sim.observed as SimObserved;
      const changes = o.asset_changes ?? [];
      const out = changes.filter((c) => c.direction === 'out');
      add(
        'recipients',
        out.map((c) => c.counterparty),
      );
      add(
        'tokens',
        out.map((c) => c.asset),
      );
      addUsd(out.some((c) => c.usd === null) ? null : out.reduce((s, c) => s + (c.usd ?? 0), 0));
      const granted = (o.approval_changes ?? []).filter((a) => a.amount !== '0');
      add(
        'spenders',
        granted.map((a) => a.spender),
      );
      if (facts.approvals !== null)
        for (const a of granted) {
          const price = unitPrice(changes, a.token);
          facts.approvals.push({
            spender: a.spender.toLowerCase(),
            token: a.token.toLowerCase(),
            unlimited: a.unlimited,
            usd: a.unlimited || price === null ? null : price * Number(a.amount),
          });
        }
    }
  }
  if (td) {
    const vc = (td.domain as { verifyingContract?: string }).verifyingContract;
    if (isAddress(vc)) facts.to.push(vc.toLowerCase());
    const sig = definite(results, 'signature_scan');
    if (sig === 'unread' || sig === null) unread('signature_scan');
    else {
      const o = sig.observed as SigObserved;
      if (o.kind === null) unread('signature_scan');
      else if (Array.isArray(o.third_parties)) {
        // A signed order: who it pays other than the signer receives from the acting account; it
        // gives its `gives` (USD when every item is priced). Its Permit2 side, if any, is a spender.
        add('recipients', o.third_parties);
        add(
          'tokens',
          (o.gives ?? []).map((g) => g.token),
        );
        addUsd(o.gives_usd ?? null);
        if (o.spender) add('spenders', [o.spender]);
      } else if (TRANSFER_KINDS.has(o.kind)) {
        // A signed transfer: its `to` (reported as the spender) receives; it moves its amount now.
        if (o.spender) add('recipients', [o.spender]);
        add('tokens', o.tokens);
        addUsd(o.usd);
      } else {
        if (o.spender) add('spenders', [o.spender]);
        add('tokens', o.tokens);
        const until = o.valid_until === null ? null : Math.floor(Date.parse(o.valid_until) / 1000);
        const permits = facts.permits;
        if (permits !== null)
          o.tokens.forEach((token, i) => {
            permits.push({
              spender: o.spender,
              token,
              unlimited: o.unlimited[i] ?? false,
              usd: o.grants_usd[i] ?? null,
              validUntil: until !== null && Number.isFinite(until) ? until : null,
            });
          });
      }
    }
  }
  if (auth) facts.delegates.push(auth.address.toLowerCase());
  if (kinds[0] === 'declared') {
    const spender = req.spender;
    if (isAddress(spender)) add('spenders', [spender]);
    if (req.action === 'approve') {
      if (facts.approvals !== null && isAddress(spender))
        facts.approvals.push({
          spender: spender.toLowerCase(),
          token: isAddress(req.contract_address) ? req.contract_address.toLowerCase() : 'unknown',
          unlimited: isUnlimited(req.approval_amount),
          usd: typeof req.amount_usd === 'number' ? req.amount_usd : null,
        });
    } else if (!NO_VALUE_ACTIONS.has(req.action)) {
      addUsd(typeof req.amount_usd === 'number' ? req.amount_usd : null);
    }
  }
  facts.delegates = uniq(facts.delegates);
  if (facts.outflowUsd !== null) facts.outflowUsd = Math.round(facts.outflowUsd * 1e6) / 1e6;
  return facts;
}

/** At or above the approval check's threshold (docs/checks.md): what it calls unlimited. */
function isUnlimited(amount: string | null | undefined): boolean {
  const n = toBigInt(amount);
  return n !== null && n >= UNLIMITED_THRESHOLD;
}
