/**
 * Row ↔ record mapping shared by both stores. SQLite hands back integer milliseconds and numbers,
 * PostgreSQL Dates and (for BIGINT) decimal strings; both end as the same records.
 */
import type {
  PaymentIdClaim,
  ApiKeyRecord,
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
