/**
 * Keyword matching and status-page reading for bridge_exploit_monitor. Whole words, any case:
 * "paused" matches "Bridge PAUSED." but not "unpaused"; "hack" is left out of the defaults
 * because it names hackathons (docs/rules.md §2).
 */

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

/** The keywords found in `text` as whole words (letters, digits and `_` do not border a match). */
export function findKeywords(text: string, keywords: readonly string[]): string[] {
  const found: string[] = [];
  for (const k of keywords) {
    const re = new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(k)}(?![\\p{L}\\p{N}_])`, 'iu');
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
