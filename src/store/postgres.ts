/**
 * The clustered store: PostgreSQL through a pg connection pool. Every count and claim is one
 * statement (UPSERT ... RETURNING, INSERT ... ON CONFLICT DO NOTHING), so any number of service
 * processes on one database share one quota and one payment ledger. Migrations run in one
 * transaction under an advisory lock, so processes starting together apply each once.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { StoreError, redactUrl } from './errors.js';
import { MIGRATIONS_TABLE_SQL, pending } from './migrations.js';
import {
  KEY_COLUMNS,
  PAYMENT_COLUMNS,
  emptyStateCounts,
  isPlan,
  keyFromRow,
  keyValues,
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
} from './rows.js';
import type {
  ScreeningListHead,
  ScreeningListRow,
  ScreeningStatus,
  ApiKeyRecord,
  KeptAnswer,
  PaymentIdClaim,
  PaymentIdRequest,
  AttestationKey,
  NewApiKey,
  NewPayment,
  PaymentRecord,
  PaymentState,
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
    if (!this.pool.ended) await this.pool.end();
  }

  async createApiKey(key: NewApiKey): Promise<boolean> {
    const sql = `INSERT INTO api_keys (${KEY_COLUMNS.join(', ')}) VALUES (${placeholders(KEY_COLUMNS.length)})
      ON CONFLICT (email) WHERE revoked_at IS NULL DO NOTHING`;
    return (await this.pool.query(sql, keyValues(key, new Date()))).rowCount === 1;
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

  async consumeQuota(keyId: string, period: string, limit: number): Promise<UsageResult> {
    return this.count('key_usage', 'key_id', 'period', keyId, period, limit);
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

  async updatePayment(
    id: string,
    from: PaymentState[],
    to: PaymentState,
    fields: Parameters<Store['updatePayment']>[3] = {},
  ): Promise<boolean> {
    if (from.length === 0) return false;
    const { sql, params } = paymentUpdate(id, from, to, fields, new Date(), (i) => `$${i}`);
    return (await this.pool.query(sql, params)).rowCount === 1;
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
