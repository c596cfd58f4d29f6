/**
 * What a check or a handler reads of the screening state (src/screening/service.ts implements it):
 * the lists in use, a lookup, the staleness rule, and the known counterparties.
 */
import type { KnownBook, ListHit } from './rules.js';
import type { LoadedList } from './service.js';

export interface ScreeningView {
  find(address: string): ListHit[];
  lists(): LoadedList[];
  unavailable(): string[];
  stale(): { ageS: number; maxAgeS: number } | null;
  /** The account's learned counterparties (rejects when the store cannot answer). */
  knownOf(account: string): Promise<KnownBook>;
  /** A book of the given addresses. */
  book(addresses: readonly string[]): KnownBook;
}
