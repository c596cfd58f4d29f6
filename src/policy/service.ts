/**
 * Policies at run time (docs/policies.md §3): the current version of a key's policy, from a short
 * cache in front of the store; the evaluation of a guard's action under it, with the limits'
 * atomic check-and-reserve when everything else would proceed; and what the answer becomes.
 */
import type { CheckResult } from '../checks/types.js';
import { type StatusCounts, summaryOpening } from '../engine/decide-response.js';
import type { CheckStatus } from '../wire.js';
import type { GuardRequest } from '../generated/types.js';
import type { Logger } from '../log.js';
import type { LimitUsage, LimitWindow, PolicyVersion, Store } from '../store/types.js';
import type { PolicyDocument } from './document.js';
import {
  compilePolicy,
  evaluateRules,
  policyItem,
  type CompiledPolicy,
  type LimitView,
  type PolicyRef,
  type Violation,
} from './evaluate.js';
import { actionFacts } from './facts.js';
import { PairMap } from '../pair-map.js';
import { exceedsAlone, limitWindows, secondsUntilFits } from './windows.js';

/** How long this process reuses a policy's current version: a new one is honoured everywhere within this. */
export const POLICY_CACHE_MS = 4000;
/** A reservation is released only this long after its verdict's expiry, so no clock skew lets a live verdict lose its budget. */
export const RELEASE_MARGIN_MS = 2000;

export class PolicyUnavailable extends Error {}

/** The judged answer a policy item is added to (a guard response). */
export interface JudgedAnswer {
  verdict: 'proceed' | 'wait' | 'block';
  risk: 'low' | 'medium' | 'high';
  confidence: number;
  expires_in: number;
  decision: Record<string, unknown>;
  evidence: CheckResult[];
  failure_modes: string[];
  checks?: Record<string, CheckStatus>;
  reasoning?: string;
}

export interface Under {
  accountId: string;
  policy: string;
}

export interface DecideInput<A extends JudgedAnswer = JudgedAnswer> {
  under: Under;
  /** The compiled version, or why there is none. */
  policy: CompiledPolicy | 'unavailable' | 'missing';
  body: GuardRequest;
  results: readonly CheckResult[];
  /** The answer without the policy, the caller's own: the policy is added to it in place and it is returned. */
  base: A;
  /** The reservation's id: the answer's attestation id. */
  reservationId: string;
  dryRun: boolean;
  /**
   * Who asked, when the answer is logged (docs/policies.md §10): a reserved answer's row is then
   * written in its reservation's transaction. Absent or null: the caller logs the answer itself.
   */
  log?: VerdictLogAs | null;
}

/** The verdict-log fields of an answer that the policy does not know: the key and the endpoint. */
export interface VerdictLogAs {
  keyId: string;
  keyName: string;
  endpoint: string;
}

export interface PolicyServiceOptions {
  now?: () => number;
  cacheMs?: number;
  logger?: Pick<Logger, 'error' | 'warn'>;
}

const OPENING: Record<string, string> = { proceed: 'Proceed', wait: 'Wait', block: 'Block' };
/** The text with the verdict's word first; a text that opens with it already is returned as it is (no regex). */
const reopen = (text: string, verdict: string): string =>
  text.startsWith(OPENING[verdict]) ? text : text.replace(/^(Proceed|Wait|Block)/, OPENING[verdict]);

interface Cached {
  v: CompiledPolicy | null;
  expires: number;
}

export class PolicyService {
  /** Current versions by account, then policy name. */
  private readonly cache = new PairMap<Cached>();
  private readonly compiled = new Map<string, CompiledPolicy>();
  private readonly now: () => number;
  private readonly cacheMs: number;

  constructor(
    private readonly store: Store,
    private readonly opts: PolicyServiceOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.cacheMs = opts.cacheMs ?? POLICY_CACHE_MS;
  }

  /** A stored version, parsed and compiled once per (name, version, hash). */
  compile(v: PolicyVersion): CompiledPolicy {
    const key = `${v.name}\u0000${v.version}\u0000${v.hash}`;
    let c = this.compiled.get(key);
    if (!c) {
      c = compilePolicy({ name: v.name, version: v.version, hash: v.hash }, JSON.parse(v.document) as PolicyDocument);
      if (this.compiled.size > 10_000) this.compiled.clear();
      this.compiled.set(key, c);
    }
    return c;
  }

  /** The policy's current version (null: none of that name); throws PolicyUnavailable when the store cannot answer. */
  async current(u: Under): Promise<CompiledPolicy | null> {
    const hit = this.cache.get(u.accountId, u.policy);
    const t = this.now();
    if (hit && hit.expires > t) return hit.v;
    let v: PolicyVersion | null;
    try {
      v = await this.store.getPolicy(u.accountId, u.policy);
    } catch (err) {
      throw new PolicyUnavailable('the policy store cannot be read', { cause: err });
    }
    const c = v === null ? null : this.compile(v);
    this.cache.set(u.accountId, u.policy, { v: c, expires: t + this.cacheMs });
    return c;
  }

  /**
   * The current version or the reason there is none, for a guard under `u`: at once while this
   * process's copy is fresh (every answer of a busy key, without a promise and its turns), else a
   * promise of it.
   */
  load(u: Under): CompiledPolicy | 'missing' | Promise<CompiledPolicy | 'unavailable' | 'missing'> {
    const hit = this.cache.get(u.accountId, u.policy);
    if (hit && hit.expires > this.now()) return hit.v ?? 'missing';
    return this.current(u).then(
      (c) => c ?? 'missing',
      () => 'unavailable' as const,
    );
  }

  /**
   * The address sets of the policy a key answers under (`{}` when it has none or no policy), for
   * checks that screen counterparties against them. Throws PolicyUnavailable when the store
   * cannot answer.
   */
  async addressSets(u: Under | null): Promise<Readonly<Record<string, readonly string[]>>> {
    if (u === null) return {};
    return (await this.current(u))?.document.address_sets ?? {};
  }

  /** Drops the cached version of a policy: this process honours a new one at once. */
  forget(u: Under): void {
    this.cache.delete(u.accountId, u.policy);
  }

  /** The guard's answer under the policy: the `policy` item added, the verdict it implies, the limits reserved. */
  async decide<A extends JudgedAnswer>(i: DecideInput<A>): Promise<A> {
    const started = performance.now();
    if (i.policy === 'unavailable' || i.policy === 'missing') {
      const why =
        i.policy === 'missing'
          ? `the key's policy ${i.under.policy} does not exist`
          : `the store holding policy ${i.under.policy} cannot be read`;
      const item = policyItem({
        policy: null,
        violations: [
          {
            code: 'policy_unavailable',
            status: 'error',
            observed: null,
            bound: null,
            message: `${why}; retry shortly.`,
          },
        ],
        matchedRule: null,
        limits: [],
        outflowUsd: null,
        reservedUsd: null,
        latencyMs: performance.now() - started,
      });
      return applyPolicy(i.base, item, null, i.dryRun);
    }
    const p = i.policy;
    const ref = p.ref;
    const now = this.now();
    const facts = actionFacts(i.body, i.results);
    const { violations, matchedRule } = evaluateRules(p, facts, Math.floor(now / 1000));
    let limits: LimitView[] = [];
    let reservedUsd: number | null = null;
    let retryAfterS: number | undefined;
    if (violations.length === 0 && i.base.verdict === 'proceed' && p.limits.length > 0) {
      const usd = facts.outflowUsd ?? 0;
      let alone = false;
      for (const l of p.limits) {
        if (!exceedsAlone(l, usd)) continue;
        alone = true;
        violations.push({
          code: 'policy_limit_exceeded',
          status: 'fail',
          limit: l.id,
          observed: usd,
          bound: { max_usd: l.max_usd ?? null, max_count: l.max_count ?? null },
          message: `Limit ${l.id} allows ${l.max_usd !== undefined ? `at most $${l.max_usd}` : `${l.max_count} actions`} per window; this action alone (${usd} USD) is more.`,
        });
      }
      if (!alone) {
        const windows = windowsAt(p, now);
        const tx = i.body.transaction ?? null;
        try {
          const r = await this.store.reserve({
            id: i.reservationId,
            accountId: i.under.accountId,
            policy: p.name,
            limits: windows,
            usd,
            at: now,
            // A transaction may go unexecuted: it is released after expiry when the account did not use it.
            expiresAt: tx ? now + i.base.expires_in * 1000 + RELEASE_MARGIN_MS : null,
            chain: i.body.chain ?? 'base',
            actor: tx ? tx.from.toLowerCase() : null,
            dryRun: i.dryRun,
            // Accepted, the answer is the base verdict with the policy item passing: its row is known now.
            verdict:
              i.log && !i.dryRun
                ? {
                    id: i.reservationId,
                    accountId: i.under.accountId,
                    at: now,
                    keyId: i.log.keyId,
                    keyName: i.log.keyName,
                    endpoint: i.log.endpoint,
                    verdict: i.base.verdict,
                    risk: i.base.risk,
                    failureModes: i.base.failure_modes,
                    policy: ref,
                    reservedUsd: usd,
                  }
                : null,
          });
          if (r.ok && !i.dryRun) reservedUsd = usd;
          limits = limitViews(p, r.usage, reservedUsd);
          if (!r.ok) {
            let wait = 1;
            for (const f of r.full) {
              const l = p.limits.find((x) => x.id === f.id);
              if (!l) continue;
              wait = Math.max(wait, secondsUntilFits(l, windows[p.limits.indexOf(l)], f.buckets, usd, now));
              const u = r.usage[p.limits.indexOf(l)];
              violations.push({
                code: 'policy_limit_exceeded',
                status: 'warn',
                limit: l.id,
                observed: { used_usd: u.committedUsd + u.reservedUsd, count: u.count, action_usd: usd },
                bound: { max_usd: l.max_usd ?? null, max_count: l.max_count ?? null },
                message: `Limit ${l.id} is full for now (${fmt(u.committedUsd + u.reservedUsd)} of ${l.max_usd !== undefined ? fmt(l.max_usd) : 'no USD bound'}, ${u.count} of ${l.max_count ?? 'any number of'} actions); this action fits in ${wait} s.`,
              });
            }
            retryAfterS = wait;
          }
        } catch (err) {
          this.opts.logger?.error({ err }, 'limit reservation failed');
          violations.push({
            code: 'policy_unavailable',
            status: 'error',
            observed: null,
            bound: null,
            message: "the policy's limits cannot be checked (the store does not answer); retry shortly.",
          });
        }
      }
    }
    const item = policyItem({
      policy: ref,
      violations,
      matchedRule,
      limits,
      outflowUsd: facts.outflowUsd,
      reservedUsd,
      retryAfterS,
      latencyMs: performance.now() - started,
    });
    return applyPolicy(i.base, item, ref, i.dryRun);
  }
}

/** The windows last made for a policy, and the span of time [from, until) they hold for. */
const WINDOWS = new WeakMap<CompiledPolicy, { from: number; until: number; windows: LimitWindow[] }>();

/**
 * The policy's limit windows at `now` (./windows.ts), made once per span in which they stay the
 * same: a calendar window's until its end, a rolling window's until its next bucket begins or its
 * oldest bucket leaves. The array and its objects are shared by the reservations made in that
 * span, so they are frozen.
 */
export function windowsAt(p: CompiledPolicy, now: number): LimitWindow[] {
  const hit = WINDOWS.get(p);
  if (hit !== undefined && now >= hit.from && now < hit.until) return hit.windows;
  const windows = limitWindows(p.limits, now);
  for (const l of windows) Object.freeze(l);
  Object.freeze(windows);
  let until = Number.POSITIVE_INFINITY;
  for (let k = 0; k < windows.length; k++) {
    const w = p.limits[k].window;
    const l = windows[k];
    if (typeof w === 'string') until = Math.min(until, l.bucket + l.step);
    else {
      // The bucket changes at the next multiple of the step; the oldest counted bucket when
      // `now - window` reaches the next one.
      until = Math.min(until, l.bucket + l.step, l.from + l.step + w.rolling_s * 1000);
    }
  }
  WINDOWS.set(p, { from: now, until, windows });
  return windows;
}

const fmt = (n: number): string => `$${Math.round(n * 100) / 100}`;

/** Each limit's use after this answer: with its reservation when it made one. */
function limitViews(p: CompiledPolicy, usage: LimitUsage[], reserved: number | null): LimitView[] {
  return p.limits.map((l, k) => ({
    id: l.id,
    used_usd: Math.round((usage[k].committedUsd + usage[k].reservedUsd + (reserved ?? 0)) * 1e6) / 1e6,
    count: usage[k].count + (reserved === null ? 0 : 1),
    max_usd: l.max_usd ?? null,
    max_count: l.max_count ?? null,
  }));
}

/**
 * The answer with the policy item: a fail blocks; a warn or an error waits (unless the checks
 * already block), whatever `strict_mode` says; `decision.policy` names the version. `base` is the
 * caller's own answer and is changed in place (its decision, counts and checks; the evidence is a
 * new array, since the caller's results may be it): spreading those objects per answer cost more
 * than the rest of the policy's judgement.
 */
export function applyPolicy<A extends JudgedAnswer>(
  base: A,
  item: CheckResult,
  ref: PolicyRef | null,
  dryRun: boolean,
): A {
  const out = base;
  const decision = out.decision;
  decision.policy = ref;
  if (dryRun) decision.dry_run = true;
  out.evidence = [...out.evidence, item];
  if (item.status !== 'pass') out.failure_modes = [...out.failure_modes, `policy:${item.reason}`];
  if (out.checks) out.checks.policy = item.status;
  const counts = decision.counts as StatusCounts | undefined;
  const was = out.verdict;
  // The summary's opening as the checks left it, to be told again with the policy item counted.
  const total = counts
    ? (counts.pass ?? 0) + (counts.warn ?? 0) + (counts.fail ?? 0) + (counts.error ?? 0) + (counts.skipped ?? 0)
    : 0;
  const opening = counts ? summaryOpening(was, counts, total) : null;
  if (counts) counts[item.status] = (counts[item.status] ?? 0) + 1;
  if (item.status === 'fail') {
    out.verdict = 'block';
    out.risk = 'high';
    out.confidence = Math.max(out.confidence, 0.9);
    out.expires_in = was === 'block' ? Math.min(out.expires_in, item.ttl_s) : item.ttl_s;
    delete decision.retry_after_s;
  } else if ((item.status === 'warn' || item.status === 'error') && was !== 'block') {
    const retry = item.status === 'warn' ? item.ttl_s : (item.retry_after_s ?? 5);
    const before = decision.retry_after_s;
    out.verdict = 'wait';
    out.risk = 'medium';
    decision.retry_after_s = was === 'wait' && typeof before === 'number' ? Math.max(before, retry) : retry;
  }
  decision.verdict = out.verdict;
  if (typeof decision.summary === 'string') {
    const summary = decision.summary;
    if (counts && opening !== null && summary.startsWith(opening)) {
      // What decided the answer: the policy item when it is what moved the verdict (or the checks
      // had nothing to say), else what the checks said.
      const moved = item.status !== 'pass' && (out.verdict !== was || summary.length === opening.length);
      const why = moved ? ` ${item.message}` : summary.slice(opening.length);
      decision.summary = `${summaryOpening(out.verdict, counts, total + 1)}${why}`;
    } else decision.summary = reopen(summary, out.verdict);
  }
  if (out.reasoning !== undefined)
    out.reasoning = `${reopen(out.reasoning, out.verdict)} ${item.name} ${item.status}: ${item.message}`;
  return out;
}

export type { Violation };
