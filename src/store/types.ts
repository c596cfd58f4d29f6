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
}

export type NewApiKey = Omit<ApiKeyRecord, 'createdAt' | 'revokedAt'>;

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
  /** Moves a payment to a new state; `from` guards the transition (compare-and-set). */
  updatePayment(
    id: string,
    from: PaymentState[],
    to: PaymentState,
    fields?: { txHash?: string | null; lastError?: string | null; incrementAttempts?: boolean },
  ): Promise<boolean>;
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
