/**
 * The durable store: API keys, monthly usage, signup rate, and the x402 payment ledger.
 * Two implementations share one test suite: SQLite (default, embedded) and PostgreSQL (clusters).
 * Every method that counts or claims is atomic in the database, so several service processes
 * sharing one PostgreSQL share one quota and one ledger.
 */
export type Plan = 'Basic' | 'DeFi' | 'Execution';

export interface ApiKeyRecord {
  id: string;
  /** SHA-256 hex of the raw key. The raw key is never stored. */
  keyHash: string;
  /** First characters of the key, for operators to recognise it (e.g. `pvk_3f9a`). */
  prefix: string;
  email: string;
  plan: Plan;
  requestedPlan: Plan | null;
  company: string | null;
  fullName: string | null;
  useCase: string | null;
  website: string | null;
  createdAt: Date;
  revokedAt: Date | null;
  /** The account the key belongs to; an owner key's account id is the key's own id. */
  accountId: string;
  role: KeyRole;
  /** Unique among the account's live keys; `owner` for the owner key. */
  name: string;
  /** The policy the key answers under, by name, or null. */
  policy: string | null;
  /** When the key was last seen on a call, to the minute (docs/policies.md §1). */
  lastUsedAt: Date | null;
}

/** docs/policies.md §1: an account's owner key manages it; agent keys only call. */
export type KeyRole = 'owner' | 'agent';

/** A new owner key (a signup): its account is made with it, under the key's id. */
export type NewApiKey = Omit<
  ApiKeyRecord,
  'createdAt' | 'revokedAt' | 'accountId' | 'role' | 'name' | 'policy' | 'lastUsedAt'
>;

/** A new agent key of an existing account. */
export interface NewAgentKey {
  id: string;
  keyHash: string;
  prefix: string;
  accountId: string;
  name: string;
  policy: string | null;
  /** At most this many live agent keys per account (MAX_AGENT_KEYS). */
  maxAgentKeys: number;
}

/** Why a key could not be made or changed. */
export type KeyRefusal = 'not_found' | 'name_taken' | 'too_many' | 'no_policy' | 'owner_key';

/** One immutable, numbered version of a policy document (docs/policies.md §2). */
export interface PolicyVersion {
  name: string;
  version: number;
  /** `0x` + keccak256 of the document's RFC 8785 canonical JSON. */
  hash: string;
  createdAt: Date;
  /** The stored document as JSON text. */
  document: string;
}

/** A limit as the store counts it: its id, its window's key and where the window starts now. */
export interface LimitWindow {
  id: string;
  /** `hour`, `day`, `week`, `month` or `rolling:<seconds>`: counters follow (id, windowKey). */
  windowKey: string;
  /** The bucket (unix ms) a reservation made now counts in. */
  bucket: number;
  /** The oldest bucket (unix ms) that still counts now. */
  from: number;
  /** A bucket's length in ms: a rolling window's hundredth; a calendar window's whole length. */
  step: number;
  maxUsd: number | null;
  maxCount: number | null;
}

/** What a limit has counted in its current window. */
export interface LimitUsage {
  id: string;
  committedUsd: number;
  reservedUsd: number;
  count: number;
}

export interface ReserveRequest {
  /** The reservation's id: the answer's attestation id. */
  id: string;
  accountId: string;
  policy: string;
  limits: LimitWindow[];
  usd: number;
  at: number;
  /** When the verdict expires; null reserves as committed at once (nothing to release). */
  expiresAt: number | null;
  chain: string | null;
  /** The acting account (transaction.from), lower-case, read for `used(bytes32)` on release. */
  actor: string | null;
  /** Check only: answer as a reservation would, and insert nothing (a dry run). */
  dryRun?: boolean;
  /**
   * The answer's verdict-log row, written in the reservation's own transaction when it is accepted
   * (docs/policies.md §10): one commit makes both durable. Nothing is written when it is refused.
   */
  verdict?: VerdictRecord | null;
}

export type ReserveResult =
  | { ok: true; usage: LimitUsage[] }
  | {
      ok: false;
      usage: LimitUsage[];
      /** The limits that would overflow, with what each bucket still counting holds, oldest first. */
      full: Array<{ id: string; buckets: CounterBucket[] }>;
    };

/** One counter row of a limit: its bucket's start (unix ms), USD and count. */
export interface CounterBucket {
  bucket: number;
  usd: number;
  n: number;
}

/** A reservation awaiting its release check. */
/**
 * A reservation's key: its id (the answer's attestation id) and when it was made. Rows are kept in
 * (at, id) order, so a reservation is appended where the last one went instead of on a random page.
 */
export interface ReservationKey {
  id: string;
  at: number;
}

export interface DueReservation extends ReservationKey {
  chain: string | null;
  actor: string | null;
  expiresAt: number;
}

export interface UsageResult {
  /** True when the call was counted (used before < limit). */
  allowed: boolean;
  /** Calls counted in the period after this attempt. */
  used: number;
  limit: number;
}

export type PaymentState = 'verified' | 'settling' | 'settled' | 'failed';

export interface PaymentRecord {
  id: string;
  asset: string; // token contract, lower-case
  payer: string; // authorization.from, lower-case
  nonce: string; // 0x-prefixed 32-byte hex, lower-case
  payTo: string;
  value: string; // integer atomic units as a decimal string
  network: string; // eip155:8453
  x402Version: 1 | 2;
  /** The signed authorization and signature, enough to settle later (JSON). */
  payload: string;
  validBefore: number; // unix seconds
  state: PaymentState;
  txHash: string | null;
  attempts: number;
  lastError: string | null;
  resource: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What an update writes besides the state; a field left out keeps its value. */
export interface PaymentUpdateFields {
  txHash?: string | null;
  lastError?: string | null;
  incrementAttempts?: boolean;
  /** Gives back the attempt counted at its start: it turned out to be a wait, not an attempt. */
  refundAttempt?: boolean;
}

/** One compare-and-set on a payment: from one of `from` to `to`. */
export interface PaymentUpdate {
  id: string;
  from: PaymentState[];
  to: PaymentState;
  fields?: PaymentUpdateFields;
}

/** What claiming a payment against the payer's balance came to. */
export type PaymentClaim = 'claimed' | 'replay' | 'uncovered';

export type NewPayment = Pick<
  PaymentRecord,
  | 'id'
  | 'asset'
  | 'payer'
  | 'nonce'
  | 'payTo'
  | 'value'
  | 'network'
  | 'x402Version'
  | 'payload'
  | 'validBefore'
  | 'resource'
>;

/** The answer kept for an x402 payment identifier, given again to a retry (docs/x402.md §9). */
export interface KeptAnswer {
  status: number;
  /** The response body as sent (UTF-8 JSON). */
  body: string;
  /** The receipt header's value as sent. */
  receipt: string;
  /** The ledger id of the payment that bought the answer. */
  paymentId: string;
}

/** What a payment identifier is when a payment arrives with it. */
export type PaymentIdClaim =
  | { kind: 'new' }
  | { kind: 'conflict' }
  | { kind: 'pending' }
  | { kind: 'done'; answer: KeptAnswer };

export interface PaymentIdRequest {
  payer: string;
  pid: string;
  /** SHA-256 of the request (method, path, body). */
  fingerprint: string;
  /** Random per attempt: only the attempt that took the id may complete or release it. */
  owner: string;
  ttlMs: number;
}

/** One attempt taking an Idempotency-Key of an account (docs/policies.md §9). */
export interface IdempotencyRequest {
  accountId: string;
  key: string;
  /** SHA-256 of who asked what: the key id, the endpoint and the canonical JSON body. */
  fingerprint: string;
  /** Random per attempt: only the attempt that took the key may keep an answer under it or free it. */
  owner: string;
  /** How long the attempt holds the key before another may take it over (a crashed attempt). */
  leaseMs: number;
}

/** What an Idempotency-Key is when a request arrives with it. */
export type IdempotencyClaim =
  | { kind: 'new' }
  | { kind: 'conflict' }
  | { kind: 'pending' }
  | { kind: 'done'; status: number; body: string };

/** The policy version an answer was judged under, as `decision.policy` names it. */
export interface PolicyRefRecord {
  name: string;
  version: number;
  hash: string;
}

/** One answer to a keyed call, as the verdict log keeps it (docs/policies.md §10). */
export interface VerdictRecord {
  /** The answer's attestation id (0x + 64 hex): unique per answer, and its reservation's id. */
  id: string;
  accountId: string;
  /** Unix ms. */
  at: number;
  keyId: string;
  keyName: string;
  endpoint: string;
  verdict: string;
  risk: string | null;
  failureModes: string[];
  policy: PolicyRefRecord | null;
  /** What the answer reserved in its policy's limits; null when it reserved nothing. */
  reservedUsd: number | null;
}

export type ReservationState = 'reserved' | 'committed' | 'released';

/** A verdict as a page shows it: its reservation's state now (null when it reserved nothing). */
export interface VerdictEntry extends VerdictRecord {
  reservation: ReservationState | null;
}

/** One page of an account's verdicts, newest first (keyset pagination on (at, id)). */
export interface VerdictQuery {
  accountId: string;
  /** Rows to read; a caller asking one more than it shows learns whether a next page exists. */
  limit: number;
  /** Rows strictly older than this (at, id): the last row of the previous page. */
  before: { at: number; id: string } | null;
  keyId: string | null;
  verdict: string | null;
  /** Rows at or after this unix ms. */
  since: number | null;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  /** Applies pending migrations. Idempotent; safe when several processes start at once. */
  migrate(): Promise<void>;
  close(): Promise<void>;

  /** Inserts a key unless an active (unrevoked) key exists for the email; returns false then. */
  createApiKey(key: NewApiKey): Promise<boolean>;
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null>;
  listApiKeys(): Promise<ApiKeyRecord[]>;
  /** Revokes by id or prefix; returns the number of keys revoked. */
  revokeApiKey(idOrPrefix: string): Promise<number>;
  setPlan(idOrPrefix: string, plan: Plan): Promise<number>;

  /** Atomically counts one call for `keyId` in `period` (e.g. `2026-11`) when used < limit. */
  consumeQuota(keyId: string, period: string, limit: number): Promise<UsageResult>;
  /** Gives back one counted call (the request was not served after all). */
  refundQuota(keyId: string, period: string): Promise<void>;
  getUsage(keyId: string, period: string): Promise<number>;

  /** Atomically counts a signup attempt for `client` in `window` (e.g. an hour bucket). */
  countSignup(client: string, window: string, limit: number): Promise<UsageResult>;

  /** Claims (asset, payer, nonce). Returns false when it was claimed before: a replay. */
  claimPayment(p: NewPayment): Promise<boolean>;
  /**
   * Claims (asset, payer, nonce) when `balance` covers it together with the payer's payments of
   * that asset not yet settled (`verified`, `settling`); atomic for one payer across every
   * instance on the database. `replay` when the triple was claimed before.
   */
  claimCoveredPayment(p: NewPayment, balance: bigint): Promise<PaymentClaim>;
  /** Moves a payment to a new state; `from` guards the transition (compare-and-set). */
  updatePayment(id: string, from: PaymentState[], to: PaymentState, fields?: PaymentUpdateFields): Promise<boolean>;
  /**
   * Several `updatePayment`s written together (one transaction on SQLite, one statement on
   * PostgreSQL); each keeps its own compare-and-set, and its answer is in the same place.
   */
  updatePayments(updates: readonly PaymentUpdate[]): Promise<boolean[]>;
  getPayment(id: string): Promise<PaymentRecord | null>;
  /** Payments in `verified` or `settling` whose last update is older than `olderThanMs`. */
  listUnsettledPayments(olderThanMs: number, limit: number): Promise<PaymentRecord[]>;
  countPaymentsByState(): Promise<Record<PaymentState, number>>;

  /**
   * Takes (payer, id) for this attempt when free or expired ('new'); otherwise says whether the
   * kept request differs ('conflict'), is still being served ('pending') or was answered ('done').
   */
  claimPaymentId(r: PaymentIdRequest): Promise<PaymentIdClaim>;
  /** Keeps the answer under (payer, id); only the owning attempt can. */
  completePaymentId(payer: string, pid: string, owner: string, answer: KeptAnswer): Promise<boolean>;
  /** Frees (payer, id) when the owning attempt was not served, so a retry pays again. */
  releasePaymentId(payer: string, pid: string, owner: string): Promise<void>;

  /**
   * The verdict signer's key: the one kept, or `candidate` when none is kept yet (then kept).
   * Processes racing on one database all get the same key back.
   */
  attestationKey(candidate: AttestationKey): Promise<AttestationKey>;

  // Accounts, keys and policies (docs/policies.md). Every method is one transaction.

  /** The account's live and revoked keys, owner first, then by creation. */
  listAccountKeys(accountId: string): Promise<ApiKeyRecord[]>;
  createAgentKey(k: NewAgentKey): Promise<ApiKeyRecord | KeyRefusal>;
  /** Binds a live key of the account to a policy (or none). */
  setKeyPolicy(accountId: string, keyId: string, policy: string | null): Promise<ApiKeyRecord | KeyRefusal>;
  /** Revokes a live agent key of the account; the owner key cannot be revoked this way. */
  revokeAccountKey(accountId: string, keyId: string): Promise<ApiKeyRecord | KeyRefusal>;
  /** Notes that keys were used (at most once a minute per key, by the caller). */
  touchKeys(keyIds: string[], at: Date): Promise<void>;

  /** Stores `document` as the policy's next version unless its hash is the current one's. */
  putPolicy(
    accountId: string,
    name: string,
    hash: string,
    document: string,
  ): Promise<{ version: PolicyVersion; created: boolean }>;
  getPolicy(accountId: string, name: string): Promise<PolicyVersion | null>;
  getPolicyVersion(accountId: string, name: string, version: number): Promise<PolicyVersion | null>;
  listPolicies(accountId: string): Promise<PolicyVersion[]>;
  /** Deletes the policy and its versions; refused while a live key is bound to it. */
  deletePolicy(accountId: string, name: string): Promise<'deleted' | 'not_found' | 'bound'>;

  /**
   * Checks every limit and reserves `usd` (and a count of 1) in all of them, or in none: one
   * atomic step for every process on this database.
   */
  reserve(r: ReserveRequest): Promise<ReserveResult>;
  /** What each limit counts in its current window (released reservations excluded). */
  limitUsage(accountId: string, policy: string, limits: LimitWindow[]): Promise<LimitUsage[]>;
  /** Reservations still `reserved` whose verdict expired at or before `now`. */
  dueReservations(now: number, max: number): Promise<DueReservation[]>;
  /** Settles a reserved reservation as committed or released; false when it was settled already. */
  settleReservation(r: ReservationKey, state: 'committed' | 'released'): Promise<boolean>;
  /** Deletes counter buckets that started before `before` (unix ms): no window reaches them. */
  pruneCounters(before: number): Promise<number>;
  /** Takes or renews the named lease for `holder` until now + ttlMs; false while another holds it. */
  takeLease(name: string, holder: string, ttlMs: number): Promise<boolean>;

  // Idempotency-Key answers and the verdict log (docs/policies.md §9, §10).

  /**
   * Takes (account, key) for this attempt when free or expired ('new'); otherwise says whether the
   * kept request differs ('conflict'), is still being served ('pending') or was answered ('done').
   */
  claimIdempotencyKey(r: IdempotencyRequest): Promise<IdempotencyClaim>;
  /** Keeps the answer under (account, key) for `keepMs`; only the owning attempt can. */
  completeIdempotencyKey(
    accountId: string,
    key: string,
    owner: string,
    answer: { status: number; body: string },
    keepMs: number,
  ): Promise<boolean>;
  /** Frees (account, key) when the owning attempt was not answered, so a retry runs again. */
  releaseIdempotencyKey(accountId: string, key: string, owner: string): Promise<void>;
  /** Appends verdicts in one transaction; a row already there is left as it is (a retried batch). */
  appendVerdicts(rows: VerdictRecord[]): Promise<void>;
  /** One page of an account's verdicts, newest first, each with its reservation's state. */
  verdictPage(q: VerdictQuery): Promise<VerdictEntry[]>;
  /**
   * Deletes at most `max` verdicts older than `verdictsBefore` and at most `max` idempotency rows
   * expired at `now`; returns how many of each.
   */
  pruneKept(now: number, verdictsBefore: number, max: number): Promise<{ verdicts: number; idempotency: number }>;
  /** Screening lists (docs/screening.md §3): each list's head (no addresses), for the fleet's poll. */
  screeningListHeads(): Promise<ScreeningListHead[]>;
  /** One list with its packed addresses; null when no instance has stored it. */
  screeningList(name: string): Promise<ScreeningListRow | null>;
  /**
   * Takes the refresh of `name` for `owner` until `now + leaseMs` when no other instance holds it
   * and its last attempt is older than `dueBeforeMs` (unix ms). True: this instance refreshes now.
   */
  claimScreeningRefresh(
    name: string,
    owner: string,
    now: number,
    leaseMs: number,
    dueBeforeMs: number,
  ): Promise<boolean>;
  /** Stores a new version of a list (addresses, head) and ends the owner's lease. */
  putScreeningList(row: ScreeningListRow, owner: string): Promise<void>;
  /** Records a refresh that did not replace the list (refused or failed) and ends the owner's lease. */
  markScreeningRefresh(
    name: string,
    owner: string,
    at: number,
    status: ScreeningStatus,
    error: string | null,
  ): Promise<void>;

  /** Counts addresses as known counterparties of `account` at `at` (unix ms). */
  recordCounterparties(account: string, addresses: readonly string[], at: number): Promise<void>;
  /** The account's counterparties seen at or after `since` (unix ms), lowercased. */
  counterparties(account: string, since: number): Promise<string[]>;
  /** Forgets counterparties last seen before `before`; returns how many. */
  pruneCounterparties(before: number): Promise<number>;
}

export type ScreeningStatus = 'ok' | 'refused' | 'failed';

/** What the fleet's poll reads of a list: enough to tell whether its version changed. */
export interface ScreeningListHead {
  name: string;
  hash: string;
  size: number;
  /** When the stored version was written (unix ms); 0: nothing stored yet. */
  changedAt: number;
  /** When the list was last confirmed current: its last successful fetch (unix ms). */
  confirmedAt: number;
  /** The last refresh attempt (unix ms) and how it ended. */
  checkedAt: number;
  status: ScreeningStatus;
  error: string | null;
}

export interface ScreeningListRow extends ScreeningListHead {
  kind: 'sanctions' | 'blocklist';
  source: string;
  /** The publish date the list states (YYYY-MM-DD), or null. */
  date: string | null;
  /** `size` sorted 20-byte addresses. */
  keys: Uint8Array;
  /** One index into `table` per address (uint32, little-endian). */
  tags: Uint8Array;
  /** The tags' table, JSON. */
  table: string;
}

/** A secp256k1 private key (0x hex) and its address. */
export interface AttestationKey {
  privateKey: string;
  address: string;
}
