/**
 * Evaluation of a policy against one action (docs/policies.md §3): the rules, the approvals and
 * the USD bounds in the contract's order, every violation collected, and the `policy` evidence item
 * built from them. Pure; the limits' reservation (step 6) is the caller's, with the store
 * (src/policy/service.ts), since it happens only when everything else would proceed.
 */
import type { CheckResult } from '../checks/types.js';
import { fmtUsd } from '../format.js';
import { JSON_TEXT, frozenText, jsonString, type CheckStatus } from '../wire.js';
import type { ActionFacts } from './facts.js';
import { LIST_FIELDS, type ListField, type PolicyDocument, type PolicyLimit, type PolicyRule } from './document.js';

export type PolicyReason =
  | 'policy_chain_not_allowed'
  | 'policy_rule_blocked'
  | 'policy_no_rule_matched'
  | 'policy_unlimited_approval'
  | 'policy_approval_exceeds_max'
  | 'policy_permit_lifetime_exceeds_max'
  | 'policy_value_unknown'
  | 'policy_limit_exceeded'
  | 'policy_unavailable';

export interface Violation {
  code: PolicyReason;
  status: Exclude<CheckStatus, 'pass' | 'skipped'>;
  rule?: string;
  limit?: string;
  observed: unknown;
  bound: unknown;
  message: string;
}

/** The version an answer was made under: `decision.policy`. */
export interface PolicyRef {
  name: string;
  version: number;
  hash: string;
}

type Tri = true | false | 'unknown';

interface CompiledRule {
  id: string;
  effect: 'allow' | 'block';
  lists: Array<[ListField, ReadonlySet<string>]>;
  kinds: ReadonlySet<string> | null;
  actions: ReadonlySet<string> | null;
  chains: ReadonlySet<string> | null;
  selectors: ReadonlySet<string> | null;
  maxUsd: number | null;
}

/** A stored version, parsed once, with its `$set` names expanded. */
export interface CompiledPolicy extends PolicyRef {
  /** The version as `decision.policy` names it: one frozen object, shared by every answer under it. */
  ref: Readonly<PolicyRef>;
  document: PolicyDocument;
  rules: CompiledRule[];
  limits: PolicyLimit[];
  /** The USD bound some limit puts on the outflow, if any. */
  limitsBoundUsd: boolean;
}

export function compilePolicy(ref: PolicyRef, document: PolicyDocument): CompiledPolicy {
  const sets = document.address_sets ?? {};
  const expand = (values: string[]): Set<string> => {
    const out = new Set<string>();
    for (const v of values) {
      if (v.startsWith('$')) for (const a of sets[v.slice(1)] ?? []) out.add(a.toLowerCase());
      else out.add(v.toLowerCase());
    }
    return out;
  };
  const set = (xs: string[] | undefined): Set<string> | null => (xs === undefined ? null : new Set(xs));
  const rules = (document.rules ?? []).map((r: PolicyRule): CompiledRule => {
    const m = r.match ?? {};
    const lists: Array<[ListField, ReadonlySet<string>]> = [];
    for (const f of LIST_FIELDS) if (m[f] !== undefined) lists.push([f, expand(m[f] as string[])]);
    return {
      id: r.id,
      effect: r.effect,
      lists,
      kinds: set(m.kinds),
      actions: set(m.actions),
      chains: set(m.chains),
      selectors: m.selectors === undefined ? null : new Set(m.selectors.map((s) => s.toLowerCase())),
      maxUsd: m.max_usd ?? null,
    };
  });
  const limits = document.limits ?? [];
  return {
    ...ref,
    ref: Object.freeze({ name: ref.name, version: ref.version, hash: ref.hash }),
    document,
    rules,
    limits,
    limitsBoundUsd: limits.some((l) => l.max_usd !== undefined),
  };
}

/**
 * A list field of an allow rule matches when the action shows at least one value and all are
 * listed; of a block rule, when any value shown is listed (docs/policies.md §2).
 */
function listMatch(effect: 'allow' | 'block', listed: ReadonlySet<string>, shown: readonly string[] | null): Tri {
  if (shown === null) return 'unknown';
  if (effect === 'allow') return shown.length > 0 && shown.every((v) => listed.has(v));
  return shown.some((v) => listed.has(v));
}

function ruleMatch(r: CompiledRule, f: ActionFacts): Tri {
  let unknown = false;
  const fold = (t: Tri): boolean => {
    if (t === 'unknown') unknown = true;
    return t === false;
  };
  if (r.kinds && fold(listMatch(r.effect, r.kinds, f.kinds))) return false;
  if (r.actions && fold(listMatch(r.effect, r.actions, [f.action]))) return false;
  if (r.chains && fold(listMatch(r.effect, r.chains, [f.chain]))) return false;
  if (r.selectors && fold(listMatch(r.effect, r.selectors, f.selectors))) return false;
  for (const [field, listed] of r.lists) {
    const shown = field === 'to' ? f.to : field === 'delegates' ? f.delegates : f[field];
    if (fold(listMatch(r.effect, listed, shown))) return false;
  }
  if (r.maxUsd !== null && fold(f.outflowUsd === null ? 'unknown' : f.outflowUsd <= r.maxUsd)) return false;
  return unknown ? 'unknown' : true;
}

const unreadable = (f: ActionFacts): string =>
  f.unreadable.length > 0 ? `${f.unreadable.join(' and ')} could not be read` : 'the outflow has no USD value';

export interface RulesOutcome {
  violations: Violation[];
  /** The allow rule that covers the action, if one does. */
  matchedRule: string | null;
}

/** Steps 1 to 5 of docs/policies.md §3, every violation in order. */
export function evaluateRules(p: CompiledPolicy, f: ActionFacts, nowS: number): RulesOutcome {
  const doc = p.document;
  const v: Violation[] = [];
  // 1. chains
  if (doc.chains !== undefined && !doc.chains.includes(f.chain))
    v.push({
      code: 'policy_chain_not_allowed',
      status: 'fail',
      observed: f.chain,
      bound: doc.chains,
      message: `Chain ${f.chain} is not among the policy's chains (${doc.chains.join(', ') || 'none'}).`,
    });
  // 2. block rules
  const unknownRules: string[] = [];
  for (const r of p.rules) {
    if (r.effect !== 'block') continue;
    const m = ruleMatch(r, f);
    if (m === true)
      v.push({
        code: 'policy_rule_blocked',
        status: 'fail',
        rule: r.id,
        observed: r.id,
        bound: null,
        message: `Block rule ${r.id} matches this action.`,
      });
    else if (m === 'unknown') unknownRules.push(r.id);
  }
  // 3. allow rules
  let matchedRule: string | null = null;
  const undecided: string[] = [];
  for (const r of p.rules) {
    if (r.effect !== 'allow') continue;
    const m = ruleMatch(r, f);
    if (m === true) {
      matchedRule = r.id;
      break;
    }
    if (m === 'unknown') undecided.push(r.id);
  }
  if (matchedRule === null && undecided.length === 0 && (doc.default ?? 'block') === 'block')
    v.push({
      code: 'policy_no_rule_matched',
      status: 'fail',
      observed: describeAction(f),
      bound: null,
      message: `No allow rule covers this action (${describeAction(f)}) and the policy's default is block.`,
    });
  // 4. approvals and permits
  const a = doc.approvals ?? {};
  const grants = f.approvals === null || f.permits === null ? null : [...f.approvals, ...f.permits];
  if (grants !== null) {
    for (const g of grants) {
      if (g.unlimited && a.allow_unlimited !== true)
        v.push({
          code: 'policy_unlimited_approval',
          status: 'fail',
          observed: { token: g.token, spender: g.spender },
          bound: { allow_unlimited: false },
          message: `An unlimited ${'validUntil' in g ? 'permit' : 'approval'} of ${g.token} to ${g.spender ?? 'an unknown spender'}; the policy allows none.`,
        });
      else if (!g.unlimited && a.max_usd !== undefined && g.usd !== null && g.usd > a.max_usd)
        v.push({
          code: 'policy_approval_exceeds_max',
          status: 'fail',
          observed: g.usd,
          bound: a.max_usd,
          message: `An approval worth ${fmtUsd(g.usd)}, more than the policy's ${fmtUsd(a.max_usd)}.`,
        });
    }
    if (a.max_permit_lifetime_s !== undefined)
      for (const pm of f.permits ?? []) {
        const life = pm.validUntil === null ? null : pm.validUntil - nowS;
        if (life === null || life > a.max_permit_lifetime_s)
          v.push({
            code: 'policy_permit_lifetime_exceeds_max',
            status: 'fail',
            observed: life,
            bound: a.max_permit_lifetime_s,
            message: `A permit valid for ${life === null ? 'ever' : `${life} s`}, longer than the policy's ${a.max_permit_lifetime_s} s.`,
          });
      }
  }
  // 5. what could not be valued or read
  const approvalUnknown =
    grants === null || (a.max_usd !== undefined && grants.some((g) => !g.unlimited && g.usd === null));
  const usdBound =
    p.limitsBoundUsd || (matchedRule !== null && p.rules.find((r) => r.id === matchedRule)?.maxUsd != null);
  for (const id of [...unknownRules, ...(matchedRule === null ? undecided : [])])
    v.push({
      code: 'policy_value_unknown',
      status: 'error',
      rule: id,
      observed: null,
      bound: null,
      message: `Rule ${id} cannot be decided: ${unreadable(f)}.`,
    });
  if (usdBound && f.outflowUsd === null)
    v.push({
      code: 'policy_value_unknown',
      status: 'error',
      observed: null,
      bound: null,
      message: `A USD bound applies but ${unreadable(f)}.`,
    });
  else if (approvalUnknown)
    v.push({
      code: 'policy_value_unknown',
      status: 'error',
      observed: null,
      bound: a.max_usd ?? null,
      message: `The approvals cannot be checked: ${unreadable(f)}.`,
    });
  return { violations: v, matchedRule };
}

function describeAction(f: ActionFacts): string {
  const who = f.recipients && f.recipients.length > 0 ? ` to ${f.recipients.join(', ')}` : '';
  return `${f.action} on ${f.chain} as ${f.kinds.join('+')}${who}`;
}

const SEVERITY: Record<Violation['status'], number> = { fail: 3, warn: 2, error: 1 };

/** How long a policy pass may be reused: the document does not change under a version. */
export const POLICY_TTL_S = 300;

export interface LimitView {
  id: string;
  used_usd: number;
  count: number;
  max_usd: number | null;
  max_count: number | null;
}

export interface ItemInput {
  policy: PolicyRef | null;
  violations: Violation[];
  matchedRule: string | null;
  limits: LimitView[];
  outflowUsd: number | null;
  reservedUsd: number | null;
  /** For a full window: seconds until the action would fit. */
  retryAfterS?: number;
  latencyMs: number;
}

/**
 * The `policy` evidence item: pass with no violation; else the worst violation's status, with the
 * first violation of that status as the reason, and every violation in `observed.violations`.
 */
export function policyItem(i: ItemInput): CheckResult {
  // Written without object spreads: this runs for every answer under a policy, and a literal with
  // a spread is built property by property at run time instead of from its template.
  let top: Violation | null = null;
  for (const v of i.violations) if (top === null || SEVERITY[v.status] > SEVERITY[top.status]) top = v;
  const worst = top;
  const violations: Array<Record<string, unknown>> = [];
  for (const v of i.violations) {
    const o: Record<string, unknown> = { code: v.code };
    if (v.rule !== undefined) o.rule = v.rule;
    if (v.limit !== undefined) o.limit = v.limit;
    o.observed = v.observed;
    o.bound = v.bound;
    violations.push(o);
  }
  const observed = {
    policy: i.policy,
    matched_rule: i.matchedRule,
    outflow_usd: i.outflowUsd,
    reserved_usd: i.reservedUsd,
    violations,
    limits: i.limits,
  };
  const ref = i.policy ? `${i.policy.name} v${i.policy.version}` : 'the key';
  const head = worst === null ? null : i.violations.find((v) => v.status === worst.status);
  const ttl = worst?.status === 'warn' && i.retryAfterS !== undefined ? i.retryAfterS : POLICY_TTL_S;
  const item: CheckResult = {
    name: 'policy',
    type: 'policy',
    status: worst === null ? 'pass' : worst.status,
    reason: head?.code ?? null,
    message:
      head === undefined || head === null
        ? `Policy ${ref} allows this action${i.matchedRule ? ` (rule ${i.matchedRule})` : ''}${i.reservedUsd !== null ? `; ${fmtUsd(i.reservedUsd)} reserved in its limits` : ''}.`
        : `Policy ${ref}: ${head.message}${i.violations.length > 1 ? ` (${i.violations.length} violations)` : ''}`,
    observed,
    expected: null,
    source: 'policy',
    latency_ms: Math.max(0, Math.round(i.latencyMs)),
    cached: false,
    age_s: 0,
    ttl_s: ttl,
  };
  if (worst?.status === 'error') item.retry_after_s = 5;
  Object.defineProperty(item, JSON_TEXT, ITEM_TEXT);
  return item;
}

/**
 * The policy item's JSON text, for sendJson (JSON_TEXT, src/wire.ts): JSON.stringify walking it
 * cost about 2.3 µs an answer, most of it the policy reference's hash and the limits' numbers;
 * written here from its fields, the reference's text made once per version (it is frozen). Made
 * from the fields as they are when the answer is sent; undefined, and the item walked instead,
 * when its keys or its `observed` are not the ones policyItem writes.
 */
const ITEM_TEXT: PropertyDescriptor = {
  get(this: CheckResult): string | undefined {
    return itemText(this);
  },
  enumerable: false,
  configurable: true,
};

const ITEM_KEYS = [
  'name',
  'type',
  'status',
  'reason',
  'message',
  'observed',
  'expected',
  'source',
  'latency_ms',
  'cached',
  'age_s',
  'ttl_s',
  'retry_after_s',
] as const;
const OBSERVED_KEYS = ['policy', 'matched_rule', 'outflow_usd', 'reserved_usd', 'violations', 'limits'] as const;
const LIMIT_KEYS = ['id', 'used_usd', 'count', 'max_usd', 'max_count'] as const;

/** Whether `o`'s own enumerable keys are `keys`, or its first `keys.length - optional` of them, in that order. */
function keysAre(o: object, keys: readonly string[], optional = 0): boolean {
  const own = Object.keys(o);
  if (own.length > keys.length || own.length < keys.length - optional) return false;
  for (let i = 0; i < own.length; i++) if (own[i] !== keys[i]) return false;
  return true;
}

/** JSON.stringify's text of a string, a number, a boolean or null; undefined for anything else. */
function scalarText(v: unknown): string | undefined {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return jsonString(v);
    case 'number':
      return Number.isFinite(v) ? `${v}` : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    default:
      return undefined;
  }
}

const REF_TEXT = new WeakMap<object, string>();

/** The version reference's text: made once per version, whose reference is frozen. */
function refText(ref: unknown): string | undefined {
  if (ref === null) return 'null';
  return typeof ref === 'object' ? frozenText(REF_TEXT, ref, JSON.stringify) : undefined;
}

function limitsText(limits: unknown): string | undefined {
  if (!Array.isArray(limits)) return undefined;
  let out = '[';
  for (let i = 0; i < limits.length; i++) {
    const l = limits[i] as Record<string, unknown> | null;
    if (typeof l !== 'object' || l === null || !keysAre(l, LIMIT_KEYS)) return undefined;
    const id = typeof l.id === 'string' ? jsonString(l.id) : undefined;
    const used = scalarText(l.used_usd);
    const count = scalarText(l.count);
    const maxUsd = scalarText(l.max_usd);
    const maxCount = scalarText(l.max_count);
    if (id === undefined || used === undefined || count === undefined || maxUsd === undefined || maxCount === undefined)
      return undefined;
    out += `${i === 0 ? '' : ','}{"id":${id},"used_usd":${used},"count":${count},"max_usd":${maxUsd},"max_count":${maxCount}}`;
  }
  return `${out}]`;
}

function observedText(o: unknown): string | undefined {
  if (typeof o !== 'object' || o === null || !keysAre(o, OBSERVED_KEYS)) return undefined;
  const obs = o as Record<(typeof OBSERVED_KEYS)[number], unknown>;
  const policy = refText(obs.policy);
  const rule = scalarText(obs.matched_rule);
  const outflow = scalarText(obs.outflow_usd);
  const reserved = scalarText(obs.reserved_usd);
  const violations = Array.isArray(obs.violations)
    ? obs.violations.length === 0
      ? '[]'
      : JSON.stringify(obs.violations)
    : undefined;
  const limits = limitsText(obs.limits);
  if (
    policy === undefined ||
    rule === undefined ||
    outflow === undefined ||
    reserved === undefined ||
    violations === undefined ||
    limits === undefined
  )
    return undefined;
  return `{"policy":${policy},"matched_rule":${rule},"outflow_usd":${outflow},"reserved_usd":${reserved},"violations":${violations},"limits":${limits}}`;
}

function itemText(item: CheckResult): string | undefined {
  if (!keysAre(item, ITEM_KEYS, 1)) return undefined;
  const parts = [
    scalarText(item.name),
    scalarText(item.type),
    scalarText(item.status),
    scalarText(item.reason),
    scalarText(item.message),
    observedText(item.observed),
    item.expected === null ? 'null' : undefined,
    scalarText(item.source),
    scalarText(item.latency_ms),
    scalarText(item.cached),
    scalarText(item.age_s),
    scalarText(item.ttl_s),
  ];
  for (const p of parts) if (p === undefined) return undefined;
  const [name, type, status, reason, message, observed, expected, source, latency, cached, age, ttl] = parts;
  let retry = '';
  if (item.retry_after_s !== undefined) {
    const r = scalarText(item.retry_after_s);
    if (r === undefined) return undefined;
    retry = `,"retry_after_s":${r}`;
  }
  return `{"name":${name},"type":${type},"status":${status},"reason":${reason},"message":${message},"observed":${observed},"expected":${expected},"source":${source},"latency_ms":${latency},"cached":${cached},"age_s":${age},"ttl_s":${ttl}${retry}}`;
}
