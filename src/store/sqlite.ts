/**
 * The embedded store: one SQLite file in WAL mode. better-sqlite3 is synchronous, so every
 * statement here is atomic with respect to this process; `busy_timeout` makes other processes
 * on the same file wait for the write lock instead of failing, which keeps counting atomic
 * across processes too (each count is one UPSERT statement).
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { StoreError } from './errors.js';
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

const BUSY_TIMEOUT_MS = 5000;

/** Old signup buckets are deleted every this many signup counts. */
const PRUNE_EVERY = 256;

interface QuotaAsk {
  keyId: string;
  period: string;
  limit: number;
  resolve(r: UsageResult): void;
  reject(err: unknown): void;
}

/** `sqlite:./data/x.db`, `sqlite:///abs/x.db` or `sqlite::memory:` → the path better-sqlite3 takes. */
export function sqlitePath(databaseUrl: string): string {
  const rest = databaseUrl.replace(/^sqlite:/, '');
  return rest.startsWith('//') ? rest.slice(2) : rest;
}

const SCREENING = screeningSql(false);

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly stmts = new Map<string, Database.Statement>();
  private signupCounts = 0;

  private readonly countGroup: Database.Transaction<(group: QuotaAsk[]) => UsageResult[]>;

  private constructor(private readonly db: Database.Database) {
    this.countGroup = db.transaction((group: QuotaAsk[]) => this.countAsks(group));
  }

  static open(path: string): SqliteStore {
    const memory = path === ':memory:';
    const file = memory ? path : resolve(path);
    try {
      if (!memory) mkdirSync(dirname(file), { recursive: true });
      const db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
      db.pragma('journal_mode = WAL');
      // WAL + NORMAL: a commit survives a process crash; only an OS crash may lose the last commits.
      db.pragma('synchronous = NORMAL');
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      db.pragma('foreign_keys = ON');
      return new SqliteStore(db);
    } catch (err) {
      throw new StoreError(`cannot open the SQLite database at ${file} (DATABASE_URL): ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  private q(sql: string): Database.Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  async migrate(): Promise<void> {
    // IMMEDIATE takes the write lock first, so two processes starting at once apply each migration once.
    const run = this.db.transaction(() => {
      this.db.exec(MIGRATIONS_TABLE_SQL.sqlite);
      const applied = this.db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>;
      for (const m of pending(applied.map((r) => r.version))) {
        this.db.exec(m.sqlite);
        this.db
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(m.version, m.name, Date.now());
      }
    });
    run.immediate();
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    if (this.quotaGroup.length > 0) this.commitQuotaGroup();
    this.db.close();
  }

  async createApiKey(key: NewApiKey): Promise<boolean> {
    const sql = `INSERT INTO api_keys (${KEY_COLUMNS.join(', ')}) VALUES (${KEY_COLUMNS.map(() => '?').join(', ')})
      ON CONFLICT (email) WHERE revoked_at IS NULL DO NOTHING`;
    return this.q(sql).run(...keyValues(key, Date.now())).changes === 1;
  }

  async findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const row = this.q('SELECT * FROM api_keys WHERE key_hash = ?').get(keyHash) as KeyRow | undefined;
    return row ? keyFromRow(row) : null;
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return (this.q('SELECT * FROM api_keys ORDER BY created_at, id').all() as KeyRow[]).map(keyFromRow);
  }

  async revokeApiKey(idOrPrefix: string): Promise<number> {
    return this.q('UPDATE api_keys SET revoked_at = ? WHERE (id = ? OR prefix = ?) AND revoked_at IS NULL').run(
      Date.now(),
      idOrPrefix,
      idOrPrefix,
    ).changes;
  }

  async setPlan(idOrPrefix: string, plan: Plan): Promise<number> {
    if (!isPlan(plan)) throw new TypeError(`unknown plan ${JSON.stringify(plan)}`);
    return this.q('UPDATE api_keys SET plan = ? WHERE (id = ? OR prefix = ?) AND revoked_at IS NULL').run(
      plan,
      idOrPrefix,
      idOrPrefix,
    ).changes;
  }

  /** Shared by quota and signup counting: one UPSERT that increments only below the limit. */
  private count(
    table: 'key_usage' | 'signup_attempts',
    cols: [string, string],
    a: string,
    b: string,
    limit: number,
  ): UsageResult {
    const [ca, cb] = cols;
    if (limit > 0) {
      const row = this.q(`INSERT INTO ${table} (${ca}, ${cb}, used) VALUES (?, ?, 1)
        ON CONFLICT (${ca}, ${cb}) DO UPDATE SET used = used + 1 WHERE used < ? RETURNING used`).get(a, b, limit) as
        | { used: number }
        | undefined;
      if (row) return { allowed: true, used: Number(row.used), limit };
    }
    const cur = this.q(`SELECT used FROM ${table} WHERE ${ca} = ? AND ${cb} = ?`).get(a, b) as
      | { used: number }
      | undefined;
    return { allowed: false, used: cur ? Number(cur.used) : 0, limit };
  }

  /**
   * Quota counts are committed in groups: the counts asked for during one turn of the event loop
   * run as one transaction at its end (setImmediate), and each caller's promise settles only once
   * that transaction has committed. A caller is served only after its count is durable, as with
   * one commit per count, but a busy server pays one WAL commit per group instead of one per call
   * (a commit is most of a count's cost). Each UPSERT still decides against the row as the
   * previous one left it, so counting stays exact.
   */
  consumeQuota(keyId: string, period: string, limit: number): Promise<UsageResult> {
    return new Promise<UsageResult>((resolve, reject) => {
      if (this.quotaGroup.push({ keyId, period, limit, resolve, reject }) === 1) setImmediate(this.commitQuotaGroup);
    });
  }

  private quotaGroup: QuotaAsk[] = [];

  /**
   * The counts of one group, inside its transaction. The asks for one key and period (a fleet of
   * agents on one key sends most of a busy group) are counted together: one read of the row, one
   * write of the sum of the asks that fit under the limit. Each ask gets what counting it alone,
   * in order, would have given: the first `limit - used` are allowed, each with its own running
   * count, and the rest are refused with the count as it then stands.
   */
  private countAsks(group: QuotaAsk[]): UsageResult[] {
    const out = new Array<UsageResult>(group.length);
    const runs = new Map<string, number[]>();
    for (let i = 0; i < group.length; i++) {
      const a = group[i];
      const k = `${a.keyId}\u0000${a.period}\u0000${a.limit}`;
      const run = runs.get(k);
      if (run === undefined) runs.set(k, [i]);
      else run.push(i);
    }
    for (const run of runs.values()) {
      const { keyId, period, limit } = group[run[0]];
      if (run.length === 1) {
        out[run[0]] = this.count('key_usage', ['key_id', 'period'], keyId, period, limit);
        continue;
      }
      const row = this.q('SELECT used FROM key_usage WHERE key_id = ? AND period = ?').get(keyId, period) as
        | { used: number }
        | undefined;
      const before = row ? Number(row.used) : 0;
      const allowed = Math.min(run.length, Math.max(0, limit - before));
      if (allowed > 0) {
        this.q(`INSERT INTO key_usage (key_id, period, used) VALUES (?, ?, ?)
          ON CONFLICT (key_id, period) DO UPDATE SET used = used + excluded.used`).run(keyId, period, allowed);
      }
      for (let j = 0; j < run.length; j++) {
        out[run[j]] =
          j < allowed
            ? { allowed: true, used: before + j + 1, limit }
            : { allowed: false, used: before + allowed, limit };
      }
    }
    return out;
  }

  private readonly commitQuotaGroup = (): void => {
    const group = this.quotaGroup;
    this.quotaGroup = [];
    let results: UsageResult[];
    try {
      results = this.countGroup.immediate(group);
    } catch (err) {
      for (const ask of group) ask.reject(err);
      return;
    }
    for (let i = 0; i < group.length; i++) group[i].resolve(results[i]);
  };

  async refundQuota(keyId: string, period: string): Promise<void> {
    this.q('UPDATE key_usage SET used = used - 1 WHERE key_id = ? AND period = ? AND used > 0').run(keyId, period);
  }

  async getUsage(keyId: string, period: string): Promise<number> {
    const row = this.q('SELECT used FROM key_usage WHERE key_id = ? AND period = ?').get(keyId, period) as
      | { used: number }
      | undefined;
    return row ? Number(row.used) : 0;
  }

  async countSignup(client: string, window: string, limit: number): Promise<UsageResult> {
    // Buckets sort as strings (e.g. 2026-11-03T14), so older ones are those below the current.
    if (this.signupCounts++ % PRUNE_EVERY === 0) this.q('DELETE FROM signup_attempts WHERE bucket < ?').run(window);
    return this.count('signup_attempts', ['client', 'bucket'], client, window, limit);
  }

  async claimPayment(p: NewPayment): Promise<boolean> {
    const sql = `INSERT INTO payments (${PAYMENT_COLUMNS.join(', ')}) VALUES (${PAYMENT_COLUMNS.map(() => '?').join(', ')})
      ON CONFLICT (asset, payer, nonce) DO NOTHING`;
    return this.q(sql).run(...paymentValues(p, Date.now())).changes === 1;
  }

  async updatePayment(
    id: string,
    from: PaymentState[],
    to: PaymentState,
    fields: Parameters<Store['updatePayment']>[3] = {},
  ): Promise<boolean> {
    if (from.length === 0) return false;
    const { sql, params } = paymentUpdate(id, from, to, fields, Date.now(), () => '?');
    return this.q(sql).run(...params).changes === 1;
  }

  async getPayment(id: string): Promise<PaymentRecord | null> {
    const row = this.q('SELECT * FROM payments WHERE id = ?').get(id) as PaymentRow | undefined;
    return row ? paymentFromRow(row) : null;
  }

  async listUnsettledPayments(olderThanMs: number, limit: number): Promise<PaymentRecord[]> {
    const rows = this.q(`SELECT * FROM payments WHERE state IN ('verified', 'settling') AND updated_at <= ?
      ORDER BY updated_at, id LIMIT ?`).all(Date.now() - olderThanMs, limit) as PaymentRow[];
    return rows.map(paymentFromRow);
  }

  async countPaymentsByState(): Promise<Record<PaymentState, number>> {
    const out = emptyStateCounts();
    for (const r of this.q('SELECT state, COUNT(*) AS n FROM payments GROUP BY state').all() as Array<{
      state: PaymentState;
      n: number;
    }>)
      out[r.state] = Number(r.n);
    return out;
  }

  async claimPaymentId(r: PaymentIdRequest): Promise<PaymentIdClaim> {
    const now = Date.now();
    return this.db.transaction((): PaymentIdClaim => {
      this.q('DELETE FROM payment_ids WHERE payer = ? AND pid = ? AND expires_at <= ?').run(r.payer, r.pid, now);
      const inserted = this.q(
        `INSERT INTO payment_ids (payer, pid, fingerprint, owner, expires_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (payer, pid) DO NOTHING`,
      ).run(r.payer, r.pid, r.fingerprint, r.owner, now + r.ttlMs);
      if (inserted.changes === 1) return { kind: 'new' };
      const row = this.q('SELECT * FROM payment_ids WHERE payer = ? AND pid = ?').get(r.payer, r.pid) as
        | PaymentIdRow
        | undefined;
      return paymentIdClaim(row, r.fingerprint);
    })();
  }

  async completePaymentId(payer: string, pid: string, owner: string, a: KeptAnswer): Promise<boolean> {
    return (
      this.q(
        'UPDATE payment_ids SET status = ?, body = ?, receipt = ?, payment_id = ? WHERE payer = ? AND pid = ? AND owner = ?',
      ).run(a.status, a.body, a.receipt, a.paymentId, payer, pid, owner).changes === 1
    );
  }

  async releasePaymentId(payer: string, pid: string, owner: string): Promise<void> {
    this.q('DELETE FROM payment_ids WHERE payer = ? AND pid = ? AND owner = ? AND status IS NULL').run(
      payer,
      pid,
      owner,
    );
  }

  async attestationKey(candidate: AttestationKey): Promise<AttestationKey> {
    this.q(`INSERT INTO attestation_keys (id, private_key, address, created_at) VALUES ('verdict', ?, ?, ?)
      ON CONFLICT (id) DO NOTHING`).run(candidate.privateKey, candidate.address, Date.now());
    const row = this.q("SELECT private_key, address FROM attestation_keys WHERE id = 'verdict'").get() as {
      private_key: string;
      address: string;
    };
    return { privateKey: row.private_key, address: row.address };
  }

  async screeningListHeads(): Promise<ScreeningListHead[]> {
    return (this.q(SCREENING.heads).all() as ScreeningHeadRow[]).map(screeningHead);
  }

  async screeningList(name: string): Promise<ScreeningListRow | null> {
    return readScreeningList(this.#screeningDb(), SCREENING, name);
  }

  /** The chunked list code's view of this database (src/store/rows.ts). */
  #screeningDb(): ScreeningDb {
    return {
      run: async (sql, params) => void this.q(sql).run(...params),
      all: async <T>(sql: string, params: unknown[]) => this.q(sql).all(...params) as T[],
    };
  }

  async claimScreeningRefresh(
    name: string,
    owner: string,
    now: number,
    leaseMs: number,
    dueBeforeMs: number,
  ): Promise<boolean> {
    this.q(SCREENING.seed).run(name);
    return this.q(SCREENING.claim).run(owner, now + leaseMs, name, now, dueBeforeMs).changes === 1;
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
    this.q(SCREENING.mark).run(at, status, error, name, owner);
  }

  async recordCounterparties(account: string, addresses: readonly string[], at: number): Promise<void> {
    const st = this.q(SCREENING.record);
    this.db.transaction(() => {
      for (const a of addresses) st.run(account, a, at);
    })();
  }

  async counterparties(account: string, since: number): Promise<string[]> {
    return (this.q(SCREENING.counterparties).all(account, since) as Array<{ address: string }>).map((r) => r.address);
  }

  async pruneCounterparties(before: number): Promise<number> {
    return this.q(SCREENING.prune).run(before).changes;
  }
}
