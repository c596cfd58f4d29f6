/**
 * Keyword matching and status-page reading for bridge_exploit_monitor. Whole words, any case:
 * "paused" matches "Bridge PAUSED." but not "unpaused"; "hack" is left out of the defaults
 * because it names hackathons (docs/rules.md §2).
 */
import { OldestFirst } from '../oldest-first.js';

export const DEFAULT_DANGER_KEYWORDS: readonly string[] = Object.freeze([
  'exploit',
  'exploits',
  'exploited',
  'exploiter',
  'hacked',
  'hacker',
  'hackers',
  'compromised',
  'drain',
  'drained',
  'draining',
  'theft',
  'stolen',
  'pause',
  'paused',
  'pausing',
  'halt',
  'halted',
  'halting',
  'suspend',
  'suspended',
  'suspending',
  'breach',
  'breaches',
  'breached',
  'attacker',
  'attackers',
  'unauthorized',
  'abnormal',
  'abnormally',
  'incident',
  'emergency',
]);

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Neither side of a match may touch a letter, a digit or `_`. */
const BEFORE = '(?<![\\p{L}\\p{N}_])';
const AFTER = '(?![\\p{L}\\p{N}_])';

/**
 * Compiled patterns, kept: each used to be built again for every page, and a page's search was
 * one pass over its text per keyword. Keyed by the keyword, or by the list's JSON text (a list
 * held for the service's life, such as the defaults, by the list itself); a request's own lists are
 * bounded by the schema (64 keywords of at most 128 characters), and these maps by CACHE_MAX
 * entries, the oldest dropped first.
 */
const CACHE_MAX = 1024;
const ONE = new OldestFirst(new Map<string, RegExp>());
const ANY = new OldestFirst(new Map<string, RegExp>());
const ANY_OF_LIST = new WeakMap<readonly string[], RegExp>();

const cached = (cache: OldestFirst<string, RegExp>, key: string, source: () => string): RegExp =>
  cache.remember(key, CACHE_MAX, () => new RegExp(source(), 'iu'));

/**
 * The keywords found in `text` as whole words (letters, digits and `_` do not border a match).
 * One pass with every keyword as an alternative tells whether any is there: a page that names none,
 * the usual case, is read once instead of once per keyword. The alternation finds a match wherever
 * any single keyword's pattern would, so the answer is the same; only a page that names one is
 * searched keyword by keyword, for the list in order.
 */
export function findKeywords(text: string, keywords: readonly string[]): string[] {
  if (keywords.length === 0) return [];
  let any = ANY_OF_LIST.get(keywords);
  if (any === undefined) {
    any = cached(ANY, JSON.stringify(keywords), () => `${BEFORE}(?:${keywords.map(escapeRegExp).join('|')})${AFTER}`);
    if (Object.isFrozen(keywords)) ANY_OF_LIST.set(keywords, any);
  }
  if (!any.test(text)) return [];
  const found: string[] = [];
  for (const k of keywords) {
    const re = cached(ONE, k, () => `${BEFORE}${escapeRegExp(k)}${AFTER}`);
    if (re.test(text) && !found.includes(k)) found.push(k);
  }
  return found;
}

/** Visible text of an HTML page: scripts, styles and tags removed, so markup names do not match. */
export function visibleText(body: string): string {
  return body
    .replace(/<(script|style|noscript)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&nbsp;/gi, ' ');
}

export interface StatusPage {
  indicator: string;
  description: string | null;
  /** Names and update bodies of incidents not yet resolved. */
  unresolvedText: string[];
  unresolvedCount: number;
}

const RESOLVED = new Set(['resolved', 'postmortem', 'completed']);

/** Reads a statuspage-style JSON body (`status.indicator`); null when the body is not one. */
export function parseStatusPage(text: string): StatusPage | null {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('{')) return null;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return null;
  }
  const status = (doc as { status?: unknown }).status;
  if (typeof status !== 'object' || status === null) return null;
  const indicator = (status as { indicator?: unknown }).indicator;
  if (typeof indicator !== 'string') return null;
  const description = (status as { description?: unknown }).description;
  const incidents = (doc as { incidents?: unknown }).incidents;
  const unresolved = (Array.isArray(incidents) ? incidents : []).filter(
    (i): i is Record<string, unknown> =>
      typeof i === 'object' &&
      i !== null &&
      !RESOLVED.has(String((i as { status?: unknown }).status ?? '').toLowerCase()),
  );
  const unresolvedText: string[] = [];
  for (const inc of unresolved) {
    if (typeof inc.name === 'string') unresolvedText.push(inc.name);
    const updates = Array.isArray(inc.incident_updates) ? inc.incident_updates : [];
    for (const u of updates) if (u && typeof u.body === 'string') unresolvedText.push(u.body);
  }
  return {
    indicator: indicator.toLowerCase(),
    description: typeof description === 'string' ? description : null,
    unresolvedText,
    unresolvedCount: unresolved.length,
  };
}
