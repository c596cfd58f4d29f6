/**
 * Row mapping and SQL shared by both stores for what the service keeps about answers: the answers
 * kept under an Idempotency-Key and the verdict log (docs/policies.md §9, §10). `ph(i)` renders the
 * i-th placeholder (`?i` for SQLite, `$i` for PostgreSQL).
 */
import type {
  IdempotencyClaim,
  PolicyRefRecord,
  ReservationState,
  VerdictEntry,
  VerdictQuery,
  VerdictRecord,
} from './types.js';
import { frozenText } from '../wire.js';

export interface IdempotencyRow {
  fingerprint: string;
  status: number | null;
  body: string | null;
}

/** What a kept (account, key) row means for a request with `fingerprint`; a row gone meanwhile is still in flux. */
export function idempotencyClaim(row: IdempotencyRow | undefined, fingerprint: string): IdempotencyClaim {
  if (row === undefined) return { kind: 'pending' };
  if (row.fingerprint !== fingerprint) return { kind: 'conflict' };
  if (row.status === null || row.body === null) return { kind: 'pending' };
  return { kind: 'done', status: Number(row.status), body: row.body };
}

export const VERDICT_COLUMNS = [
  'id',
  'account_id',
  'at',
  'key_id',
  'key_name',
  'endpoint',
  'verdict',
  'risk',
  'failure_modes',
  'policy',
  'reserved_usd',
  'reservation_id',
] as const;

/** A verdict's `policy` column, made once per compiled version's shared (frozen) reference. */
const POLICY_TEXT = new WeakMap<PolicyRefRecord, string>();

/** A verdict in VERDICT_COLUMNS order; an answer that reserved names its reservation by its own id. */
export function verdictValues(v: VerdictRecord): unknown[] {
  return [
    v.id,
    v.accountId,
    v.at,
    v.keyId,
    v.keyName,
    v.endpoint,
    v.verdict,
    v.risk,
    JSON.stringify(v.failureModes),
    v.policy === null ? null : frozenText(POLICY_TEXT, v.policy, JSON.stringify),
    v.reservedUsd,
    v.reservedUsd === null ? null : v.id,
  ];
}

export interface VerdictRow {
  id: string;
  account_id: string;
  at: number | string;
  key_id: string;
  key_name: string;
  endpoint: string;
  verdict: string;
  risk: string | null;
  failure_modes: string;
  policy: string | null;
  reserved_usd: number | null;
  reservation_state: string | null;
}

export function verdictFromRow(r: VerdictRow): VerdictEntry {
  return {
    id: r.id,
    accountId: r.account_id,
    at: Number(r.at),
    keyId: r.key_id,
    keyName: r.key_name,
    endpoint: r.endpoint,
    verdict: r.verdict,
    risk: r.risk,
    failureModes: JSON.parse(r.failure_modes) as string[],
    policy: r.policy === null ? null : (JSON.parse(r.policy) as PolicyRefRecord),
    reservedUsd: r.reserved_usd === null ? null : Number(r.reserved_usd),
    reservation: r.reserved_usd === null ? null : ((r.reservation_state as ReservationState | null) ?? null),
  };
}

/**
 * One page, newest first: the account's rows (of one key, of one verdict, since a time) strictly
 * before the previous page's last (at, id), read down one of the (account, ..., at, id) indexes,
 * so a page costs the same wherever it is in the log. Each row's reservation state is one lookup
 * by the reservation's id (its primary key).
 */
export function verdictPageQuery(q: VerdictQuery, ph: (i: number) => string): { sql: string; params: unknown[] } {
  const params: unknown[] = [q.accountId];
  const where = [`v.account_id = ${ph(1)}`];
  const add = (clause: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(ph(params.length)));
  };
  if (q.keyId !== null) add((p) => `v.key_id = ${p}`, q.keyId);
  if (q.verdict !== null) add((p) => `v.verdict = ${p}`, q.verdict);
  if (q.since !== null) add((p) => `v.at >= ${p}`, q.since);
  if (q.before !== null) {
    params.push(q.before.at, q.before.id);
    where.push(`(v.at, v.id) < (${ph(params.length - 1)}, ${ph(params.length)})`);
  }
  params.push(q.limit);
  const sql = `SELECT v.*, (SELECT MIN(r.state) FROM reservations r WHERE r.at = v.at AND r.id = v.reservation_id) AS reservation_state
    FROM verdict_log v WHERE ${where.join(' AND ')} ORDER BY v.at DESC, v.id DESC LIMIT ${ph(params.length)}`;
  return { sql, params };
}

/** Deletes at most ph(2) verdicts older than ph(1). */
export const PRUNE_VERDICTS_SQL = (ph: (i: number) => string) =>
  `DELETE FROM verdict_log WHERE (account_id, at, id) IN
    (SELECT account_id, at, id FROM verdict_log WHERE at < ${ph(1)} LIMIT ${ph(2)})`;

/** Deletes at most ph(2) idempotency rows expired at ph(1). */
export const PRUNE_IDEMPOTENCY_SQL = (ph: (i: number) => string) =>
  `DELETE FROM idempotency_keys WHERE (account_id, idem_key) IN
    (SELECT account_id, idem_key FROM idempotency_keys WHERE expires_at <= ${ph(1)} LIMIT ${ph(2)})`;
