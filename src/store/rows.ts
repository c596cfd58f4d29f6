/**
 * Row ↔ record mapping shared by both stores. SQLite hands back integer milliseconds and numbers,
 * PostgreSQL Dates and (for BIGINT) decimal strings; both end as the same records.
 */
import type {
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

export interface UsageRow {
  limit_id: string;
  state: string;
  usd: number | string;
  n: number | string;
}

/** Per-limit sums from rows grouped by (limit_id, state), in the order of `limits`. */
export function usageFromRows(limits: LimitWindow[], rows: UsageRow[]): LimitUsage[] {
  const by = new Map<string, LimitUsage>(
    limits.map((l) => [l.id, { id: l.id, committedUsd: 0, reservedUsd: 0, count: 0 }]),
  );
  for (const r of rows) {
    const u = by.get(r.limit_id);
    if (!u) continue;
    if (r.state === 'reserved') u.reservedUsd += Number(r.usd);
    else u.committedUsd += Number(r.usd);
    u.count += Number(r.n);
  }
  return limits.map((l) => by.get(l.id) as LimitUsage);
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
 * One query's text for the sums of every limit: a UNION ALL of one grouped SELECT per limit, each
 * over its own window. `ph(i)` renders the i-th placeholder.
 */
export function usageQuery(
  accountId: string,
  policy: string,
  limits: LimitWindow[],
  ph: (i: number) => string,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [accountId, policy];
  const parts = limits.map((l) => {
    params.push(l.id, l.windowKey, l.since);
    const n = params.length;
    return `SELECT limit_id, state, SUM(usd) AS usd, COUNT(*) AS n FROM reservations
      WHERE account_id = ${ph(1)} AND policy = ${ph(2)} AND limit_id = ${ph(n - 2)} AND window_key = ${ph(n - 1)}
      AND at >= ${ph(n)} AND state <> 'released' GROUP BY limit_id, state`;
  });
  return { sql: parts.join(' UNION ALL '), params };
}

/** The SELECT of one limit's counted reservations in its window, oldest first (for a rolling window's retry). */
export const WINDOW_ENTRIES_SQL = (ph: (i: number) => string) =>
  `SELECT at, usd FROM reservations WHERE account_id = ${ph(1)} AND policy = ${ph(2)} AND limit_id = ${ph(3)}
   AND window_key = ${ph(4)} AND at >= ${ph(5)} AND state <> 'released' ORDER BY at`;

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
