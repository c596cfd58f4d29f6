/**
 * Row ↔ record mapping shared by both stores. SQLite hands back integer milliseconds and numbers,
 * PostgreSQL Dates and (for BIGINT) decimal strings; both end as the same records.
 */
import type {
  CounterBucket,
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
  Plan,
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
  return limits.map((l) => {
    const u: LimitUsage = { id: l.id, committedUsd: 0, reservedUsd: 0, count: 0 };
    for (const r of rows) {
      if (r.limit_id !== l.id || r.window_key !== l.windowKey || Number(r.bucket) < l.from) continue;
      u.reservedUsd += Number(r.reserved_usd);
      u.committedUsd += Number(r.usd) - Number(r.reserved_usd);
      u.count += Number(r.n);
    }
    return u;
  });
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
  limit_id: string;
  window_key: string;
  account_id: string;
  policy: string;
  bucket: number | string;
  usd: number | string;
}

/** The counter changes that settle a reserved reservation's rows as `state`. */
export function counterSettles(rows: ReservationRow[], state: 'committed' | 'released'): unknown[][] {
  return rows.map((r) => {
    const usd = Number(r.usd);
    return state === 'released'
      ? [r.account_id, r.policy, r.limit_id, r.window_key, Number(r.bucket), -usd, -1, -usd]
      : [r.account_id, r.policy, r.limit_id, r.window_key, Number(r.bucket), 0, 0, -usd];
  });
}

export const RESERVATION_COLUMNS = [
  'id',
  'limit_id',
  'window_key',
  'account_id',
  'policy',
  'at',
  'usd',
  'state',
  'expires_at',
  'chain',
  'actor',
  'bucket',
] as const;

/** One row per limit, in RESERVATION_COLUMNS order. */
export function reservationRows(r: ReserveRequest): unknown[][] {
  const state = r.expiresAt === null ? 'committed' : 'reserved';
  return r.limits.map((l) => [
    r.id,
    l.id,
    l.windowKey,
    r.accountId,
    r.policy,
    r.at,
    r.usd,
    state,
    r.expiresAt,
    r.chain,
    r.actor,
    l.bucket,
  ]);
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

export interface PaymentUpdateFields {
  txHash?: string | null;
  lastError?: string | null;
  incrementAttempts?: boolean;
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
