/**
 * The clustered store: PostgreSQL through a pg connection pool. Every count and claim is one
 * statement (UPSERT ... RETURNING, INSERT ... ON CONFLICT DO NOTHING), so any number of service
 * processes on one database share one quota and one payment ledger. Migrations run in one
 * transaction under an advisory lock, so processes starting together apply each once.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { StoreError, redactUrl } from './errors.js';
import { decideBatch, KeyedBatcher, reserveKey, summedAdds, unionLimits } from './batch.js';
import { MIGRATIONS_TABLE_SQL, pending } from './migrations.js';
import {
  ACCOUNT_KEYS_ORDER,
  COUNTER_UPSERT,
  RESERVATION_COLUMNS,
  agentKeyValues,
  counterSettles,
  policyFromRow,
  reservationRow,
  usageFromCounters,
  type CounterRow,
  type PolicyVersionRow,
  type ReservationRow,
  KEY_COLUMNS,
  PAYMENT_COLUMNS,
  emptyStateCounts,
  isPlan,
  keyFromRow,
  keyValues,
  PAYMENT_STATES,
  paymentFromRow,
  paymentUpdate,
  paymentValues,
  type KeyRow,
  type PaymentRow,
  paymentIdClaim,
  type PaymentIdRow,
  putScreeningList,
  readScreeningList,
  type ScreeningDb,
  screeningHead,
  type ScreeningHeadRow,
  screeningSql,
  DUE_RESERVATIONS_SQL,
  dueFromRow,
  type DueRow,
} from './rows.js';
import {
  PRUNE_IDEMPOTENCY_SQL,
  PRUNE_VERDICTS_SQL,
  VERDICT_COLUMNS,
  idempotencyClaim,
  verdictFromRow,
  verdictPageQuery,
  verdictValues,
  type IdempotencyRow,
  type VerdictRow,
} from './kept.js';
import type {
  ScreeningListHead,
  ScreeningListRow,
  ScreeningStatus,
  IdempotencyClaim,
  IdempotencyRequest,
  VerdictEntry,
  VerdictQuery,
  VerdictRecord,
  DueReservation,
  KeyRefusal,
  LimitUsage,
  LimitWindow,
  NewAgentKey,
  PolicyVersion,
  ReservationKey,
  ReserveRequest,
  ReserveResult,
  ApiKeyRecord,
  KeptAnswer,
  PaymentIdClaim,
  PaymentIdRequest,
  AttestationKey,
  NewApiKey,
  NewPayment,
  PaymentClaim,
  PaymentRecord,
  PaymentState,
  PaymentUpdate,
  PaymentUpdateFields,
  Plan,
  Store,
  UsageResult,
} from './types.js';

/** Any constant works; it only has to be the same in every process of this service. */
const MIGRATION_LOCK = 7_301_402_001;
const PRUNE_EVERY = 256;

export interface PostgresOptions {
  max?: number;
  connectTimeoutMs?: number;
  logger?: Pick<Logger, 'error'>;
}

const placeholders = (n: number, from = 1): string => Array.from({ length: n }, (_, i) => `$${i + from}`).join(', ');

const SCREENING = screeningSql(true);

/**
 * A batch's reservations, their counters' additions and their verdict-log rows, written by one
 * statement whose text never changes: each column is one array parameter, unnested into rows. The
 * server parses and plans it once per connection (a named statement), where a statement with a
 * `VALUES` row per reservation was new text, parsed and planned again, with a parameter per value
 * for the client to number and send (bench/README.md, "Twenty-fifth pass").
 */
const unnestOf = (types: readonly string[], from: number): string =>
  `unnest(${types.map((t, i) => `$${from + i}::${t}[]`).join(', ')})`;
/** Column types, in RESERVATION_COLUMNS, the counters' and VERDICT_COLUMNS order. */
const RESERVATION_TYPES = ['text', 'text', 'text', 'bigint', 'float8', 'text', 'bigint', 'text', 'text', 'text'];
const COUNTER_TYPES = ['text', 'text', 'text', 'text', 'bigint', 'float8', 'bigint', 'float8'];
const COUNTER_COLUMNS = COUNTER_TYPES.length;
const VERDICT_TYPES = [
  'text',
  'text',
  'bigint',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'float8',
  'text',
];
const RESERVE_WRITE_SQL = `WITH ins AS (
  INSERT INTO reservations (${RESERVATION_COLUMNS.join(', ')})
  SELECT * FROM ${unnestOf(RESERVATION_TYPES, 1)}
), log AS (
  INSERT INTO verdict_log (${VERDICT_COLUMNS.join(', ')})
  SELECT * FROM ${unnestOf(VERDICT_TYPES, 1 + RESERVATION_TYPES.length + COUNTER_TYPES.length)}
  ON CONFLICT (account_id, at, id) DO NOTHING
)
INSERT INTO limit_counters (account_id, policy, limit_id, window_key, bucket, usd, n, reserved_usd)
SELECT * FROM ${unnestOf(COUNTER_TYPES, 1 + RESERVATION_TYPES.length)}
ON CONFLICT (account_id, policy, limit_id, window_key, bucket) DO UPDATE SET
  usd = limit_counters.usd + excluded.usd, n = limit_counters.n + excluded.n,
  reserved_usd = limit_counters.reserved_usd + excluded.reserved_usd`;

/**
 * A paid call's claim (docs/x402.md §4, step 8) as one statement: migration 11's function takes the
 * payer's lock and answers from what was committed before it; the payment is inserted only when it
 * answered `claimed`. One round trip where a transaction took six.
 */
const CLAIM_COVERED_SQL = `WITH v AS MATERIALIZED (
  SELECT preflight_payer_claim($2, $3, $4, $6::NUMERIC, $16::NUMERIC) AS verdict
), ins AS (
  INSERT INTO payments (${PAYMENT_COLUMNS.join(', ')})
  SELECT $1::TEXT, $2::TEXT, $3::TEXT, $4::TEXT, $5::TEXT, $6::TEXT, $7::TEXT, $8::INTEGER, $9::TEXT, $10::BIGINT,
    $11::TEXT, $12::INTEGER, $13::TEXT, $14::TIMESTAMPTZ, $15::TIMESTAMPTZ
  FROM v WHERE v.verdict = 'claimed'
  ON CONFLICT (asset, payer, nonce) DO NOTHING
  RETURNING 1
)
SELECT v.verdict, (SELECT count(*) FROM ins)::INTEGER AS inserted FROM v`;

/** The verdict log's batched rows (kept.ts), one array per column as above. */
const VERDICTS_SQL = `INSERT INTO verdict_log (${VERDICT_COLUMNS.join(', ')})
SELECT * FROM ${unnestOf(VERDICT_TYPES, 1)}
ON CONFLICT (account_id, at, id) DO NOTHING`;

/** The counter rows of a policy's limits from each one's oldest counted bucket on (rows.ts, countersQuery's rows). */
const COUNTERS_SQL = `SELECT limit_id, window_key, bucket, usd, n, reserved_usd FROM limit_counters c
WHERE account_id = $1 AND policy = $2 AND EXISTS (
  SELECT 1 FROM unnest($3::text[], $4::text[], $5::bigint[]) AS w(limit_id, window_key, from_bucket)
  WHERE c.limit_id = w.limit_id AND c.window_key = w.window_key AND c.bucket >= w.from_bucket)`;

/** Rows of `width` values as `width` column arrays. */
function byColumn(rows: unknown[][], width: number): unknown[][] {
  const cols: unknown[][] = Array.from({ length: width }, () => new Array(rows.length));
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    for (let k = 0; k < width; k++) cols[k][r] = row[k];
  }
  return cols;
}

/** One count asked for (consumeQuota). */
interface QuotaAsk {
  keyId: string;
  period: string;
  limit: number;
}

/** A reservation whose batch's COMMIT got no answer, and the time of its verdict-log row if it carried one. */
type InDoubt = Pick<ReserveRequest, 'accountId' | 'policy' | 'at'> & { verdictAt: number | null };

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  private signupCounts = 0;

  private constructor(private readonly pool: pg.Pool) {}

  /** Opens a pool and proves the database answers; a clear StoreError when it does not. */
  static async open(databaseUrl: string, opts: PostgresOptions = {}): Promise<PostgresStore> {
    const where = redactUrl(databaseUrl);
    let pool: pg.Pool;
    try {
      new URL(databaseUrl);
      pool = new pg.Pool({
        connectionString: databaseUrl,
        max: opts.max ?? 10,
        connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
        idleTimeoutMillis: 30_000,
        statement_timeout: 10_000,
        application_name: 'preflight',
      });
    } catch (err) {
      throw new StoreError(`DATABASE_URL is not a valid PostgreSQL URL (${where}): ${(err as Error).message}`, {
        cause: err,
      });
    }
    // An idle client losing its connection must not crash the process; the pool replaces it.
    pool.on('error', (err) => opts.logger?.error({ err, database: where }, 'postgres idle client error'));
    try {
      const c = await pool.connect();
      c.release();
    } catch (err) {
      await pool.end().catch(() => undefined);
      const e = err as Error & { code?: string };
      throw new StoreError(
        `cannot reach PostgreSQL at ${where} (DATABASE_URL): ${e.message || e.code || 'connection failed'}${e.code ? ` [${e.code}]` : ''}`,
        { cause: err },
      );
    }
    return new PostgresStore(pool);
  }

  async migrate(): Promise<void> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await c.query(MIGRATIONS_TABLE_SQL.postgres);
      const { rows } = await c.query<{ version: number }>('SELECT version FROM schema_migrations');
      for (const m of pending(rows.map((r) => r.version))) {
        await c.query(m.postgres);
        await c.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      }
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  async close(): Promise<void> {
    if (this.pool.ended) return;
    // Counts and reservations still waiting for their turn are written first, so no caller is left
    // with a failed count that would have been served a moment earlier.
    await Promise.all([this.quotas.flush(), this.reserves.flush()]);
    await this.pool.end();
  }

  /** Runs `fn` in one transaction on one pooled connection; rolls back when it throws. */
  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>, begin = 'BEGIN', commitUnknown?: () => void): Promise<T> {
    const c = await this.pool.connect();
    // A connection lost between two statements is reported on the client, not the query: held
    // here, it fails the transaction's next statement instead of crashing the process.
    let lost: Error | undefined;
    const onError = (err: Error) => {
      lost = err;
    };
    c.on('error', onError);
    try {
      await c.query(begin);
      const out = await fn(c);
      try {
        await c.query('COMMIT');
      } catch (err) {
        // The COMMIT was sent and its answer is lost (or a refusal): it may have committed.
        commitUnknown?.();
        throw err;
      }
      return out;
    } catch (err) {
      lost ??= err as Error;
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.off('error', onError);
      // A client that failed is discarded rather than returned to the pool.
      c.release(lost);
    }
  }

  async createApiKey(key: NewApiKey): Promise<boolean> {
    const sql = `INSERT INTO api_keys (${KEY_COLUMNS.join(', ')}) VALUES (${placeholders(KEY_COLUMNS.length)})
      ON CONFLICT (email) WHERE revoked_at IS NULL AND role = 'owner' DO NOTHING`;
    const now = new Date();
    // The account and its owner key exist together or not at all.
    return this.tx(async (c) => {
      await c.query('INSERT INTO accounts (id, created_at) VALUES ($1, $2)', [key.id, now]);
      if ((await c.query(sql, keyValues(key, now))).rowCount === 1) return true;
      await c.query('DELETE FROM accounts WHERE id = $1', [key.id]);
      return false;
    });
  }

  async findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const { rows } = await this.pool.query<KeyRow>('SELECT * FROM api_keys WHERE key_hash = $1', [keyHash]);
    return rows[0] ? keyFromRow(rows[0]) : null;
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return (await this.pool.query<KeyRow>('SELECT * FROM api_keys ORDER BY created_at, id')).rows.map(keyFromRow);
  }

  async revokeApiKey(idOrPrefix: string): Promise<number> {
    const r = await this.pool.query(
      'UPDATE api_keys SET revoked_at = $2 WHERE (id = $1 OR prefix = $1) AND revoked_at IS NULL',
      [idOrPrefix, new Date()],
    );
    return r.rowCount ?? 0;
  }

  async setPlan(idOrPrefix: string, plan: Plan): Promise<number> {
    if (!isPlan(plan)) throw new TypeError(`unknown plan ${JSON.stringify(plan)}`);
    const r = await this.pool.query(
      'UPDATE api_keys SET plan = $2 WHERE (id = $1 OR prefix = $1) AND revoked_at IS NULL',
      [idOrPrefix, plan],
    );
    return r.rowCount ?? 0;
  }

  /**
   * One UPSERT that increments only below the limit. Under READ COMMITTED a conflicting row is
   * locked and its WHERE re-checked against the newest version, so concurrent callers never
   * count past the limit.
   */
  private async count(
    table: 'key_usage' | 'signup_attempts',
    ca: string,
    cb: string,
    a: string,
    b: string,
    limit: number,
  ): Promise<UsageResult> {
    if (limit > 0) {
      const { rows } = await this.pool.query<{ used: string }>(
        `INSERT INTO ${table} (${ca}, ${cb}, used) VALUES ($1, $2, 1)
         ON CONFLICT (${ca}, ${cb}) DO UPDATE SET used = ${table}.used + 1 WHERE ${table}.used < $3 RETURNING used`,
        [a, b, limit],
      );
      if (rows[0]) return { allowed: true, used: Number(rows[0].used), limit };
    }
    const { rows } = await this.pool.query<{ used: string }>(
      `SELECT used FROM ${table} WHERE ${ca} = $1 AND ${cb} = $2`,
      [a, b],
    );
    return { allowed: false, used: rows[0] ? Number(rows[0].used) : 0, limit };
  }

  /**
   * Counts are grouped per key, month and limit (./batch.ts): the counts asked for in the same few
   * turns of the event loop, or while the key's previous group is in the database, are counted
   * by one statement. One row per key and month is what every count of a fleet writes; counted
   * one statement each, the counts of all instances wait in line for that row's lock, each for
   * the commit before it. Each caller is answered once its count is committed, with what counting
   * it alone, in order, would have given.
   */
  consumeQuota(keyId: string, period: string, limit: number): Promise<UsageResult> {
    return this.quotas.submit(`${keyId}\u0000${period}\u0000${limit}`, { keyId, period, limit });
  }

  private readonly quotas = new KeyedBatcher<QuotaAsk, UsageResult>((asks) => this.countGroup(asks));

  /**
   * One group's counts, all for one key, month and limit. When the whole group fits under the limit
   * (the usual case), one UPSERT adds them all and each ask takes the next number. When it may not,
   * the row is read and the asks that fit are added by one UPSERT that applies only if the row still
   * holds what was read (another instance may have counted in between: then it is read again).
   * Either way the first asks take the next numbers and the rest are refused with the count as it
   * then stands, as counting each alone, in order, would have given.
   */
  private async countGroup(asks: QuotaAsk[]): Promise<UsageResult[]> {
    const { keyId, period, limit } = asks[0];
    const n = asks.length;
    if (n === 1) return [await this.count('key_usage', 'key_id', 'period', keyId, period, limit)];
    const numbered = (before: number, allowed: number): UsageResult[] =>
      asks.map((_, j) =>
        j < allowed
          ? { allowed: true, used: before + j + 1, limit }
          : { allowed: false, used: before + allowed, limit },
      );
    if (n <= limit) {
      const { rows } = await this.pool.query<{ used: string }>(
        `INSERT INTO key_usage AS k (key_id, period, used) VALUES ($1, $2, $3)
         ON CONFLICT (key_id, period) DO UPDATE SET used = k.used + $3 WHERE k.used + $3 <= $4 RETURNING used`,
        [keyId, period, n, limit],
      );
      if (rows[0]) return numbered(Number(rows[0].used) - n, n);
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      const before = await this.getUsage(keyId, period);
      const allowed = Math.min(n, Math.max(0, limit - before));
      if (allowed === 0) return numbered(before, 0);
      const { rows } = await this.pool.query<{ used: string }>(
        `INSERT INTO key_usage AS k (key_id, period, used) VALUES ($1, $2, $3)
         ON CONFLICT (key_id, period) DO UPDATE SET used = k.used + $3 WHERE k.used = $4 RETURNING used`,
        [keyId, period, allowed, before],
      );
      if (rows[0]) return numbered(before, allowed);
    }
    // The row kept moving under a busy fleet: one statement per ask, each deciding against the row as it stands.
    const out: UsageResult[] = [];
    for (let j = 0; j < n; j++) out.push(await this.count('key_usage', 'key_id', 'period', keyId, period, limit));
    return out;
  }

  async refundQuota(keyId: string, period: string): Promise<void> {
    await this.pool.query('UPDATE key_usage SET used = used - 1 WHERE key_id = $1 AND period = $2 AND used > 0', [
      keyId,
      period,
    ]);
  }

  async getUsage(keyId: string, period: string): Promise<number> {
    const { rows } = await this.pool.query<{ used: string }>(
      'SELECT used FROM key_usage WHERE key_id = $1 AND period = $2',
      [keyId, period],
    );
    return rows[0] ? Number(rows[0].used) : 0;
  }

  async countSignup(client: string, window: string, limit: number): Promise<UsageResult> {
    if (this.signupCounts++ % PRUNE_EVERY === 0)
      await this.pool.query('DELETE FROM signup_attempts WHERE bucket < $1', [window]);
    return this.count('signup_attempts', 'client', 'bucket', client, window, limit);
  }

  async claimPayment(p: NewPayment): Promise<boolean> {
    const sql = `INSERT INTO payments (${PAYMENT_COLUMNS.join(', ')}) VALUES (${placeholders(PAYMENT_COLUMNS.length)})
      ON CONFLICT (asset, payer, nonce) DO NOTHING`;
    return (await this.pool.query(sql, paymentValues(p, new Date()))).rowCount === 1;
  }

  async claimCoveredPayment(p: NewPayment, balance: bigint): Promise<PaymentClaim> {
    const { rows } = await this.pool.query<{ verdict: string; inserted: number }>({
      name: 'preflight-claim-covered',
      text: CLAIM_COVERED_SQL,
      values: [...paymentValues(p, new Date()), balance.toString()],
    });
    const verdict = rows[0]?.verdict;
    if (verdict === 'uncovered') return 'uncovered';
    // A claim the function allowed can still meet a copy inserted in between by a claim that takes
    // no lock (claimPayment, on an instance with no chain to read balances): the insert does nothing.
    return verdict === 'claimed' && rows[0].inserted === 1 ? 'claimed' : 'replay';
  }

  async updatePayment(
    id: string,
    from: PaymentState[],
    to: PaymentState,
    fields: PaymentUpdateFields = {},
  ): Promise<boolean> {
    if (from.length === 0) return false;
    const { sql, params } = paymentUpdate(id, from, to, fields, new Date(), (i) => `$${i}`);
    return (await this.pool.query(sql, params)).rowCount === 1;
  }

  async updatePayments(updates: readonly PaymentUpdate[]): Promise<boolean[]> {
    if (updates.length === 0) return [];
    for (const u of updates)
      for (const st of [...u.from, u.to])
        if (!PAYMENT_STATES.includes(st)) throw new TypeError(`unknown payment state ${JSON.stringify(st)}`);
    // One statement, one row of arrays per update: each row keeps its own compare-and-set, and a
    // field an update leaves out keeps the stored value. Ids are distinct (a payment has one
    // settlement at a time); a repeated id is written by the next statement.
    const seen = new Set<string>();
    const first: number[] = [];
    const repeated: number[] = [];
    updates.forEach((u, i) => {
      (seen.has(u.id) ? repeated : first).push(i);
      seen.add(u.id);
    });
    const now = first.map((i) => updates[i]).filter((u) => u.from.length > 0);
    const f = (u: PaymentUpdate) => u.fields ?? {};
    const { rows } = await this.pool.query<{ id: string }>(
      `UPDATE payments AS p SET
         state = u.to_state,
         updated_at = $1,
         tx_hash = CASE WHEN u.set_tx THEN u.tx_hash ELSE p.tx_hash END,
         last_error = CASE WHEN u.set_error THEN u.last_error ELSE p.last_error END,
         attempts = CASE u.attempts_by WHEN 1 THEN p.attempts + 1 WHEN -1 THEN GREATEST(p.attempts - 1, 0) ELSE p.attempts END
       FROM unnest($2::text[], $3::text[], $4::text[], $5::boolean[], $6::text[], $7::boolean[], $8::text[], $9::int[])
         AS u(id, from_states, to_state, set_tx, tx_hash, set_error, last_error, attempts_by)
       WHERE p.id = u.id AND p.state = ANY (string_to_array(u.from_states, ','))
       RETURNING p.id`,
      [
        new Date(),
        now.map((u) => u.id),
        now.map((u) => u.from.join(',')),
        now.map((u) => u.to),
        now.map((u) => f(u).txHash !== undefined),
        now.map((u) => f(u).txHash ?? null),
        now.map((u) => f(u).lastError !== undefined),
        now.map((u) => f(u).lastError ?? null),
        now.map((u) => (f(u).incrementAttempts ? 1 : f(u).refundAttempt ? -1 : 0)),
      ],
    );
    const changed = new Set(rows.map((r) => r.id));
    const out = updates.map((u) => u.from.length > 0 && changed.has(u.id));
    if (repeated.length > 0) {
      const rest = await this.updatePayments(repeated.map((i) => updates[i]));
      repeated.forEach((i, k) => {
        out[i] = rest[k];
      });
    }
    return out;
  }

  async getPayment(id: string): Promise<PaymentRecord | null> {
    const { rows } = await this.pool.query<PaymentRow>('SELECT * FROM payments WHERE id = $1', [id]);
    return rows[0] ? paymentFromRow(rows[0]) : null;
  }

  async listUnsettledPayments(olderThanMs: number, limit: number): Promise<PaymentRecord[]> {
    const { rows } = await this.pool.query<PaymentRow>(
      `SELECT * FROM payments WHERE state IN ('verified', 'settling') AND updated_at <= $1 ORDER BY updated_at, id LIMIT $2`,
      [new Date(Date.now() - olderThanMs), limit],
    );
    return rows.map(paymentFromRow);
  }

  async countPaymentsByState(): Promise<Record<PaymentState, number>> {
    const out = emptyStateCounts();
    const { rows } = await this.pool.query<{ state: PaymentState; n: string }>(
      'SELECT state, COUNT(*) AS n FROM payments GROUP BY state',
    );
    for (const r of rows) out[r.state] = Number(r.n);
    return out;
  }

  async claimPaymentId(r: PaymentIdRequest): Promise<PaymentIdClaim> {
    const now = Date.now();
    await this.pool.query('DELETE FROM payment_ids WHERE payer = $1 AND pid = $2 AND expires_at <= $3', [
      r.payer,
      r.pid,
      now,
    ]);
    const inserted = await this.pool.query(
      `INSERT INTO payment_ids (payer, pid, fingerprint, owner, expires_at) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (payer, pid) DO NOTHING`,
      [r.payer, r.pid, r.fingerprint, r.owner, now + r.ttlMs],
    );
    if (inserted.rowCount === 1) return { kind: 'new' };
    const { rows } = await this.pool.query<PaymentIdRow>('SELECT * FROM payment_ids WHERE payer = $1 AND pid = $2', [
      r.payer,
      r.pid,
    ]);
    return paymentIdClaim(rows[0], r.fingerprint);
  }

  async completePaymentId(payer: string, pid: string, owner: string, a: KeptAnswer): Promise<boolean> {
    const res = await this.pool.query(
      'UPDATE payment_ids SET status = $1, body = $2, receipt = $3, payment_id = $4 WHERE payer = $5 AND pid = $6 AND owner = $7',
      [a.status, a.body, a.receipt, a.paymentId, payer, pid, owner],
    );
    return res.rowCount === 1;
  }

  async releasePaymentId(payer: string, pid: string, owner: string): Promise<void> {
    await this.pool.query('DELETE FROM payment_ids WHERE payer = $1 AND pid = $2 AND owner = $3 AND status IS NULL', [
      payer,
      pid,
      owner,
    ]);
  }

  private async liveKey(c: pg.PoolClient | pg.Pool, accountId: string, keyId: string): Promise<ApiKeyRecord | null> {
    const { rows } = await c.query<KeyRow>(
      'SELECT * FROM api_keys WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL',
      [keyId, accountId],
    );
    return rows[0] ? keyFromRow(rows[0]) : null;
  }

  private async hasPolicy(c: pg.PoolClient, accountId: string, name: string): Promise<boolean> {
    const { rowCount } = await c.query('SELECT 1 FROM policies WHERE account_id = $1 AND name = $2', [accountId, name]);
    return rowCount === 1;
  }

  /** Serialises changes to one account's keys and policies across every process (a transaction-scoped lock). */
  private async lockAccount(c: pg.PoolClient, accountId: string): Promise<void> {
    await c.query('SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  }

  async listAccountKeys(accountId: string): Promise<ApiKeyRecord[]> {
    const { rows } = await this.pool.query<KeyRow>(
      `SELECT * FROM api_keys WHERE account_id = $1 ${ACCOUNT_KEYS_ORDER}`,
      [accountId],
    );
    return rows.map(keyFromRow);
  }

  async createAgentKey(k: NewAgentKey): Promise<ApiKeyRecord | KeyRefusal> {
    const sql = `INSERT INTO api_keys (${KEY_COLUMNS.join(', ')}) VALUES (${placeholders(KEY_COLUMNS.length)})
      ON CONFLICT (account_id, name) WHERE revoked_at IS NULL DO NOTHING`;
    return this.tx(async (c): Promise<ApiKeyRecord | KeyRefusal> => {
      await this.lockAccount(c, k.accountId);
      const owner = await this.liveKey(c, k.accountId, k.accountId);
      if (!owner) return 'not_found';
      if (k.policy !== null && !(await this.hasPolicy(c, k.accountId, k.policy))) return 'no_policy';
      const { rows } = await c.query<{ n: string }>(
        "SELECT COUNT(*) AS n FROM api_keys WHERE account_id = $1 AND role = 'agent' AND revoked_at IS NULL",
        [k.accountId],
      );
      if (Number(rows[0].n) >= k.maxAgentKeys) return 'too_many';
      if ((await c.query(sql, agentKeyValues(k, owner, new Date()))).rowCount !== 1) return 'name_taken';
      return (await this.liveKey(c, k.accountId, k.id)) as ApiKeyRecord;
    });
  }

  async setKeyPolicy(accountId: string, keyId: string, policy: string | null): Promise<ApiKeyRecord | KeyRefusal> {
    return this.tx(async (c): Promise<ApiKeyRecord | KeyRefusal> => {
      await this.lockAccount(c, accountId);
      if (!(await this.liveKey(c, accountId, keyId))) return 'not_found';
      if (policy !== null && !(await this.hasPolicy(c, accountId, policy))) return 'no_policy';
      await c.query('UPDATE api_keys SET policy = $1 WHERE id = $2', [policy, keyId]);
      return (await this.liveKey(c, accountId, keyId)) as ApiKeyRecord;
    });
  }

  async revokeAccountKey(accountId: string, keyId: string): Promise<ApiKeyRecord | KeyRefusal> {
    return this.tx(async (c): Promise<ApiKeyRecord | KeyRefusal> => {
      await this.lockAccount(c, accountId);
      const key = await this.liveKey(c, accountId, keyId);
      if (!key) return 'not_found';
      if (key.role === 'owner') return 'owner_key';
      const at = new Date();
      await c.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2', [at, keyId]);
      return { ...key, revokedAt: at };
    });
  }

  async touchKeys(keyIds: string[], at: Date): Promise<void> {
    if (keyIds.length === 0) return;
    await this.pool.query('UPDATE api_keys SET last_used_at = $1 WHERE id = ANY($2)', [at.getTime(), keyIds]);
  }

  private async current(c: pg.PoolClient | pg.Pool, accountId: string, name: string): Promise<PolicyVersion | null> {
    const { rows } = await c.query<PolicyVersionRow>(
      `SELECT v.* FROM policies p JOIN policy_versions v
      ON v.account_id = p.account_id AND v.name = p.name AND v.version = p.version
      WHERE p.account_id = $1 AND p.name = $2`,
      [accountId, name],
    );
    return rows[0] ? policyFromRow(rows[0]) : null;
  }

  async putPolicy(
    accountId: string,
    name: string,
    hash: string,
    document: string,
  ): Promise<{ version: PolicyVersion; created: boolean }> {
    return this.tx(async (c) => {
      await this.lockAccount(c, accountId);
      const cur = await this.current(c, accountId, name);
      if (cur && cur.hash === hash) return { version: cur, created: false };
      const { rows } = await c.query<{ v: number | null }>(
        'SELECT MAX(version) AS v FROM policy_versions WHERE account_id = $1 AND name = $2',
        [accountId, name],
      );
      const version = Number(rows[0].v ?? 0) + 1;
      const at = Date.now();
      await c.query(
        'INSERT INTO policy_versions (account_id, name, version, hash, document, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [accountId, name, version, hash, document, at],
      );
      await c.query(
        `INSERT INTO policies (account_id, name, version) VALUES ($1, $2, $3)
        ON CONFLICT (account_id, name) DO UPDATE SET version = excluded.version`,
        [accountId, name, version],
      );
      return { version: { name, version, hash, document, createdAt: new Date(at) }, created: true };
    });
  }

  async getPolicy(accountId: string, name: string): Promise<PolicyVersion | null> {
    return this.current(this.pool, accountId, name);
  }

  async getPolicyVersion(accountId: string, name: string, version: number): Promise<PolicyVersion | null> {
    const { rows } = await this.pool.query<PolicyVersionRow>(
      'SELECT * FROM policy_versions WHERE account_id = $1 AND name = $2 AND version = $3',
      [accountId, name, version],
    );
    return rows[0] ? policyFromRow(rows[0]) : null;
  }

  async listPolicies(accountId: string): Promise<PolicyVersion[]> {
    const { rows } = await this.pool.query<PolicyVersionRow>(
      `SELECT v.* FROM policies p JOIN policy_versions v
      ON v.account_id = p.account_id AND v.name = p.name AND v.version = p.version
      WHERE p.account_id = $1 ORDER BY p.name`,
      [accountId],
    );
    return rows.map(policyFromRow);
  }

  async deletePolicy(accountId: string, name: string): Promise<'deleted' | 'not_found' | 'bound'> {
    return this.tx(async (c): Promise<'deleted' | 'not_found' | 'bound'> => {
      await this.lockAccount(c, accountId);
      if (!(await this.hasPolicy(c, accountId, name))) return 'not_found';
      const bound = await c.query(
        'SELECT 1 FROM api_keys WHERE account_id = $1 AND policy = $2 AND revoked_at IS NULL LIMIT 1',
        [accountId, name],
      );
      if (bound.rowCount !== 0) return 'bound';
      await c.query('DELETE FROM policies WHERE account_id = $1 AND name = $2', [accountId, name]);
      await c.query('DELETE FROM policy_versions WHERE account_id = $1 AND name = $2', [accountId, name]);
      return 'deleted';
    });
  }

  private async counters(
    c: pg.PoolClient | pg.Pool,
    accountId: string,
    policy: string,
    limits: LimitWindow[],
  ): Promise<CounterRow[]> {
    if (limits.length === 0) return [];
    return (
      await c.query<CounterRow>({
        name: 'preflight-counters',
        text: COUNTERS_SQL,
        values: [accountId, policy, limits.map((l) => l.id), limits.map((l) => l.windowKey), limits.map((l) => l.from)],
      })
    ).rows;
  }

  /**
   * Batched per (account, policy) (./batch.ts); each batch is one transaction that first takes a
   * transaction-scoped advisory lock on (account, policy): every process reserving in that
   * policy's limits waits for the one before it to commit, so the counters it reads (at most a
   * window's buckets per limit) already hold every earlier reservation. The batch's reservations
   * and its counter changes are one statement.
   */
  async reserve(r: ReserveRequest): Promise<ReserveResult> {
    await this.voidInDoubt();
    return this.reserves.submit(reserveKey(r), r);
  }

  /**
   * Reservations whose batch's COMMIT got no answer (the connection was cut while it was in
   * flight): the guard answered `wait` for them, so a reservation that did commit must not stand
   * (docs/policies.md §4). Kept here until voided; voided before the next reservation or usage read.
   */
  private readonly inDoubt = new Map<string, InDoubt>();

  private voiding: Promise<void> | null = null;

  /** Voids every in-doubt reservation; those it cannot reach stay in doubt and it throws. */
  private async voidInDoubt(): Promise<void> {
    if (this.inDoubt.size === 0) return;
    this.voiding ??= (async () => {
      try {
        for (const [id, r] of [...this.inDoubt]) {
          await this.voidReservation(id, r);
          this.inDoubt.delete(id);
        }
      } finally {
        this.voiding = null;
      }
    })();
    await this.voiding;
  }

  /**
   * Voids one reservation by id if it exists: released, and its amount and count taken off its
   * counters. Under the (account, policy) lock, so a batch whose COMMIT is still being applied
   * finishes first; a reservation that never committed is a no-op.
   */
  private async voidReservation(id: string, r: InDoubt): Promise<void> {
    await this.tx(
      async (c) => {
        const { rows } = await c.query<ReservationRow & { state: string }>(
          `SELECT account_id, policy, usd, limits, state FROM reservations
          WHERE at = $1 AND id = $2 AND state <> 'released' FOR UPDATE`,
          [r.at, id],
        );
        if (rows.length === 0) return;
        await c.query(`UPDATE reservations SET state = 'released' WHERE at = $1 AND id = $2`, [r.at, id]);
        // Its verdict-log row said proceed; the answer that went out was a wait, logged on its own.
        if (r.verdictAt !== null)
          await c.query('DELETE FROM verdict_log WHERE account_id = $1 AND at = $2 AND id = $3', [
            r.accountId,
            r.verdictAt,
            id,
          ]);
        // A reserved row still holds its amount as reserved; a committed one no longer does.
        for (const row of counterSettles(rows[0], 'released')) {
          if (rows[0].state !== 'reserved') row[7] = 0;
          await c.query(
            COUNTER_UPSERT((i) => `$${i}`),
            row,
          );
        }
      },
      `BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('${reserveKey(r).replace(/'/g, "''")}', 0))`,
    );
  }

  private readonly reserves = new KeyedBatcher<ReserveRequest, ReserveResult>((asks) => {
    let accepted: ReserveRequest[] = [];
    return this.tx(
      async (c): Promise<ReserveResult[]> => {
        const { accountId, policy } = asks[0];
        const rows = await this.counters(c, accountId, policy, unionLimits(asks));
        const decided = decideBatch(asks, rows);
        const results = decided.results;
        accepted = decided.accepted;
        if (accepted.length === 0) return results;
        // The accepted answers' verdict-log rows go in the same statement, so in the same commit (docs/policies.md §10).
        const logged: unknown[][] = [];
        for (const a of accepted) if (a.verdict) logged.push(verdictValues(a.verdict));
        await c.query({
          name: 'preflight-reserve-write',
          text: RESERVE_WRITE_SQL,
          values: [
            ...byColumn(accepted.map(reservationRow), RESERVATION_COLUMNS.length),
            ...byColumn(summedAdds(accepted), COUNTER_COLUMNS),
            ...byColumn(logged, VERDICT_COLUMNS.length),
          ],
        });
        return results;
      },
      // BEGIN and the lock in one round trip (a simple query; the key's quotes doubled).
      `BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('${reserveKey(asks[0]).replace(/'/g, "''")}', 0))`,
      () => {
        for (const a of accepted)
          this.inDoubt.set(a.id, {
            accountId: a.accountId,
            policy: a.policy,
            at: a.at,
            verdictAt: a.verdict?.at ?? null,
          });
      },
    );
  });

  async limitUsage(accountId: string, policy: string, limits: LimitWindow[]): Promise<LimitUsage[]> {
    await this.voidInDoubt();
    return usageFromCounters(limits, await this.counters(this.pool, accountId, policy, limits));
  }

  async dueReservations(now: number, max: number): Promise<DueReservation[]> {
    const { rows } = await this.pool.query<DueRow>(
      DUE_RESERVATIONS_SQL((i) => `$${i}`),
      [now, max],
    );
    return rows.map(dueFromRow);
  }

  async settleReservation(key: ReservationKey, state: 'committed' | 'released'): Promise<boolean> {
    return this.tx(async (c): Promise<boolean> => {
      const { rows } = await c.query<ReservationRow>(
        `UPDATE reservations SET state = $1 WHERE at = $2 AND id = $3 AND state = 'reserved'
        RETURNING account_id, policy, usd, limits`,
        [state, key.at, key.id],
      );
      if (rows.length === 0) return false;
      for (const row of counterSettles(rows[0], state))
        await c.query(
          COUNTER_UPSERT((i) => `$${i}`),
          row,
        );
      return true;
    });
  }

  async pruneCounters(before: number): Promise<number> {
    return (await this.pool.query('DELETE FROM limit_counters WHERE bucket < $1', [before])).rowCount ?? 0;
  }

  async takeLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const { rowCount } = await this.pool.query(
      `INSERT INTO leases (name, holder, until_ms) VALUES ($1, $2, $3)
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
      WHERE leases.holder = excluded.holder OR leases.until_ms <= $4 RETURNING holder`,
      [name, holder, now + ttlMs, now],
    );
    return rowCount === 1;
  }

  /**
   * Each statement is atomic on its own: the insert either takes the key or finds the row another
   * attempt holds, which is then read as it stands (a row deleted in between reads as pending, and
   * the caller asks again).
   */
  async claimIdempotencyKey(r: IdempotencyRequest): Promise<IdempotencyClaim> {
    const now = Date.now();
    await this.pool.query('DELETE FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2 AND expires_at <= $3', [
      r.accountId,
      r.key,
      now,
    ]);
    const inserted = await this.pool.query(
      `INSERT INTO idempotency_keys (account_id, idem_key, fingerprint, owner, expires_at) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (account_id, idem_key) DO NOTHING`,
      [r.accountId, r.key, r.fingerprint, r.owner, now + r.leaseMs],
    );
    if (inserted.rowCount === 1) return { kind: 'new' };
    const { rows } = await this.pool.query<IdempotencyRow>(
      'SELECT fingerprint, status, body FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2',
      [r.accountId, r.key],
    );
    return idempotencyClaim(rows[0], r.fingerprint);
  }

  async completeIdempotencyKey(
    accountId: string,
    key: string,
    owner: string,
    a: { status: number; body: string },
    keepMs: number,
  ): Promise<boolean> {
    const res = await this.pool.query(
      'UPDATE idempotency_keys SET status = $1, body = $2, expires_at = $3 WHERE account_id = $4 AND idem_key = $5 AND owner = $6',
      [a.status, a.body, Date.now() + keepMs, accountId, key, owner],
    );
    return res.rowCount === 1;
  }

  async releaseIdempotencyKey(accountId: string, key: string, owner: string): Promise<void> {
    await this.pool.query(
      'DELETE FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2 AND owner = $3 AND status IS NULL',
      [accountId, key, owner],
    );
  }

  /** One statement per 500 rows, one array per column (VERDICTS_SQL): all of them or none. */
  async appendVerdicts(rows: VerdictRecord[]): Promise<void> {
    for (let from = 0; from < rows.length; from += 500)
      await this.pool.query({
        name: 'preflight-verdicts',
        text: VERDICTS_SQL,
        values: byColumn(rows.slice(from, from + 500).map(verdictValues), VERDICT_COLUMNS.length),
      });
  }

  async verdictPage(q: VerdictQuery): Promise<VerdictEntry[]> {
    const { sql, params } = verdictPageQuery(q, (i) => `$${i}`);
    return (await this.pool.query<VerdictRow>(sql, params)).rows.map(verdictFromRow);
  }

  async pruneKept(
    now: number,
    verdictsBefore: number,
    max: number,
  ): Promise<{ verdicts: number; idempotency: number }> {
    const v = await this.pool.query(
      PRUNE_VERDICTS_SQL((i) => `$${i}`),
      [verdictsBefore, max],
    );
    const k = await this.pool.query(
      PRUNE_IDEMPOTENCY_SQL((i) => `$${i}`),
      [now, max],
    );
    return { verdicts: v.rowCount ?? 0, idempotency: k.rowCount ?? 0 };
  }

  async attestationKey(candidate: AttestationKey): Promise<AttestationKey> {
    await this.pool.query(
      `INSERT INTO attestation_keys (id, private_key, address, created_at) VALUES ('verdict', $1, $2, now())
        ON CONFLICT (id) DO NOTHING`,
      [candidate.privateKey, candidate.address],
    );
    const { rows } = await this.pool.query<{ private_key: string; address: string }>(
      "SELECT private_key, address FROM attestation_keys WHERE id = 'verdict'",
    );
    return { privateKey: rows[0].private_key, address: rows[0].address };
  }

  async screeningListHeads(): Promise<ScreeningListHead[]> {
    const { rows } = await this.pool.query<ScreeningHeadRow>(SCREENING.heads);
    return rows.map(screeningHead);
  }

  async screeningList(name: string): Promise<ScreeningListRow | null> {
    return readScreeningList(this.#screeningDb(), SCREENING, name);
  }

  /** The chunked list code's view of this database (src/store/rows.ts). */
  #screeningDb(): ScreeningDb {
    return {
      run: async (sql, params) => void (await this.pool.query(sql, params)),
      all: async <T>(sql: string, params: unknown[]) => (await this.pool.query(sql, params)).rows as T[],
    };
  }

  async claimScreeningRefresh(
    name: string,
    owner: string,
    now: number,
    leaseMs: number,
    dueBeforeMs: number,
  ): Promise<boolean> {
    await this.pool.query(SCREENING.seed, [name]);
    const r = await this.pool.query(SCREENING.claim, [owner, now + leaseMs, name, now, dueBeforeMs]);
    return r.rowCount === 1;
  }

  async putScreeningList(row: ScreeningListRow, _owner: string): Promise<void> {
    await putScreeningList(this.#screeningDb(), SCREENING, row);
  }

  async markScreeningRefresh(
    name: string,
    owner: string,
    at: number,
    status: ScreeningStatus,
    error: string | null,
  ): Promise<void> {
    await this.pool.query(SCREENING.mark, [at, status, error, name, owner]);
  }

  async recordCounterparties(account: string, addresses: readonly string[], at: number): Promise<void> {
    if (addresses.length === 0) return;
    // One statement for all: unnest keeps it atomic and one round trip.
    await this.pool.query(
      `INSERT INTO screening_counterparties (account, address, last_at)
        SELECT $1, a, $3 FROM unnest($2::text[]) AS a
        ON CONFLICT (account, address) DO UPDATE SET last_at = GREATEST(screening_counterparties.last_at, excluded.last_at)`,
      [account, [...new Set(addresses)], at],
    );
  }

  async counterparties(account: string, since: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ address: string }>(SCREENING.counterparties, [account, since]);
    return rows.map((r) => r.address);
  }

  async pruneCounterparties(before: number): Promise<number> {
    const r = await this.pool.query(SCREENING.prune, [before]);
    return r.rowCount ?? 0;
  }
}
