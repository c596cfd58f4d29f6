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

CREATE TABLE payments (
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
  state TEXT NOT NULL CHECK (state IN ${STATES}),
  tx_hash TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  resource TEXT NOT NULL,
  created_at ${time} NOT NULL,
  updated_at ${time} NOT NULL,
  UNIQUE (asset, payer, nonce)
);
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
    version: 5,
    name: 'screening lists and counterparties',
    sqlite: screening('INTEGER', 'BLOB'),
    postgres: screening('BIGINT', 'BYTEA'),
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
