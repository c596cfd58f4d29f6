/**
 * The screening rules (docs/screening.md §4), pure: an address with its roles against the lists in
 * use and the known counterparties. The sweeper rule needs the chain and lives in the check module
 * (src/checks/counterparty_screen.ts); everything here is in memory and takes microseconds.
 */
import type { ListKind, ListTag } from './list.js';

/** What an address is to the action. */
export type Role = 'to' | 'recipient' | 'spender' | 'verifying_contract' | 'delegate' | 'contract';
export const ROLES: readonly Role[] = ['to', 'recipient', 'spender', 'verifying_contract', 'delegate', 'contract'];

/** A list's hit on an address. */
export interface ListHit {
  list: string;
  kind: ListKind;
  date: string | null;
  tag: ListTag;
}

/** Two hex digit counts: how many leading and trailing hex digits two addresses share. */
export interface Likeness {
  known: string;
  prefix: number;
  suffix: number;
}

/** Lookalike thresholds: 8 or more hex digits alike at the two ends together, at least 2 at each end. */
export const LOOKALIKE = Object.freeze({ minTotal: 8, minEachEnd: 2 });

/** Leading and trailing hex digits `a` and `b` (lowercase 0x forms) share. */
export function likeness(a: string, b: string): { prefix: number; suffix: number } {
  let prefix = 0;
  while (prefix < 40 && a.charCodeAt(2 + prefix) === b.charCodeAt(2 + prefix)) prefix++;
  let suffix = 0;
  while (suffix < 40 - prefix && a.charCodeAt(41 - suffix) === b.charCodeAt(41 - suffix)) suffix++;
  return { prefix, suffix };
}

/** Whether a likeness makes a lookalike: the same first 4 and last 4 digits, or 8+ together with 2+ at each end. */
export function isLookalike(l: { prefix: number; suffix: number }): boolean {
  return (
    l.prefix < 40 &&
    l.prefix >= LOOKALIKE.minEachEnd &&
    l.suffix >= LOOKALIKE.minEachEnd &&
    l.prefix + l.suffix >= LOOKALIKE.minTotal
  );
}

/** The bucket of an address in a book: its first two and last two hex digits, shared by any lookalike. */
const bucketOf = (a: string): string => a.slice(2, 4) + a.slice(40, 42);

/**
 * Known counterparties, indexed for the lookalike test: an address is only compared with the
 * known ones that share its first two and last two hex digits (a lookalike must), so a book of
 * 100,000 addresses costs a handful of comparisons per address.
 */
export class KnownBook {
  readonly #all = new Set<string>();
  readonly #buckets = new Map<string, string[]>();

  constructor(addresses: Iterable<string> = []) {
    for (const a of addresses) this.add(a);
  }

  add(address: string): void {
    const a = address.toLowerCase();
    if (this.#all.has(a)) return;
    this.#all.add(a);
    const b = bucketOf(a);
    const list = this.#buckets.get(b);
    if (list) list.push(a);
    else this.#buckets.set(b, [a]);
  }

  has(address: string): boolean {
    return this.#all.has(address);
  }

  get size(): number {
    return this.#all.size;
  }

  /** The known addresses `address` is a lookalike of, closest first. */
  lookalikesOf(address: string): Likeness[] {
    const out: Likeness[] = [];
    for (const k of this.#buckets.get(bucketOf(address)) ?? []) {
      if (k === address) continue;
      const l = likeness(address, k);
      if (isLookalike(l)) out.push({ known: k, ...l });
    }
    return out.sort((x, y) => y.prefix + y.suffix - (x.prefix + x.suffix));
  }
}

export interface AddressScreen {
  address: string;
  roles: Role[];
  sanctioned: ListHit | null;
  blocklisted: ListHit[];
  /** Empty when the address is itself known. */
  lookalikes: Likeness[];
  known: boolean;
}

/**
 * Screens one address (lowercase) against the lists and the known counterparties (several books:
 * the request's, the policy's sets, the account's learned ones). A known counterparty is never a
 * lookalike of another.
 */
export function screenAddress(
  address: string,
  roles: Role[],
  find: (address: string) => ListHit[],
  books: readonly KnownBook[],
): AddressScreen {
  const hits = find(address);
  const known = books.some((b) => b.has(address));
  const lookalikes = known ? [] : books.flatMap((b) => b.lookalikesOf(address));
  const seen = new Set<string>();
  return {
    address,
    roles,
    sanctioned: hits.find((h) => h.kind === 'sanctions') ?? null,
    blocklisted: hits.filter((h) => h.kind === 'blocklist'),
    lookalikes: lookalikes.filter((l) => !seen.has(l.known) && seen.add(l.known)),
    known,
  };
}

/** The reason codes of a screened address, worst first. */
export function reasonsOf(s: AddressScreen, sweeper: boolean): string[] {
  const out: string[] = [];
  if (s.sanctioned) out.push('sanctioned_address');
  if (s.blocklisted.length > 0) out.push('blocklisted_address');
  if (s.lookalikes.length > 0) out.push('address_lookalike');
  if (sweeper) out.push('recipient_delegated_to_sweeper');
  return out;
}

/** One sentence per fail reason of an address, with the facts. */
export function screenMessage(s: AddressScreen, sweeperDelegate: string | null): string {
  const as = `${s.address} (${s.roles.join(', ')})`;
  const parts: string[] = [];
  if (s.sanctioned) {
    const t = s.sanctioned.tag;
    const who = t.name ? ` as ${t.name}${t.uid ? ` (SDN uid ${t.uid})` : ''}` : t.uid ? ` (SDN uid ${t.uid})` : '';
    const assets = t.assets?.length ? `, tagged ${t.assets.join(', ')}` : '';
    parts.push(
      `${as} is on the ${s.sanctioned.list} sanctions list${s.sanctioned.date ? ` of ${s.sanctioned.date}` : ''}${who}${assets}.`,
    );
  }
  for (const b of s.blocklisted)
    parts.push(`${as} is on the blocklist ${b.list}${b.tag.reason ? `: ${b.tag.reason}` : ''}.`);
  if (s.lookalikes.length > 0) {
    const l = s.lookalikes[0];
    parts.push(
      `${as} is not a known counterparty but looks like the known ${l.known}: ${l.prefix} leading and ${l.suffix} trailing hex digits alike, the mark of address poisoning.`,
    );
  }
  if (sweeperDelegate)
    parts.push(
      `${as} is delegated (EIP-7702) to ${sweeperDelegate}, whose code forwards what the account receives: a payment to it is swept.`,
    );
  return parts.join(' ');
}
