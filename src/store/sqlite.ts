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
import { Checkpointer } from './checkpointer.js';
import { decideBatch, KeyedBatcher, reserveKey, summedAdds, unionLimits } from './batch.js';
import { MIGRATIONS_TABLE_SQL, pending } from './migrations.js';
import {
  ACCOUNT_KEYS_ORDER,
  COUNTER_UPSERT,
  RESERVATION_COLUMNS,
  agentKeyValues,
  counterSettles,
  countersQuery,
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
  paymentFromRow,
  paymentUpdate,
  owed,
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

/**
 * The plain `?` placeholder, for a statement whose shared text (./rows.ts) names each parameter
 * once and in order: its values are then bound by position, about half the binding's cost of the
 * same values bound by number from an object (the limits' counter reads and upserts, on every
 * reservation).
 */
const POSITIONAL = (): string => '?';

/** Values for `?1`, `?2`, ... placeholders: better-sqlite3 binds numbered ones from an object. */
function numbered(params: unknown[]): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (let i = 0; i < params.length; i++) out[i + 1] = params[i];
  return out;
}

/** `sqlite:./data/x.db`, `sqlite:///abs/x.db` or `sqlite::memory:` → the path better-sqlite3 takes. */
export function sqlitePath(databaseUrl: string): string {
  const rest = databaseUrl.replace(/^sqlite:/, '');
  return rest.startsWith('//') ? rest.slice(2) : rest;
}

const SCREENING = screeningSql(false);

const VERDICT_INSERT_SQL = `INSERT INTO verdict_log (${VERDICT_COLUMNS.join(', ')}) VALUES (${VERDICT_COLUMNS.map(() => '?').join(', ')})
  ON CONFLICT (account_id, at, id) DO NOTHING`;

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly stmts = new Map<string, Database.Statement>();
  private signupCounts = 0;

  private readonly countGroup: Database.Transaction<(group: QuotaAsk[]) => UsageResult[]>;
  private readonly reserveTx: Database.Transaction<(asks: ReserveRequest[]) => ReserveResult[]>;

  /** The WAL's checkpoints, on a thread of their own for a file (./checkpointer.ts); null in memory. */
  readonly checkpoints: Checkpointer | null;

  private constructor(
    private readonly db: Database.Database,
    file: string | null,
  ) {
    this.checkpoints = file === null ? null : new Checkpointer(db, file);
    this.countGroup = db.transaction((group: QuotaAsk[]) => this.countAsks(group));
    this.reserveTx = db.transaction((asks: ReserveRequest[]) => this.reserveIn(asks));
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
      return new SqliteStore(db, memory ? null : file);
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
    await this.checkpoints?.close();
    this.db.close();
  }

  async createApiKey(key: NewApiKey): Promise<boolean> {
    const sql = `INSERT INTO api_keys (${KEY_COLUMNS.join(', ')}) VALUES (${KEY_COLUMNS.map(() => '?').join(', ')})
      ON CONFLICT (email) WHERE revoked_at IS NULL AND role = 'owner' DO NOTHING`;
    const now = Date.now();
    // The account and its owner key exist together or not at all.
    return this.db.transaction((): boolean => {
      this.q('INSERT INTO accounts (id, created_at) VALUES (?, ?)').run(key.id, now);
      if (this.q(sql).run(...keyValues(key, now)).changes === 1) return true;
      this.q('DELETE FROM accounts WHERE id = ?').run(key.id);
      return false;
    })();
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

  async claimCoveredPayment(p: NewPayment, balance: bigint): Promise<PaymentClaim> {
    const values = paymentValues(p, Date.now());
    const [asset, payer, nonce] = [values[1], values[2], values[3]];
    // Immediate: it reads before it writes, and another connection's write in between would
    // otherwise fail the upgrade to a write (SQLITE_BUSY_SNAPSHOT) instead of waiting its turn.
    return this.db
      .transaction((): PaymentClaim => {
        if (this.q('SELECT 1 FROM payments WHERE asset = ? AND payer = ? AND nonce = ?').get(asset, payer, nonce))
          return 'replay';
        // Summed by value from the covering index (migration 11): one row per price, whatever the backlog.
        const open = this.q(
          `SELECT value, count(*) AS n FROM payments WHERE asset = ? AND payer = ? AND state IN ('verified', 'settling')
          GROUP BY value`,
        ).all(asset, payer) as Array<{ value: string; n: number }>;
        if (owed(open, p.value) > balance) return 'uncovered';
        const sql = `INSERT INTO payments (${PAYMENT_COLUMNS.join(', ')}) VALUES (${PAYMENT_COLUMNS.map(() => '?').join(', ')})
        ON CONFLICT (asset, payer, nonce) DO NOTHING`;
        return this.q(sql).run(...values).changes === 1 ? 'claimed' : 'replay';
      })
      .immediate();
  }

  async updatePayment(
    id: string,
    from: PaymentState[],
    to: PaymentState,
    fields: PaymentUpdateFields = {},
  ): Promise<boolean> {
    if (from.length === 0) return false;
    const { sql, params } = paymentUpdate(id, from, to, fields, Date.now(), () => '?');
    return this.q(sql).run(...params).changes === 1;
  }

  async updatePayments(updates: readonly PaymentUpdate[]): Promise<boolean[]> {
    if (updates.length === 0) return [];
    const now = Date.now();
    return this.db
      .transaction(() =>
        updates.map((u) => {
          if (u.from.length === 0) return false;
          const { sql, params } = paymentUpdate(u.id, u.from, u.to, u.fields ?? {}, now, () => '?');
          return this.q(sql).run(...params).changes === 1;
        }),
      )
      .immediate();
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

  private liveKey(accountId: string, keyId: string): ApiKeyRecord | null {
    const row = this.q('SELECT * FROM api_keys WHERE id = ? AND account_id = ? AND revoked_at IS NULL').get(
      keyId,
      accountId,
    ) as KeyRow | undefined;
    return row ? keyFromRow(row) : null;
  }

  private hasPolicy(accountId: string, name: string): boolean {
    return this.q('SELECT 1 FROM policies WHERE account_id = ? AND name = ?').get(accountId, name) !== undefined;
  }

  async listAccountKeys(accountId: string): Promise<ApiKeyRecord[]> {
    return (this.q(`SELECT * FROM api_keys WHERE account_id = ? ${ACCOUNT_KEYS_ORDER}`).all(accountId) as KeyRow[]).map(
      keyFromRow,
    );
  }

  async createAgentKey(k: NewAgentKey): Promise<ApiKeyRecord | KeyRefusal> {
    const sql = `INSERT INTO api_keys (${KEY_COLUMNS.join(', ')}) VALUES (${KEY_COLUMNS.map(() => '?').join(', ')})
      ON CONFLICT (account_id, name) WHERE revoked_at IS NULL DO NOTHING`;
    return this.db
      .transaction((): ApiKeyRecord | KeyRefusal => {
        const owner = this.liveKey(k.accountId, k.accountId);
        if (!owner) return 'not_found';
        if (k.policy !== null && !this.hasPolicy(k.accountId, k.policy)) return 'no_policy';
        const live = this.q(
          "SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ? AND role = 'agent' AND revoked_at IS NULL",
        ).get(k.accountId) as { n: number };
        if (Number(live.n) >= k.maxAgentKeys) return 'too_many';
        if (this.q(sql).run(...agentKeyValues(k, owner, Date.now())).changes !== 1) return 'name_taken';
        return this.liveKey(k.accountId, k.id) as ApiKeyRecord;
      })
      .immediate();
  }

  async setKeyPolicy(accountId: string, keyId: string, policy: string | null): Promise<ApiKeyRecord | KeyRefusal> {
    return this.db
      .transaction((): ApiKeyRecord | KeyRefusal => {
        if (!this.liveKey(accountId, keyId)) return 'not_found';
        if (policy !== null && !this.hasPolicy(accountId, policy)) return 'no_policy';
        this.q('UPDATE api_keys SET policy = ? WHERE id = ?').run(policy, keyId);
        return this.liveKey(accountId, keyId) as ApiKeyRecord;
      })
      .immediate();
  }

  async revokeAccountKey(accountId: string, keyId: string): Promise<ApiKeyRecord | KeyRefusal> {
    return this.db
      .transaction((): ApiKeyRecord | KeyRefusal => {
        const key = this.liveKey(accountId, keyId);
        if (!key) return 'not_found';
        if (key.role === 'owner') return 'owner_key';
        const at = Date.now();
        this.q('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run(at, keyId);
        return { ...key, revokedAt: new Date(at) };
      })
      .immediate();
  }

  async touchKeys(keyIds: string[], at: Date): Promise<void> {
    const stmt = this.q('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
    this.db.transaction(() => {
      for (const id of keyIds) stmt.run(at.getTime(), id);
    })();
  }

  private current(accountId: string, name: string): PolicyVersion | null {
    const row = this.q(`SELECT v.* FROM policies p JOIN policy_versions v
      ON v.account_id = p.account_id AND v.name = p.name AND v.version = p.version
      WHERE p.account_id = ? AND p.name = ?`).get(accountId, name) as PolicyVersionRow | undefined;
    return row ? policyFromRow(row) : null;
  }

  async putPolicy(
    accountId: string,
    name: string,
    hash: string,
    document: string,
  ): Promise<{ version: PolicyVersion; created: boolean }> {
    return this.db
      .transaction(() => {
        const cur = this.current(accountId, name);
        if (cur && cur.hash === hash) return { version: cur, created: false };
        const last = this.q('SELECT MAX(version) AS v FROM policy_versions WHERE account_id = ? AND name = ?').get(
          accountId,
          name,
        ) as { v: number | null };
        const version = Number(last.v ?? 0) + 1;
        const at = Date.now();
        this.q(
          'INSERT INTO policy_versions (account_id, name, version, hash, document, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        ).run(accountId, name, version, hash, document, at);
        this.q(`INSERT INTO policies (account_id, name, version) VALUES (?, ?, ?)
          ON CONFLICT (account_id, name) DO UPDATE SET version = excluded.version`).run(accountId, name, version);
        return { version: { name, version, hash, document, createdAt: new Date(at) }, created: true };
      })
      .immediate();
  }

  async getPolicy(accountId: string, name: string): Promise<PolicyVersion | null> {
    return this.current(accountId, name);
  }

  async getPolicyVersion(accountId: string, name: string, version: number): Promise<PolicyVersion | null> {
    const row = this.q('SELECT * FROM policy_versions WHERE account_id = ? AND name = ? AND version = ?').get(
      accountId,
      name,
      version,
    ) as PolicyVersionRow | undefined;
    return row ? policyFromRow(row) : null;
  }

  async listPolicies(accountId: string): Promise<PolicyVersion[]> {
    return (
      this.q(`SELECT v.* FROM policies p JOIN policy_versions v
      ON v.account_id = p.account_id AND v.name = p.name AND v.version = p.version
      WHERE p.account_id = ? ORDER BY p.name`).all(accountId) as PolicyVersionRow[]
    ).map(policyFromRow);
  }

  async deletePolicy(accountId: string, name: string): Promise<'deleted' | 'not_found' | 'bound'> {
    return this.db
      .transaction((): 'deleted' | 'not_found' | 'bound' => {
        if (!this.hasPolicy(accountId, name)) return 'not_found';
        const bound = this.q(
          'SELECT 1 FROM api_keys WHERE account_id = ? AND policy = ? AND revoked_at IS NULL LIMIT 1',
        ).get(accountId, name);
        if (bound !== undefined) return 'bound';
        this.q('DELETE FROM policies WHERE account_id = ? AND name = ?').run(accountId, name);
        this.q('DELETE FROM policy_versions WHERE account_id = ? AND name = ?').run(accountId, name);
        return 'deleted';
      })
      .immediate();
  }

  private counters(accountId: string, policy: string, limits: LimitWindow[]): CounterRow[] {
    if (limits.length === 0) return [];
    const { sql, params } = countersQuery(accountId, policy, limits, POSITIONAL);
    // Read as arrays and made into rows here: better-sqlite3 builds a row object through V8's API
    // at about twice the cost of the same object written in JavaScript.
    const rows = this.q(sql)
      .raw(true)
      .all(...params) as unknown[][];
    return rows.map(
      (r): CounterRow => ({
        limit_id: r[0] as string,
        window_key: r[1] as string,
        bucket: r[2] as number,
        usd: r[3] as number,
        n: r[4] as number,
        reserved_usd: r[5] as number,
      }),
    );
  }

  /**
   * Batched per (account, policy) (./batch.ts); each batch is one IMMEDIATE transaction: the write
   * lock is taken before the counters are read, so no other process counts in between. It reads at
   * most a window's buckets per limit, whatever the window holds.
   */
  async reserve(r: ReserveRequest): Promise<ReserveResult> {
    return this.reserves.submit(reserveKey(r), r);
  }

  private readonly reserves = new KeyedBatcher<ReserveRequest, ReserveResult>(async (asks) =>
    this.reserveTx.immediate(asks),
  );

  private reserveIn(asks: ReserveRequest[]): ReserveResult[] {
    const { accountId, policy } = asks[0];
    const { results, accepted } = decideBatch(asks, this.counters(accountId, policy, unionLimits(asks)));
    if (accepted.length === 0) return results;
    const insert = this.q(
      `INSERT INTO reservations (${RESERVATION_COLUMNS.join(', ')}) VALUES (${RESERVATION_COLUMNS.map(() => '?').join(', ')})`,
    );
    for (const r of accepted) insert.run(...reservationRow(r));
    const add = this.q(COUNTER_UPSERT(POSITIONAL));
    for (const row of summedAdds(accepted)) add.run(...row);
    // The accepted answers' verdict-log rows, in the same commit (docs/policies.md §10).
    let verdict: Database.Statement | null = null;
    for (const r of accepted)
      if (r.verdict) {
        verdict ??= this.q(VERDICT_INSERT_SQL);
        verdict.run(...verdictValues(r.verdict));
      }
    return results;
  }

  async limitUsage(accountId: string, policy: string, limits: LimitWindow[]): Promise<LimitUsage[]> {
    return usageFromCounters(limits, this.counters(accountId, policy, limits));
  }

  async dueReservations(now: number, max: number): Promise<DueReservation[]> {
    return (this.q(DUE_RESERVATIONS_SQL(() => '?')).all(now, max) as DueRow[]).map(dueFromRow);
  }

  async settleReservation(key: ReservationKey, state: 'committed' | 'released'): Promise<boolean> {
    return this.db
      .transaction((): boolean => {
        const row = this.q(
          "UPDATE reservations SET state = ? WHERE at = ? AND id = ? AND state = 'reserved' RETURNING account_id, policy, usd, limits",
        ).get(state, key.at, key.id) as ReservationRow | undefined;
        if (row === undefined) return false;
        const add = this.q(COUNTER_UPSERT(POSITIONAL));
        for (const c of counterSettles(row, state)) add.run(...c);
        return true;
      })
      .immediate();
  }

  async pruneCounters(before: number): Promise<number> {
    return this.q('DELETE FROM limit_counters WHERE bucket < ?').run(before).changes;
  }

  async takeLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const row = this.q(`INSERT INTO leases (name, holder, until_ms) VALUES (?, ?, ?)
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
      WHERE leases.holder = excluded.holder OR leases.until_ms <= ? RETURNING holder`).get(
      name,
      holder,
      now + ttlMs,
      now,
    );
    return row !== undefined;
  }

  async claimIdempotencyKey(r: IdempotencyRequest): Promise<IdempotencyClaim> {
    const now = Date.now();
    return this.db
      .transaction((): IdempotencyClaim => {
        this.q('DELETE FROM idempotency_keys WHERE account_id = ? AND idem_key = ? AND expires_at <= ?').run(
          r.accountId,
          r.key,
          now,
        );
        const inserted = this.q(
          `INSERT INTO idempotency_keys (account_id, idem_key, fingerprint, owner, expires_at) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT (account_id, idem_key) DO NOTHING`,
        ).run(r.accountId, r.key, r.fingerprint, r.owner, now + r.leaseMs);
        if (inserted.changes === 1) return { kind: 'new' };
        const row = this.q(
          'SELECT fingerprint, status, body FROM idempotency_keys WHERE account_id = ? AND idem_key = ?',
        ).get(r.accountId, r.key) as IdempotencyRow | undefined;
        return idempotencyClaim(row, r.fingerprint);
      })
      .immediate();
  }

  async completeIdempotencyKey(
    accountId: string,
    key: string,
    owner: string,
    a: { status: number; body: string },
    keepMs: number,
  ): Promise<boolean> {
    return (
      this.q(
        'UPDATE idempotency_keys SET status = ?, body = ?, expires_at = ? WHERE account_id = ? AND idem_key = ? AND owner = ?',
      ).run(a.status, a.body, Date.now() + keepMs, accountId, key, owner).changes === 1
    );
  }

  async releaseIdempotencyKey(accountId: string, key: string, owner: string): Promise<void> {
    this.q('DELETE FROM idempotency_keys WHERE account_id = ? AND idem_key = ? AND owner = ? AND status IS NULL').run(
      accountId,
      key,
      owner,
    );
  }

  async appendVerdicts(rows: VerdictRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const insert = this.q(VERDICT_INSERT_SQL);
    this.db.transaction(() => {
      for (const v of rows) insert.run(...verdictValues(v));
    })();
  }

  async verdictPage(q: VerdictQuery): Promise<VerdictEntry[]> {
    const { sql, params } = verdictPageQuery(q, (i) => `?${i}`);
    return (this.q(sql).all(numbered(params)) as VerdictRow[]).map(verdictFromRow);
  }

  async pruneKept(
    now: number,
    verdictsBefore: number,
    max: number,
  ): Promise<{ verdicts: number; idempotency: number }> {
    const verdicts = this.q(PRUNE_VERDICTS_SQL((i) => `?${i}`)).run(numbered([verdictsBefore, max])).changes;
    const idempotency = this.q(PRUNE_IDEMPOTENCY_SQL((i) => `?${i}`)).run(numbered([now, max])).changes;
    return { verdicts, idempotency };
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
