/**
 * Versioned schema migrations, one list for both databases. A migration is applied once, inside
 * one transaction together with its row in `schema_migrations`; never edit a released migration,
 * append a new version instead.
 *
 * Column notes: raw API keys are never stored (only their SHA-256); e-mails are stored trimmed and
 * lower-cased so the partial unique index enforces one active key per address case-insensitively.
 * SQLite keeps times as integer milliseconds, PostgreSQL as timestamptz.
 */
export interface Migration {
  version: number;
  name: string;
  sqlite: string;
  postgres: string;
}

const PLANS = "('Basic', 'DeFi', 'Execution')";
const STATES = "('verified', 'settling', 'settled', 'failed')";

/** The x402 payments table (docs/x402.md): made by migration 1, rebuilt by migration 9. */
function paymentsTable(name: string, time: string, big: string, stateCheck: string): string {
  return `CREATE TABLE ${name} (
  id TEXT PRIMARY KEY,
  asset TEXT NOT NULL,
  payer TEXT NOT NULL,
  nonce TEXT NOT NULL,
  pay_to TEXT NOT NULL,
  value TEXT NOT NULL,
  network TEXT NOT NULL,
  x402_version INTEGER NOT NULL,
  payload TEXT NOT NULL,
  valid_before ${big} NOT NULL,
  state TEXT NOT NULL CHECK (${stateCheck}),
  tx_hash TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  resource TEXT NOT NULL,
  created_at ${time} NOT NULL,
  updated_at ${time} NOT NULL,
  UNIQUE (asset, payer, nonce)
);`;
}

function initial(time: string, big: string): string {
  return `
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  key_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  email TEXT NOT NULL,
  plan TEXT NOT NULL CHECK (plan IN ${PLANS}),
  requested_plan TEXT CHECK (requested_plan IN ${PLANS}),
  company TEXT,
  full_name TEXT,
  use_case TEXT,
  website TEXT,
  created_at ${time} NOT NULL,
  revoked_at ${time}
);
CREATE UNIQUE INDEX api_keys_active_email ON api_keys (email) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_prefix ON api_keys (prefix);

CREATE TABLE key_usage (
  key_id TEXT NOT NULL REFERENCES api_keys (id),
  period TEXT NOT NULL,
  used ${big} NOT NULL,
  PRIMARY KEY (key_id, period)
);

CREATE TABLE signup_attempts (
  client TEXT NOT NULL,
  bucket TEXT NOT NULL,
  used ${big} NOT NULL,
  PRIMARY KEY (client, bucket)
);

${paymentsTable('payments', time, big, `state IN ${STATES}`)}
CREATE INDEX payments_unsettled ON payments (updated_at) WHERE state IN ('verified', 'settling');
`;
}

/**
 * x402 payment identifiers (docs/x402.md §9): one row per (payer, id) with the request's
 * fingerprint and, once served, the answer to give a retry. Times are unix milliseconds in both
 * databases.
 */
function paymentIds(big: string): string {
  return `
CREATE TABLE payment_ids (
  payer TEXT NOT NULL,
  pid TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  owner TEXT NOT NULL,
  status INTEGER,
  body TEXT,
  receipt TEXT,
  payment_id TEXT,
  expires_at ${big} NOT NULL,
  PRIMARY KEY (payer, pid)
);
CREATE INDEX payment_ids_expiry ON payment_ids (expires_at);
`;
}

/**
 * The verdict signer's key when ATTESTATION_KEY is not set (docs/attestations.md §2): one row,
 * made by the first process that starts, read by every other, so a cluster signs as one signer.
 */
function attestationKey(time: string): string {
  return `
CREATE TABLE attestation_keys (
  id TEXT PRIMARY KEY CHECK (id = 'verdict'),
  private_key TEXT NOT NULL,
  address TEXT NOT NULL,
  created_at ${time} NOT NULL
);
`;
}

/**
 * Accounts, owner and agent keys, policies and limit reservations (docs/policies.md §1–§3).
 * Every key issued before this migration becomes the owner key of an account of its own whose id
 * is the key's id, so its monthly usage rows (counted under that id) stay its account's.
 * One active owner key per e-mail address (agent keys carry their owner's address). A key's
 * `name` is unique among its account's live keys. Policy versions are immutable rows; `policies`
 * points at the current one. A reservation has one row per limit it counts in, all inserted in
 * one transaction with the counters they add to: one counter row per (limit, window, bucket), a
 * calendar window one bucket, a rolling window a hundredth of its length each, so a check reads a
 * bounded number of rows however many reservations a window holds. Times in the new tables are
 * unix milliseconds in both databases.
 */
function accounts(time: string, big: string, real: string, sqlite: boolean): string {
  const notNull = sqlite ? '' : '\nALTER TABLE api_keys ALTER COLUMN account_id SET NOT NULL;';
  return `
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  created_at ${time} NOT NULL
);
INSERT INTO accounts (id, created_at) SELECT id, created_at FROM api_keys;
ALTER TABLE api_keys ADD COLUMN account_id TEXT REFERENCES accounts (id);
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'agent'));
ALTER TABLE api_keys ADD COLUMN name TEXT NOT NULL DEFAULT 'owner';
ALTER TABLE api_keys ADD COLUMN policy TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at ${big};
UPDATE api_keys SET account_id = id;${notNull}
DROP INDEX api_keys_active_email;
CREATE UNIQUE INDEX api_keys_active_owner_email ON api_keys (email) WHERE revoked_at IS NULL AND role = 'owner';
CREATE UNIQUE INDEX api_keys_live_name ON api_keys (account_id, name) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE policies (
  account_id TEXT NOT NULL REFERENCES accounts (id),
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (account_id, name)
);

CREATE TABLE policy_versions (
  account_id TEXT NOT NULL REFERENCES accounts (id),
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  hash TEXT NOT NULL,
  document TEXT NOT NULL,
  created_at ${big} NOT NULL,
  PRIMARY KEY (account_id, name, version)
);

CREATE TABLE reservations (
  id TEXT NOT NULL,
  limit_id TEXT NOT NULL,
  window_key TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  policy TEXT NOT NULL,
  at ${big} NOT NULL,
  usd ${real} NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('reserved', 'committed', 'released')),
  expires_at ${big},
  chain TEXT,
  actor TEXT,
  bucket ${big} NOT NULL,
  PRIMARY KEY (id, limit_id)
);
CREATE INDEX reservations_due ON reservations (expires_at) WHERE state = 'reserved';

CREATE TABLE limit_counters (
  account_id TEXT NOT NULL,
  policy TEXT NOT NULL,
  limit_id TEXT NOT NULL,
  window_key TEXT NOT NULL,
  bucket ${big} NOT NULL,
  usd ${real} NOT NULL,
  n ${big} NOT NULL,
  reserved_usd ${real} NOT NULL,
  PRIMARY KEY (account_id, policy, limit_id, window_key, bucket)
);

CREATE TABLE leases (
  name TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  until_ms ${big} NOT NULL
);
`;
}

/**
 * Idempotency-Key answers and the verdict log (docs/policies.md §9, §10). An idempotency row is
 * taken by the first attempt (`owner`, no status yet, `expires_at` a short lease so a crashed
 * attempt frees it), then holds that attempt's answer for 24 hours. A verdict row is one answer
 * to a keyed call; its reservation's state is read from `reservations` by `reservation_id`.
 * Pages are read newest first by (account, at, id), with or without a key or a verdict: one
 * index for each. The page index is also the row's unique key (a retried batch inserts nothing
 * twice): an index on the random id alone would cost as much to keep up as the other three
 * together. Times are unix milliseconds in both databases.
 */
function idempotencyAndVerdicts(big: string, real: string): string {
  return `
CREATE TABLE idempotency_keys (
  account_id TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  owner TEXT NOT NULL,
  status INTEGER,
  body TEXT,
  expires_at ${big} NOT NULL,
  PRIMARY KEY (account_id, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE TABLE verdict_log (
  id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  at ${big} NOT NULL,
  key_id TEXT NOT NULL,
  key_name TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  verdict TEXT NOT NULL,
  risk TEXT,
  failure_modes TEXT NOT NULL,
  policy TEXT,
  reserved_usd ${real},
  reservation_id TEXT
);
CREATE UNIQUE INDEX verdict_log_page ON verdict_log (account_id, at, id);
CREATE INDEX verdict_log_key ON verdict_log (account_id, key_id, at, id);
CREATE INDEX verdict_log_verdict ON verdict_log (account_id, verdict, at, id);
CREATE INDEX verdict_log_age ON verdict_log (at);
`;
}

/**
 * Screening (docs/screening.md): each list's current version, kept for the fleet (one head row per
 * list; its addresses packed as 20-byte keys and their tags in chunks of 256 KiB, so neither a write
 * nor a read holds the database or the event loop for the whole list), with the refresh lease that lets one instance at a time
 * refresh it; and each account's counterparties of answered proceeds. Times are unix milliseconds.
 */
function screening(big: string, blob: string): string {
  return `
CREATE TABLE screening_lists (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('sanctions', 'blocklist')),
  source TEXT NOT NULL,
  list_date TEXT,
  size INTEGER NOT NULL,
  hash TEXT NOT NULL,
  tag_table TEXT NOT NULL,
  changed_at ${big} NOT NULL,
  confirmed_at ${big} NOT NULL,
  checked_at ${big} NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'refused', 'failed')),
  error TEXT,
  lease_owner TEXT,
  lease_until ${big} NOT NULL DEFAULT 0
);

CREATE TABLE screening_list_chunks (
  name TEXT NOT NULL,
  hash TEXT NOT NULL,
  seq INTEGER NOT NULL,
  data ${blob} NOT NULL,
  PRIMARY KEY (name, hash, seq)
);

CREATE TABLE screening_counterparties (
  account TEXT NOT NULL,
  address TEXT NOT NULL,
  last_at ${big} NOT NULL,
  PRIMARY KEY (account, address)
);
CREATE INDEX screening_counterparties_last ON screening_counterparties (last_at);
`;
}

/**
 * One reservations row per reservation (docs/policies.md §4), its limits' (limit, window, bucket)
 * as a JSON array: an answer inserts one row and one primary-key entry, whatever its policy's
 * number of limits. Existing rows are folded per id; their state and amounts are unchanged.
 */
function reservationPerRow(big: string, real: string, sqlite: boolean): string {
  const limits = sqlite
    ? 'json_group_array(json_array(limit_id, window_key, bucket))'
    : 'json_agg(json_build_array(limit_id, window_key, bucket))::text';
  return `
CREATE TABLE reservations_v6 (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  policy TEXT NOT NULL,
  at ${big} NOT NULL,
  usd ${real} NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('reserved', 'committed', 'released')),
  expires_at ${big},
  chain TEXT,
  actor TEXT,
  limits TEXT NOT NULL
);
INSERT INTO reservations_v6 (id, account_id, policy, at, usd, state, expires_at, chain, actor, limits)
  SELECT id, MIN(account_id), MIN(policy), MIN(at), MIN(usd), MIN(state), MIN(expires_at), MIN(chain), MIN(actor), ${limits}
  FROM reservations GROUP BY id;
DROP TABLE reservations;
ALTER TABLE reservations_v6 RENAME TO reservations;
CREATE INDEX reservations_due ON reservations (expires_at) WHERE state = 'reserved';
`;
}

/**
 * Reservations keyed by (at, id) instead of id (docs/policies.md §4). The id is the answer's
 * attestation id, a hash: keyed by it, each reservation went into a random page of the table, and
 * each such page is written again at the commit and at the next checkpoint. Keyed by when it was
 * made, a batch of reservations goes into the last page or two. Every lookup already knows both:
 * the releaser reads `at` with the due rows, and a reserved answer's verdict row has its
 * reservation's `at` (both are written in one transaction with the same time). Rows from before
 * that was so take their verdict row's `at`; the table's amounts, states and limits are unchanged.
 */
function reservationsByTime(big: string, real: string): string {
  return `
CREATE INDEX verdict_log_reservation_v8 ON verdict_log (reservation_id) WHERE reservation_id IS NOT NULL;
CREATE TABLE reservations_v8 (
  at ${big} NOT NULL,
  id TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  policy TEXT NOT NULL,
  usd ${real} NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('reserved', 'committed', 'released')),
  expires_at ${big},
  chain TEXT,
  actor TEXT,
  limits TEXT NOT NULL,
  PRIMARY KEY (at, id)
);
INSERT INTO reservations_v8 (at, id, account_id, policy, usd, state, expires_at, chain, actor, limits)
  SELECT COALESCE((SELECT MIN(v.at) FROM verdict_log v WHERE v.reservation_id = r.id), r.at),
    r.id, r.account_id, r.policy, r.usd, r.state, r.expires_at, r.chain, r.actor, r.limits
  FROM reservations r;
DROP INDEX verdict_log_reservation_v8;
DROP TABLE reservations;
ALTER TABLE reservations_v8 RENAME TO reservations;
CREATE INDEX reservations_due ON reservations (expires_at) WHERE state = 'reserved';
`;
}

/**
 * State checks written as comparisons (SQLite only). SQLite evaluates `CHECK (state IN (...))` by
 * building a temporary table of the listed values for every row it writes: a page allocated and
 * zeroed per reservation, about a sixth of its insert (bench/README.md, "Eighteenth pass"). The
 * same checks written with `=` and `OR` take none. The reservations and payments tables are
 * rebuilt with them; their rows, keys and indexes are unchanged. PostgreSQL checks an IN list
 * without a table, so nothing changes there.
 */
const STATE_CHECKS_SQLITE = `
CREATE TABLE reservations_v9 (
  at INTEGER NOT NULL,
  id TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  policy TEXT NOT NULL,
  usd REAL NOT NULL,
  state TEXT NOT NULL CHECK (state = 'reserved' OR state = 'committed' OR state = 'released'),
  expires_at INTEGER,
  chain TEXT,
  actor TEXT,
  limits TEXT NOT NULL,
  PRIMARY KEY (at, id)
);
INSERT INTO reservations_v9 (at, id, account_id, policy, usd, state, expires_at, chain, actor, limits)
  SELECT at, id, account_id, policy, usd, state, expires_at, chain, actor, limits FROM reservations;
DROP TABLE reservations;
ALTER TABLE reservations_v9 RENAME TO reservations;
CREATE INDEX reservations_due ON reservations (expires_at) WHERE state = 'reserved';

${paymentsTable('payments_v9', 'INTEGER', 'INTEGER', "state = 'verified' OR state = 'settling' OR state = 'settled' OR state = 'failed'")}
INSERT INTO payments_v9 (id, asset, payer, nonce, pay_to, value, network, x402_version, payload, valid_before, state,
    tx_hash, attempts, last_error, resource, created_at, updated_at)
  SELECT id, asset, payer, nonce, pay_to, value, network, x402_version, payload, valid_before, state,
    tx_hash, attempts, last_error, resource, created_at, updated_at FROM payments;
DROP TABLE payments;
ALTER TABLE payments_v9 RENAME TO payments;
CREATE INDEX payments_unsettled ON payments (updated_at) WHERE state = 'verified' OR state = 'settling';
`;

/**
 * A payer's payments still to be settled, which its balance must cover together with a new one
 * (docs/x402.md §4): read on every paid call, so by an index that holds only those.
 */
const PAYER_UNSETTLED = `CREATE INDEX payments_payer_unsettled ON payments (asset, payer) WHERE state IN ('verified', 'settling');`;

/**
 * The same payments with their values in the index: a claim sums what the payer owes from the index
 * alone, grouped by value, instead of reading every row waiting to be settled (a payer paying many
 * calls a second has hundreds while blocks are mined). The state is in it too, or SQLite would read
 * each row to test it again.
 */
const PAYER_UNSETTLED_COVERING = `DROP INDEX payments_payer_unsettled;
CREATE INDEX payments_payer_unsettled ON payments (asset, payer, value, state) WHERE state IN ('verified', 'settling');`;

/**
 * PostgreSQL: a paid call's claim in one round trip (docs/x402.md §4, step 8). The function takes the
 * payer's advisory lock, then reads with a fresh snapshot (a volatile function's every statement takes
 * one), so it sees every claim committed before the lock was granted; the statement that calls it
 * inserts the payment, and the lock is held until that statement's transaction commits. The lock's
 * key is the one the earlier claim's explicit transaction took, so both wait for each other.
 */
const PAYER_CLAIM_PG = `CREATE FUNCTION preflight_payer_claim(p_asset TEXT, p_payer TEXT, p_nonce TEXT, p_value NUMERIC, p_balance NUMERIC)
RETURNS TEXT LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('x402-payer:' || p_asset || ':' || p_payer, 0));
  IF EXISTS (SELECT 1 FROM payments WHERE asset = p_asset AND payer = p_payer AND nonce = p_nonce) THEN
    RETURN 'replay';
  END IF;
  IF p_value + COALESCE((SELECT sum(value::NUMERIC) FROM payments
      WHERE asset = p_asset AND payer = p_payer AND state IN ('verified', 'settling')), 0) > p_balance THEN
    RETURN 'uncovered';
  END IF;
  RETURN 'claimed';
END
$$;`;

export const MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    version: 1,
    name: 'keys, usage, signups, payments',
    sqlite: initial('INTEGER', 'INTEGER'),
    postgres: initial('TIMESTAMPTZ', 'BIGINT'),
  },
  {
    version: 2,
    name: 'attestation signing key',
    sqlite: attestationKey('INTEGER'),
    postgres: attestationKey('TIMESTAMPTZ'),
  },
  {
    version: 3,
    name: 'x402 payment identifiers',
    sqlite: paymentIds('INTEGER'),
    postgres: paymentIds('BIGINT'),
  },
  {
    version: 4,
    name: 'accounts, agent keys, policies, limit reservations',
    sqlite: accounts('INTEGER', 'INTEGER', 'REAL', true),
    postgres: accounts('TIMESTAMPTZ', 'BIGINT', 'DOUBLE PRECISION', false),
  },
  {
    version: 5,
    name: 'idempotency keys, verdict log',
    sqlite: idempotencyAndVerdicts('INTEGER', 'REAL'),
    postgres: idempotencyAndVerdicts('BIGINT', 'DOUBLE PRECISION'),
  },
  {
    version: 6,
    name: 'screening lists and counterparties',
    sqlite: screening('INTEGER', 'BLOB'),
    postgres: screening('BIGINT', 'BYTEA'),
  },
  {
    version: 7,
    name: 'one reservations row per reservation',
    sqlite: reservationPerRow('INTEGER', 'REAL', true),
    postgres: reservationPerRow('BIGINT', 'DOUBLE PRECISION', false),
  },
  {
    version: 8,
    name: 'reservations keyed by time',
    sqlite: reservationsByTime('INTEGER', 'REAL'),
    postgres: reservationsByTime('BIGINT', 'DOUBLE PRECISION'),
  },
  {
    version: 9,
    name: 'state checks without a temporary table',
    sqlite: STATE_CHECKS_SQLITE,
    postgres: 'SELECT 1;',
  },
  {
    version: 10,
    name: "a payer's payments not yet settled",
    sqlite: PAYER_UNSETTLED,
    postgres: PAYER_UNSETTLED,
  },
  {
    version: 11,
    name: "a paid call's claim in one statement, from a covering index",
    sqlite: PAYER_UNSETTLED_COVERING,
    postgres: `${PAYER_UNSETTLED_COVERING}\n${PAYER_CLAIM_PG}`,
  },
]);

export const MIGRATIONS_TABLE_SQL = {
  sqlite:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  postgres:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
};

/** Migrations not yet applied, in order. Versions the database knows but this build does not are ignored (a newer release ran). */
export function pending(applied: Iterable<number>): Migration[] {
  const done = new Set(applied);
  return MIGRATIONS.filter((m) => !done.has(m.version));
}
