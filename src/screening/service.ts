/**
 * The screening lists in use and their refresh (docs/screening.md §1, §3), and the book of known
 * counterparties (§5). One per process, on the main thread, where the guard and POST /v1/screen
 * read it.
 *
 * Lists: the sanctions list (the embedded OFAC snapshot until a refresh replaces it) and one
 * blocklist per BLOCKLIST_URLS entry. Every SCREENING_POLL_S an instance reads the lists' heads
 * from the database and loads any version it does not hold, so a fleet answers from one version
 * within a minute. A list due for refresh (its last attempt older than SANCTIONS_REFRESH_S) is
 * refreshed by the one instance that takes its lease in the database; the download and parse run
 * in a thread of their own (worker.ts). A new version replaces the old only when it holds at least
 * one address and has not shrunk by more than half; otherwise the old stays and the list's status
 * says why, fleet-wide, until a later refresh succeeds.
 */
import { randomUUID } from 'node:crypto';
import type { ScreeningConfig } from '../config.js';
import { OldestFirst } from '../oldest-first.js';
import type { ScreeningListRow, ScreeningStatus, Store } from '../store/types.js';
import { listSource } from './fetch.js';
import { type ListKind, type ListTag, type PackedList, findKey, pack } from './list.js';
import { KnownBook, type ListHit } from './rules.js';
import snapshot from './ofac-snapshot.json' with { type: 'json' };
import type { ScreeningView } from './view.js';
import { refreshInThread, type WorkerResult } from './worker.js';

export const SANCTIONS_LIST = 'ofac_sdn';
/** How long an account's learned counterparties are known (docs/screening.md §5). */
export const COUNTERPARTY_DAYS = 90;
/** How long an instance reuses an account's book before reading it again: within the fleet's 5 s. */
export const BOOK_TTL_MS = 4000;
const DAY_MS = 86_400_000;

/** A list's status: `embedded` (the snapshot, not refreshed), `pending` (configured, never loaded), else the last refresh's outcome. */
export type ListStatus = 'embedded' | 'pending' | ScreeningStatus;

export interface LoadedList {
  name: string;
  kind: ListKind;
  source: string;
  date: string | null;
  packed: PackedList;
  /** When the list in use was last confirmed current (unix ms): its last successful fetch, or the snapshot's date. */
  confirmedAt: number;
  /** When the version in use was first stored (unix ms); 0 for the snapshot. */
  changedAt: number;
  /** The last refresh attempt (unix ms); 0: none. */
  checkedAt: number;
  status: ListStatus;
  error: string | null;
  /** False while a configured list has never been loaded: it cannot answer. */
  loaded: boolean;
}

export interface ScreeningEvents {
  refresh?(list: string, outcome: ScreeningStatus): void;
  malformed?(list: string, n: number): void;
  log?(level: 'info' | 'warn', fields: Record<string, unknown>, msg: string): void;
}

export interface ScreeningDeps {
  config: Readonly<ScreeningConfig>;
  store: Store;
  events?: ScreeningEvents;
  now?: () => number;
  /** The refresh itself (tests may run it inline); default: a thread of its own. */
  refresh?: typeof refreshInThread;
}

/** The embedded OFAC snapshot (src/screening/ofac-snapshot.json) as a list. */
export function embeddedSanctions(): LoadedList {
  const packed = pack(
    snapshot.entries.map((e): [string, ListTag] => [e.address, { uid: null, name: null, assets: e.assets }]),
  );
  return {
    name: SANCTIONS_LIST,
    kind: 'sanctions',
    source: `${snapshot.source} (commit ${snapshot.commit})`,
    date: snapshot.date,
    packed,
    confirmedAt: Date.parse(`${snapshot.date}T00:00:00Z`),
    changedAt: 0,
    checkedAt: 0,
    status: 'embedded',
    error: null,
    loaded: true,
  };
}

const emptyPacked = (): PackedList => ({
  keys: new Uint8Array(0),
  tags: new Uint32Array(0),
  table: [],
  size: 0,
  hash: '',
});

interface Configured {
  name: string;
  kind: ListKind;
  url: string;
}

export class Screening implements ScreeningView {
  readonly #config: Readonly<ScreeningConfig>;
  readonly #store: Store;
  readonly #events: ScreeningEvents;
  readonly #now: () => number;
  readonly #refresh: typeof refreshInThread;
  readonly #owner = randomUUID();
  readonly #configured: Configured[];
  /** Lists in use by name; replaced whole, never edited, so a reader always sees one version. */
  #lists = new Map<string, LoadedList>();
  readonly #refreshing = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;
  #ticking: Promise<void> | null = null;
  readonly #books = new Map<string, { at: number; book: Promise<KnownBook> }>();
  readonly #booksOldest = new OldestFirst(this.#books);

  constructor(deps: ScreeningDeps) {
    this.#config = deps.config;
    this.#store = deps.store;
    this.#events = deps.events ?? {};
    this.#now = deps.now ?? Date.now;
    this.#refresh = deps.refresh ?? refreshInThread;
    this.#configured = [
      ...(deps.config.sanctionsListUrl === null
        ? []
        : [{ name: SANCTIONS_LIST, kind: 'sanctions' as const, url: deps.config.sanctionsListUrl }]),
      ...deps.config.blocklistUrls.map((url) => ({ name: listSource(url), kind: 'blocklist' as const, url })),
    ];
    // Two feeds that differ only in their query (or credentials) would share a name: number the later ones.
    const seen = new Map<string, number>();
    for (const c of this.#configured) {
      const n = (seen.get(c.name) ?? 0) + 1;
      seen.set(c.name, n);
      if (n > 1) c.name = `${c.name}#${n}`;
    }
    this.#lists.set(SANCTIONS_LIST, embeddedSanctions());
    for (const c of this.#configured)
      if (c.kind === 'blocklist')
        this.#lists.set(c.name, {
          name: c.name,
          kind: 'blocklist',
          source: listSource(c.url),
          date: null,
          packed: emptyPacked(),
          confirmedAt: 0,
          changedAt: 0,
          checkedAt: 0,
          status: 'pending',
          error: null,
          loaded: false,
        });
  }

  /** Loads the fleet's versions from the database (an instance answers from them at once), then polls. */
  async start(): Promise<void> {
    await this.tick().catch((err) => this.#events.log?.('warn', { err }, 'screening lists not read from the database'));
    this.#timer = setInterval(
      () =>
        void this.tick().catch((err) =>
          this.#events.log?.('warn', { err }, 'screening lists not read from the database'),
        ),
      this.#config.pollS * 1000,
    );
    this.#timer.unref();
  }

  /** Stops polling; a refresh still running is dropped when it ends (its thread exits on its own limits). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#ticking?.catch(() => undefined);
  }

  /** Every list in use, sanctions first. */
  lists(): LoadedList[] {
    return [...this.#lists.values()];
  }

  /** The configured lists that cannot answer yet (never loaded). */
  unavailable(): string[] {
    return this.lists()
      .filter((l) => !l.loaded)
      .map((l) => l.name);
  }

  /** Every list's hit on `address` (lowercase 0x form). */
  find(address: string): ListHit[] {
    const key = Buffer.from(address.slice(2), 'hex');
    const out: ListHit[] = [];
    for (const l of this.#lists.values()) {
      if (l.packed.size === 0) continue;
      const i = findKey(l.packed, key);
      if (i >= 0) out.push({ list: l.name, kind: l.kind, date: l.date, tag: l.packed.table[l.packed.tags[i]] });
    }
    return out;
  }

  /** Seconds since the list was last confirmed current. */
  ageS(l: LoadedList): number | null {
    return l.confirmedAt > 0 ? Math.max(0, Math.floor((this.#now() - l.confirmedAt) / 1000)) : null;
  }

  /** The sanctions list's age when it is over SANCTIONS_MAX_AGE_S, else null. */
  stale(): { ageS: number; maxAgeS: number } | null {
    const max = this.#config.maxAgeS;
    const s = this.#lists.get(SANCTIONS_LIST);
    const age = s ? this.ageS(s) : null;
    return max !== null && age !== null && age > max ? { ageS: age, maxAgeS: max } : null;
  }

  /** `screening.lists` of /v1/capabilities. */
  info(): Array<Record<string, unknown>> {
    return this.lists().map((l) => ({
      name: l.name,
      kind: l.kind,
      source: l.source,
      date: l.date,
      size: l.packed.size,
      hash: l.packed.hash || null,
      refreshed_at: l.confirmedAt > 0 && l.status !== 'embedded' ? new Date(l.confirmedAt).toISOString() : null,
      status: l.status,
    }));
  }

  /** What /health says: degraded while a list's last refresh failed or was refused, or a list never loaded. */
  health(): { status: 'ok' | 'degraded'; lists: Array<Record<string, unknown>> } {
    const bad = this.lists().filter((l) => l.status === 'failed' || l.status === 'refused' || !l.loaded);
    return {
      status: bad.length > 0 ? 'degraded' : 'ok',
      lists: bad.map((l) => ({ name: l.name, status: l.status, age_s: this.ageS(l), error: l.error })),
    };
  }

  /** One poll: load what the fleet stored, then refresh what is due (in the background). */
  tick(): Promise<void> {
    if (this.#ticking) return this.#ticking;
    this.#ticking = this.#poll().finally(() => {
      this.#ticking = null;
    });
    return this.#ticking;
  }

  async #poll(): Promise<void> {
    if (this.#stopped) return;
    const heads = new Map((await this.#store.screeningListHeads()).map((h) => [h.name, h]));
    for (const c of this.#configured) {
      const h = heads.get(c.name);
      const mine = this.#lists.get(c.name);
      if (h && mine) {
        if (h.changedAt > 0 && h.hash !== mine.packed.hash) {
          const row = await this.#store.screeningList(c.name);
          if (row) this.#use(fromRow(row));
        } else {
          const status: ListStatus = h.changedAt === 0 && h.status === 'ok' ? mine.status : h.status;
          this.#lists.set(c.name, {
            ...mine,
            status,
            error: h.error,
            checkedAt: h.checkedAt,
            confirmedAt: h.changedAt > 0 ? h.confirmedAt : mine.confirmedAt,
          });
        }
      }
      const now = this.#now();
      if (!this.#refreshing.has(c.name) && (h?.checkedAt ?? 0) < now - this.#config.refreshS * 1000) {
        const leaseMs = this.#config.fetchTimeoutMs + 30_000;
        if (
          await this.#store.claimScreeningRefresh(c.name, this.#owner, now, leaseMs, now - this.#config.refreshS * 1000)
        )
          void this.refreshNow(c).catch((err) =>
            this.#events.log?.('warn', { err, list: c.name }, 'screening list refresh not recorded'),
          );
      }
    }
  }

  #use(l: LoadedList): void {
    this.#lists.set(l.name, l);
  }

  /** Fetches one list (this instance holds its lease), applies the shrink guard and stores the outcome. */
  async refreshNow(c: Configured): Promise<ScreeningStatus> {
    this.#refreshing.add(c.name);
    try {
      const r: WorkerResult = await this.#refresh({
        url: c.url,
        kind: c.kind,
        maxBytes: this.#config.maxListBytes,
        timeoutMs: this.#config.fetchTimeoutMs,
        stallMs: this.#config.stallMs,
      });
      if (this.#stopped) return 'failed';
      const now = this.#now();
      const old = this.#lists.get(c.name);
      let outcome: ScreeningStatus;
      let error: string | null = null;
      if (!r.ok) {
        outcome = 'failed';
        error = r.message;
      } else {
        this.#events.malformed?.(c.name, r.malformed);
        if (r.packed.size === 0) {
          outcome = 'refused';
          error = `the fetched list holds no valid address (${r.malformed} malformed entries skipped)`;
        } else if (old?.loaded && r.packed.size * 2 < old.packed.size && !this.#config.allowShrink) {
          outcome = 'refused';
          error = `the fetched list has ${r.packed.size} addresses against ${old.packed.size} in use: shrunk by more than half, kept the list in use`;
        } else outcome = 'ok';
      }
      if (outcome === 'ok' && r.ok) {
        const same = old?.packed.hash === r.packed.hash && (old?.changedAt ?? 0) > 0;
        const list: LoadedList = {
          name: c.name,
          kind: c.kind,
          source: listSource(c.url),
          date: r.date,
          packed: r.packed,
          confirmedAt: now,
          changedAt: same ? old!.changedAt : now,
          checkedAt: now,
          status: 'ok',
          error: null,
          loaded: true,
        };
        await this.#store.putScreeningList(toRow(list), this.#owner);
        this.#use(list);
        this.#events.log?.(
          'info',
          {
            list: c.name,
            size: r.packed.size,
            hash: r.packed.hash,
            malformed: r.malformed,
            format: r.format,
            bytes: r.bytes,
          },
          'screening list refreshed',
        );
      } else {
        await this.#store.markScreeningRefresh(c.name, this.#owner, now, outcome, error);
        if (old) this.#use({ ...old, status: outcome, error, checkedAt: now });
        this.#events.log?.(
          'warn',
          { list: c.name, outcome, error, size_in_use: old?.packed.size ?? 0 },
          'screening list refresh did not replace the list',
        );
      }
      this.#events.refresh?.(c.name, outcome);
      return outcome;
    } finally {
      this.#refreshing.delete(c.name);
    }
  }

  /** The account's counterparties of the last 90 days, read at most every 5 s per instance. */
  knownOf(account: string): Promise<KnownBook> {
    const now = this.#now();
    const hit = this.#books.get(account);
    if (hit && now - hit.at < BOOK_TTL_MS) return hit.book;
    const book = this.#store
      .counterparties(account, now - COUNTERPARTY_DAYS * DAY_MS)
      .then((addresses) => new KnownBook(addresses));
    // A failed read is not kept: the next request asks again.
    book.catch(() => this.#books.delete(account));
    if (this.#books.size >= 10_000) this.#booksOldest.evict();
    this.#books.set(account, { at: now, book });
    return book;
  }

  book(addresses: readonly string[]): KnownBook {
    return new KnownBook(addresses);
  }

  /** Counts addresses of an answered proceed as the account's counterparties, from the next answer on. */
  async learn(account: string, addresses: readonly string[]): Promise<void> {
    if (addresses.length === 0) return;
    await this.#store.recordCounterparties(account, addresses, this.#now());
    const hit = this.#books.get(account);
    if (hit) {
      const book = await hit.book.catch(() => null);
      if (book) for (const a of addresses) book.add(a);
    }
  }

  /** Forgets counterparties older than 90 days. */
  prune(): Promise<number> {
    return this.#store.pruneCounterparties(this.#now() - COUNTERPARTY_DAYS * DAY_MS);
  }
}

function toRow(l: LoadedList): ScreeningListRow {
  return {
    name: l.name,
    kind: l.kind,
    source: l.source,
    date: l.date,
    size: l.packed.size,
    hash: l.packed.hash,
    keys: l.packed.keys,
    tags: new Uint8Array(l.packed.tags.buffer, l.packed.tags.byteOffset, l.packed.tags.byteLength),
    table: JSON.stringify(l.packed.table),
    changedAt: l.changedAt,
    confirmedAt: l.confirmedAt,
    checkedAt: l.checkedAt,
    status: 'ok',
    error: null,
  };
}

function fromRow(r: ScreeningListRow): LoadedList {
  // The tags were written from a Uint32Array on this platform's byte order; copy to align them.
  const tags = new Uint32Array(new Uint8Array(r.tags).buffer);
  return {
    name: r.name,
    kind: r.kind,
    source: r.source,
    date: r.date,
    packed: { keys: r.keys, tags, table: JSON.parse(r.table) as ListTag[], size: r.size, hash: r.hash },
    confirmedAt: r.confirmedAt,
    changedAt: r.changedAt,
    checkedAt: r.checkedAt,
    status: r.status,
    error: r.error,
    loaded: true,
  };
}
