/**
 * Policy documents (docs/policies.md §2): what is checked beyond the schema, how a document is
 * stored (addresses and selectors lower-cased, nothing else changed) and its hash, keccak256 of
 * its RFC 8785 canonical JSON, which anyone can recompute from the stored document.
 */
import canonicalize from 'canonicalize';
import { keccak256 } from '../crypto/keccak.js';
import type { PolicyDocument } from '../generated/types.js';

export type { PolicyDocument };
export type PolicyRule = NonNullable<PolicyDocument['rules']>[number];
export type RuleMatch = NonNullable<PolicyRule['match']>;
export type PolicyLimit = NonNullable<PolicyDocument['limits']>[number];

/** The match fields that take addresses and `$set` names (docs/policies.md §2). */
export const LIST_FIELDS = ['to', 'recipients', 'spenders', 'delegates', 'tokens'] as const;
export type ListField = (typeof LIST_FIELDS)[number];

export const POLICY_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** A problem the schema cannot state, FastAPI-style (the same shape as a schema error). */
export interface DocumentProblem {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/**
 * What a schema-valid document must also hold: unique rule and limit ids, at least one bound per
 * limit, and every `$set` a rule names defined in `address_sets`. Every problem, in document order.
 */
export function documentProblems(doc: PolicyDocument): DocumentProblem[] {
  const out: DocumentProblem[] = [];
  const sets = new Set(Object.keys(doc.address_sets ?? {}));
  const ruleIds = new Set<string>();
  (doc.rules ?? []).forEach((rule, i) => {
    if (ruleIds.has(rule.id))
      out.push({ loc: ['body', 'rules', i, 'id'], msg: `Rule id '${rule.id}' is used twice`, type: 'value_error' });
    ruleIds.add(rule.id);
    for (const field of LIST_FIELDS) {
      (rule.match?.[field] ?? []).forEach((v, j) => {
        if (v.startsWith('$') && !sets.has(v.slice(1)))
          out.push({
            loc: ['body', 'rules', i, 'match', field, j],
            msg: `Address set '${v.slice(1)}' is not defined in address_sets`,
            type: 'unknown_set',
          });
      });
    }
  });
  const limitIds = new Set<string>();
  (doc.limits ?? []).forEach((limit, i) => {
    if (limitIds.has(limit.id))
      out.push({ loc: ['body', 'limits', i, 'id'], msg: `Limit id '${limit.id}' is used twice`, type: 'value_error' });
    limitIds.add(limit.id);
    if (limit.max_usd === undefined && limit.max_count === undefined)
      out.push({
        loc: ['body', 'limits', i],
        msg: 'A limit needs at least one bound: max_usd, max_count or both',
        type: 'missing',
      });
  });
  return out;
}

const lower = (v: string): string => (v.startsWith('$') ? v : v.toLowerCase());

/** The document as stored: every address and selector lower-cased, `$set` names and everything else as given. */
export function normalizeDocument(doc: PolicyDocument): PolicyDocument {
  const out: PolicyDocument = { ...doc };
  if (doc.address_sets !== undefined)
    out.address_sets = Object.fromEntries(
      Object.entries(doc.address_sets).map(([k, list]) => [k, list.map((a) => a.toLowerCase())]),
    );
  if (doc.rules !== undefined)
    out.rules = doc.rules.map((r) => {
      if (r.match === undefined) return r;
      const m: RuleMatch = { ...r.match };
      for (const f of LIST_FIELDS) if (m[f] !== undefined) m[f] = (m[f] as string[]).map(lower);
      if (m.selectors !== undefined) m.selectors = m.selectors.map((s) => s.toLowerCase());
      return { ...r, match: m };
    });
  return out;
}

/** RFC 8785 canonical JSON of a (schema-valid) document. */
export function canonicalJson(doc: PolicyDocument): string {
  const text = canonicalize(doc);
  if (text === undefined) throw new TypeError('a policy document must be a JSON object');
  return text;
}

/** `0x` + keccak256 of the UTF-8 bytes of the document's canonical JSON. */
export function policyHash(doc: PolicyDocument): string {
  return `0x${keccak256(Buffer.from(canonicalJson(doc), 'utf8')).toString('hex')}`;
}
