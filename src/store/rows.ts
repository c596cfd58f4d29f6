/**
 * Row ↔ record mapping shared by both stores. SQLite hands back integer milliseconds and numbers,
 * PostgreSQL Dates and (for BIGINT) decimal strings; both end as the same records.
 */
import { frozenText } from '../wire.js';
import type {
  CounterBucket,
  DueReservation,
  PaymentIdClaim,
  ApiKeyRecord,
  KeyRole,
  LimitUsage,
  LimitWindow,
  NewAgentKey,
  PolicyVersion,
  ReserveRequest,
  NewApiKey,
  NewPayment,
  PaymentRecord,
  PaymentState,
  PaymentUpdateFields,
  Plan,
  ScreeningListHead,
  ScreeningListRow,
  ScreeningStatus,
} from './types.js';

type Time = number | string | Date;

export const PLANS: readonly Plan[] = ['Basic', 'DeFi', 'Execution'];
export const PAYMENT_STATES: readonly PaymentState[] = ['verified', 'settling', 'settled', 'failed'];

export function isPlan(v: unknown): v is Plan {
  return typeof v === 'string' && (PLANS as readonly string[]).includes(v);
}

/** Case-insensitive, trimmed: `Alice@Example.COM ` and `alice@example.com` are one address. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function toDate(v: Time): Date {
  return v instanceof Date ? v : new Date(Number(v));
}

function toDateOrNull(v: Time | null): Date | null {
  return v === null ? null : toDate(v);
}

export interface KeyRow {
  id: string;
  key_hash: string;
  prefix: string;
  email: string;
  plan: string;
  requested_plan: string | null;
  company: string | null;
  full_name: string | null;
  use_case: string | null;
  website: string | null;
  created_at: Time;
  revoked_at: Time | null;
  account_id: string;
  role: string;
  name: string;
  policy: string | null;
  last_used_at: Time | null;
}

export function keyFromRow(r: KeyRow): ApiKeyRecord {
  return {
    id: r.id,
    keyHash: r.key_hash,
    prefix: r.prefix,
    email: r.email,
    plan: r.plan as Plan,
    requestedPlan: r.requested_plan as Plan | null,
    company: r.company,
    fullName: r.full_name,
    useCase: r.use_case,
    website: r.website,
    createdAt: toDate(r.created_at),
    revokedAt: toDateOrNull(r.revoked_at),
    accountId: r.account_id,
    role: r.role as KeyRole,
    name: r.name,
    policy: r.policy,
    lastUsedAt: toDateOrNull(r.last_used_at),
  };
}

/** Column values of a new key, in KEY_COLUMNS order. */
export const KEY_COLUMNS = [
  'id',
  'key_hash',
  'prefix',
  'email',
  'plan',
  'requested_plan',
  'company',
  'full_name',
  'use_case',
  'website',
  'created_at',
  'account_id',
  'role',
  'name',
  'policy',
] as const;
export function keyValues(k: NewApiKey, createdAt: Date | number): unknown[] {
  if (!isPlan(k.plan)) throw new TypeError(`unknown plan ${JSON.stringify(k.plan)}`);
  return [
    k.id,
    k.keyHash,
    k.prefix,
    normalizeEmail(k.email),
    k.plan,
    k.requestedPlan,
    k.company,
    k.fullName,
    k.useCase,
    k.website,
    createdAt,
    k.id,
    'owner',
    'owner',
    null,
  ];
}

/**
 * Column values of a new agent key: it carries its owner's e-mail and plan (the account's), for
 * operators reading the table; the account's quota is counted under the account id.
 */
export function agentKeyValues(k: NewAgentKey, owner: ApiKeyRecord, createdAt: Date | number): unknown[] {
  return [
    k.id,
    k.keyHash,
    k.prefix,
    owner.email,
    owner.plan,
    null,
    null,
    null,
    null,
    null,
    createdAt,
    k.accountId,
    'agent',
    k.name,
    k.policy,
  ];
}

/** The order GET /v1/keys lists an account's keys in: the owner key first, then by creation. */
export const ACCOUNT_KEYS_ORDER = "ORDER BY CASE role WHEN 'owner' THEN 0 ELSE 1 END, created_at, id";

export interface PolicyVersionRow {
  name: string;
  version: number;
  hash: string;
  document: string;
  created_at: number | string;
}

export function policyFromRow(r: PolicyVersionRow): PolicyVersion {
  return {
    name: r.name,
    version: Number(r.version),
    hash: r.hash,
    document: r.document,
    createdAt: new Date(Number(r.created_at)),
  };
}

/** Amounts are compared with this slack, so sums of decimal USD in binary floating point stay exact enough. */
const USD_EPSILON = 1e-9;

export interface CounterRow {
  limit_id: string;
  window_key: string;
  bucket: number | string;
  usd: number | string;
  n: number | string;
  reserved_usd: number | string;
}

/** Per-limit sums from the counter rows that count now, in the order of `limits`. */
export function usageFromCounters(limits: LimitWindow[], rows: CounterRow[]): LimitUsage[] {
  return limits.map((l) => addCounted({ id: l.id, committedUsd: 0, reservedUsd: 0, count: 0 }, l, rows));
}

/** Adds to `u` what the rows count for `l` now (its buckets from `l.from` on); returns `u`. */
export function addCounted(u: LimitUsage, l: LimitWindow, rows: readonly CounterRow[]): LimitUsage {
  for (const r of rows) {
    if (r.limit_id !== l.id || r.window_key !== l.windowKey || Number(r.bucket) < l.from) continue;
    u.reservedUsd += Number(r.reserved_usd);
    u.committedUsd += Number(r.usd) - Number(r.reserved_usd);
    u.count += Number(r.n);
  }
  return u;
}

/** A limit's counted buckets, oldest first (for a rolling window's retry). */
export function bucketsOf(l: LimitWindow, rows: CounterRow[]): CounterBucket[] {
  return rows
    .filter((r) => r.limit_id === l.id && r.window_key === l.windowKey && Number(r.bucket) >= l.from)
    .map((r) => ({ bucket: Number(r.bucket), usd: Number(r.usd), n: Number(r.n) }))
    .filter((b) => b.n > 0)
    .sort((a, b) => a.bucket - b.bucket);
}

/** The limits `usd` more (and one more count) would overflow, given what each has counted. */
export function overflowing(limits: LimitWindow[], usage: LimitUsage[], usd: number): LimitWindow[] {
  return limits.filter((l, i) => {
    const u = usage[i];
    if (l.maxUsd !== null && u.committedUsd + u.reservedUsd + usd > l.maxUsd + USD_EPSILON) return true;
    return l.maxCount !== null && u.count + 1 > l.maxCount;
  });
}

/**
 * One SELECT of every counter row that counts now for the limits (at most a window's buckets
 * each). `ph(i)` renders the i-th placeholder.
 */
export function countersQuery(
  accountId: string,
  policy: string,
  limits: LimitWindow[],
  ph: (i: number) => string,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [accountId, policy];
  const ors = limits.map((l) => {
    params.push(l.id, l.windowKey, l.from);
    const n = params.length;
    return `(limit_id = ${ph(n - 2)} AND window_key = ${ph(n - 1)} AND bucket >= ${ph(n)})`;
  });
  return {
    // In this column order: the SQLite store reads these rows as arrays (src/store/sqlite.ts).
    sql: `SELECT limit_id, window_key, bucket, usd, n, reserved_usd FROM limit_counters
      WHERE account_id = ${ph(1)} AND policy = ${ph(2)} AND (${ors.join(' OR ')})`,
    params,
  };
}

/** Adds to a counter bucket (a negative amount takes away), creating it when new. */
export const COUNTER_UPSERT = (ph: (i: number) => string) =>
  `INSERT INTO limit_counters (account_id, policy, limit_id, window_key, bucket, usd, n, reserved_usd)
   VALUES (${ph(1)}, ${ph(2)}, ${ph(3)}, ${ph(4)}, ${ph(5)}, ${ph(6)}, ${ph(7)}, ${ph(8)})
   ON CONFLICT (account_id, policy, limit_id, window_key, bucket) DO UPDATE SET
   usd = limit_counters.usd + excluded.usd, n = limit_counters.n + excluded.n,
   reserved_usd = limit_counters.reserved_usd + excluded.reserved_usd`;

export interface ReservationRow {
  account_id: string;
  policy: string;
  usd: number | string;
  /** JSON: [[limit_id, window_key, bucket], ...]. */
  limits: string;
}

/** The query for reservations due for release, and its row as the store answers it (either database). */
export const DUE_RESERVATIONS_SQL = (ph: (i: number) => string): string =>
  `SELECT id, at, chain, actor, expires_at
    FROM reservations WHERE state = 'reserved' AND expires_at <= ${ph(1)} ORDER BY expires_at LIMIT ${ph(2)}`;

export interface DueRow {
  id: string;
  at: number | string;
  chain: string | null;
  actor: string | null;
  expires_at: number | string;
}

export function dueFromRow(r: DueRow): DueReservation {
  return { id: r.id, at: Number(r.at), chain: r.chain, actor: r.actor, expiresAt: Number(r.expires_at) };
}

/** The counter changes that settle a reserved reservation as `state`: one per limit it counted in. */
export function counterSettles(r: ReservationRow, state: 'committed' | 'released'): unknown[][] {
  const usd = Number(r.usd);
  return (JSON.parse(r.limits) as Array<[string, string, number | string]>).map(([limitId, windowKey, bucket]) =>
    state === 'released'
      ? [r.account_id, r.policy, limitId, windowKey, Number(bucket), -usd, -1, -usd]
      : [r.account_id, r.policy, limitId, windowKey, Number(bucket), 0, 0, -usd],
  );
}

export const RESERVATION_COLUMNS = [
  'id',
  'account_id',
  'policy',
  'at',
  'usd',
  'state',
  'expires_at',
  'chain',
  'actor',
  'limits',
] as const;

const LIMITS_TEXT = new WeakMap<readonly LimitWindow[], string>();
/** The `limits` column: the windows' (limit, window, bucket)s; a span's shared windows are frozen (src/policy/service.ts, windowsAt). */
const limitsText = (limits: readonly LimitWindow[]): string =>
  JSON.stringify(limits.map((l) => [l.id, l.windowKey, l.bucket]));

/** The reservation's row, in RESERVATION_COLUMNS order: its limits' (limit, window, bucket) in one JSON column. */
export function reservationRow(r: ReserveRequest): unknown[] {
  return [
    r.id,
    r.accountId,
    r.policy,
    r.at,
    r.usd,
    r.expiresAt === null ? 'committed' : 'reserved',
    r.expiresAt,
    r.chain,
    r.actor,
    frozenText(LIMITS_TEXT, r.limits, limitsText),
  ];
}

export interface PaymentRow {
  id: string;
  asset: string;
  payer: string;
  nonce: string;
  pay_to: string;
  value: string;
  network: string;
  x402_version: number;
  payload: string;
  valid_before: number | string;
  state: string;
  tx_hash: string | null;
  attempts: number;
  last_error: string | null;
  resource: string;
  created_at: Time;
  updated_at: Time;
}

export function paymentFromRow(r: PaymentRow): PaymentRecord {
  return {
    id: r.id,
    asset: r.asset,
    payer: r.payer,
    nonce: r.nonce,
    payTo: r.pay_to,
    value: r.value,
    network: r.network,
    x402Version: Number(r.x402_version) as 1 | 2,
    payload: r.payload,
    validBefore: Number(r.valid_before),
    state: r.state as PaymentState,
    txHash: r.tx_hash,
    attempts: Number(r.attempts),
    lastError: r.last_error,
    resource: r.resource,
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export const PAYMENT_COLUMNS = [
  'id',
  'asset',
  'payer',
  'nonce',
  'pay_to',
  'value',
  'network',
  'x402_version',
  'payload',
  'valid_before',
  'state',
  'attempts',
  'resource',
  'created_at',
  'updated_at',
] as const;
/**
 * What a payer owes with one more payment: its open payments, counted by value (one group per
 * price it paid, so the rows read do not grow with the payments waiting to be settled), plus `value`.
 */
export function owed(open: ReadonlyArray<{ value: string; n: number | bigint }>, value: string): bigint {
  return open.reduce((sum, r) => sum + BigInt(r.value) * BigInt(r.n), BigInt(value));
}

/** A new payment starts `verified` with no attempts; the replay key (asset, payer, nonce) is lower-cased. */
export function paymentValues(p: NewPayment, now: Date | number): unknown[] {
  if (!/^\d+$/.test(p.value))
    throw new TypeError(`payment value must be an integer string, got ${JSON.stringify(p.value)}`);
  return [
    p.id,
    p.asset.toLowerCase(),
    p.payer.toLowerCase(),
    p.nonce.toLowerCase(),
    p.payTo,
    p.value,
    p.network,
    p.x402Version,
    p.payload,
    p.validBefore,
    'verified',
    0,
    p.resource,
    now,
    now,
  ];
}

/**
 * One compare-and-set UPDATE: it changes the row only while its state is one of `from`.
 * `ph(i)` renders the i-th placeholder (1-based): `?` for SQLite, `$i` for PostgreSQL.
 */
export function paymentUpdate(
  id: string,
  from: PaymentState[],
  to: PaymentState,
  fields: PaymentUpdateFields,
  now: Date | number,
  ph: (i: number) => string,
): { sql: string; params: unknown[] } {
  for (const s of [...from, to])
    if (!PAYMENT_STATES.includes(s)) throw new TypeError(`unknown payment state ${JSON.stringify(s)}`);
  const params: unknown[] = [];
  const p = (v: unknown): string => {
    params.push(v);
    return ph(params.length);
  };
  const sets = [`state = ${p(to)}`, `updated_at = ${p(now)}`];
  if (fields.txHash !== undefined) sets.push(`tx_hash = ${p(fields.txHash)}`);
  if (fields.lastError !== undefined) sets.push(`last_error = ${p(fields.lastError)}`);
  if (fields.incrementAttempts) sets.push('attempts = attempts + 1');
  else if (fields.refundAttempt) sets.push('attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END');
  const where = `id = ${p(id)} AND state IN (${from.map((s) => p(s)).join(', ')})`;
  return { sql: `UPDATE payments SET ${sets.join(', ')} WHERE ${where}`, params };
}

export function emptyStateCounts(): Record<PaymentState, number> {
  return { verified: 0, settling: 0, settled: 0, failed: 0 };
}

export interface PaymentIdRow {
  payer: string;
  pid: string;
  fingerprint: string;
  owner: string;
  status: number | null;
  body: string | null;
  receipt: string | null;
  payment_id: string | null;
  expires_at: number | string;
}

/** What a kept (payer, id) row means for a request with `fingerprint`; a row gone meanwhile is still in flux. */
export function paymentIdClaim(row: PaymentIdRow | undefined, fingerprint: string): PaymentIdClaim {
  if (row === undefined) return { kind: 'pending' };
  if (row.fingerprint !== fingerprint) return { kind: 'conflict' };
  if (row.status === null || row.body === null) return { kind: 'pending' };
  return {
    kind: 'done',
    answer: { status: Number(row.status), body: row.body, receipt: row.receipt ?? '', paymentId: row.payment_id ?? '' },
  };
}

/** The columns of a screening list's head, in the order SCREENING_HEAD_COLUMNS names them. */
export const SCREENING_HEAD_COLUMNS = 'name, hash, size, changed_at, confirmed_at, checked_at, status, error';
const SCREENING_ROW_COLUMNS = `${SCREENING_HEAD_COLUMNS}, kind, source, list_date, tag_table`;
/** A list's packed bytes (keys, then tags) are stored in chunks of this size. */
export const SCREENING_CHUNK_BYTES = 1 << 18;

export interface ScreeningHeadRow {
  name: string;
  hash: string;
  size: number | string;
  changed_at: number | string;
  confirmed_at: number | string;
  checked_at: number | string;
  status: ScreeningStatus;
  error: string | null;
}

interface ScreeningRow extends ScreeningHeadRow {
  kind: 'sanctions' | 'blocklist';
  source: string;
  list_date: string | null;
  tag_table: string;
}

export function screeningHead(r: ScreeningHeadRow): ScreeningListHead {
  return {
    name: r.name,
    hash: r.hash,
    size: Number(r.size),
    changedAt: Number(r.changed_at),
    confirmedAt: Number(r.confirmed_at),
    checkedAt: Number(r.checked_at),
    status: r.status,
    error: r.error,
  };
}

/** Placeholders $1..$n (PostgreSQL) or ? (SQLite) for `n` values. */
export function placeholders(n: number, numbered: boolean): string {
  return Array.from({ length: n }, (_, i) => (numbered ? `$${i + 1}` : '?')).join(', ');
}

/** The statements both stores run for screening, with ? or $n placeholders. */
export function screeningSql(numbered: boolean) {
  const p = (i: number) => (numbered ? `$${i}` : '?');
  const columns = SCREENING_ROW_COLUMNS.split(',').map((c) => c.trim());
  const updates = columns
    .filter((c) => c !== 'name')
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');
  return {
    heads: `SELECT ${SCREENING_HEAD_COLUMNS} FROM screening_lists WHERE changed_at > 0 OR checked_at > 0`,
    row: `SELECT ${SCREENING_ROW_COLUMNS} FROM screening_lists WHERE name = ${p(1)} AND changed_at > 0`,
    // A list nobody refreshed yet gets an empty row to hold the lease.
    seed: `INSERT INTO screening_lists (name, kind, source, size, hash, tag_table, changed_at, confirmed_at, checked_at, status)
      VALUES (${p(1)}, 'blocklist', '', 0, '', '[]', 0, 0, 0, 'ok') ON CONFLICT (name) DO NOTHING`,
    claim: `UPDATE screening_lists SET lease_owner = ${p(1)}, lease_until = ${p(2)}
      WHERE name = ${p(3)} AND lease_until < ${p(4)} AND checked_at < ${p(5)}`,
    put: `INSERT INTO screening_lists (${SCREENING_ROW_COLUMNS}, lease_owner, lease_until) VALUES (${placeholders(columns.length, numbered)}, NULL, 0)
      ON CONFLICT (name) DO UPDATE SET ${updates}, lease_owner = NULL, lease_until = 0`,
    chunk: `INSERT INTO screening_list_chunks (name, hash, seq, data) VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)})
      ON CONFLICT (name, hash, seq) DO NOTHING`,
    readChunk: `SELECT data FROM screening_list_chunks WHERE name = ${p(1)} AND hash = ${p(2)} AND seq = ${p(3)}`,
    dropChunks: `DELETE FROM screening_list_chunks WHERE name = ${p(1)} AND hash <> ${p(2)}`,
    mark: `UPDATE screening_lists SET checked_at = ${p(1)}, status = ${p(2)}, error = ${p(3)}, lease_owner = NULL, lease_until = 0
      WHERE name = ${p(4)} AND lease_owner = ${p(5)}`,
    record: `INSERT INTO screening_counterparties (account, address, last_at) VALUES (${p(1)}, ${p(2)}, ${p(3)})
      ON CONFLICT (account, address) DO UPDATE SET last_at = excluded.last_at`,
    counterparties: `SELECT address FROM screening_counterparties WHERE account = ${p(1)} AND last_at >= ${p(2)}`,
    prune: `DELETE FROM screening_counterparties WHERE last_at < ${p(1)}`,
  };
}

/** What the chunked list code needs of a database: one statement at a time, async. */
export interface ScreeningDb {
  run(sql: string, params: unknown[]): Promise<void>;
  all<T>(sql: string, params: unknown[]): Promise<T[]>;
}

/** Lets the event loop answer between two chunks (SQLite's calls are synchronous). */
const breathe = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Stores a list: its chunks first (keys, then tags), then the head that names their hash, then the
 * chunks of older versions go. A reader that sees the new head finds all its chunks.
 */
export async function putScreeningList(
  db: ScreeningDb,
  sql: ReturnType<typeof screeningSql>,
  r: ScreeningListRow,
): Promise<void> {
  // The keys' chunks, then the tags': views of the buffers as they are, nothing copied.
  let seq = 0;
  for (const whole of [r.keys, r.tags])
    for (let at = 0; at < whole.byteLength; at += SCREENING_CHUNK_BYTES) {
      const part = whole.subarray(at, Math.min(whole.byteLength, at + SCREENING_CHUNK_BYTES));
      await db.run(sql.chunk, [r.name, r.hash, seq++, Buffer.from(part.buffer, part.byteOffset, part.byteLength)]);
      await breathe();
    }
  await db.run(sql.put, [
    r.name,
    r.hash,
    r.size,
    r.changedAt,
    r.confirmedAt,
    r.checkedAt,
    r.status,
    r.error,
    r.kind,
    r.source,
    r.date,
    r.table,
  ]);
  await db.run(sql.dropChunks, [r.name, r.hash]);
}

/** Reads a list's current version chunk by chunk; null when none is stored or it was replaced mid-read. */
export async function readScreeningList(
  db: ScreeningDb,
  sql: ReturnType<typeof screeningSql>,
  name: string,
): Promise<ScreeningListRow | null> {
  const [row] = await db.all<ScreeningRow>(sql.row, [name]);
  if (!row) return null;
  const head = screeningHead(row);
  const bytes = new Uint8Array(head.size * 24);
  for (let seq = 0, at = 0; at < bytes.byteLength; seq++) {
    const [c] = await db.all<{ data: Uint8Array }>(sql.readChunk, [name, head.hash, seq]);
    if (!c || at + c.data.byteLength > bytes.byteLength) return null;
    bytes.set(c.data, at);
    at += c.data.byteLength;
    await breathe();
  }
  return {
    ...head,
    kind: row.kind,
    source: row.source,
    date: row.list_date,
    keys: bytes.subarray(0, head.size * 20),
    tags: bytes.slice(head.size * 20),
    table: row.tag_table,
  };
}
