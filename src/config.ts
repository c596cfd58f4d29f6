/**
 * The environment, read once, validated and frozen. A bad value stops start-up with a message
 * naming the variable. Every name here is public contract: the README documents each one.
 */
export type ChainName =
  | 'base'
  | 'ethereum'
  | 'optimism'
  | 'arbitrum'
  | 'polygon'
  | 'bsc'
  | 'avalanche'
  | 'base-sepolia'
  | 'sepolia';

/** Chain names used by contract_verified, rpc_health and payments, with their EVM chain ids. */
export const CHAIN_IDS: Readonly<Record<ChainName, number>> = Object.freeze({
  base: 8453,
  ethereum: 1,
  optimism: 10,
  arbitrum: 42161,
  polygon: 137,
  bsc: 56,
  avalanche: 43114,
  'base-sepolia': 84532,
  sepolia: 11155111,
});

export interface Config {
  port: number;
  host: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  publicBaseUrl: string | null;
  /**
   * Browser origins the Origin check admits (docs/browser.md §1): exact origins, lowercased, with
   * no path. With `allowLoopbackOrigins`, every loopback origin (localhost, 127.0.0.0/8, [::1]) too.
   */
  allowedOrigins: readonly string[];
  allowLoopbackOrigins: boolean;
  databaseUrl: string;
  priceApiUrl: string;
  priceApiKey: string | null;
  dexApiUrl: string;
  sourcifyUrl: string;
  etherscanApiUrl: string;
  etherscanApiKey: string | null;
  /** chain name → JSON-RPC URL (operator's, trusted). */
  rpcUrls: Readonly<Record<string, string>>;
  allowPrivateTargets: boolean;
  requestDeadlineMs: number;
  maxDeadlineMs: number;
  billing: boolean;
  headStaleSeconds: number;
  bridgeStatusUrls: readonly string[];
  /** EIP-7702 delegates the operator accepts (lower-case addresses; docs/action-scan.md, delegations). */
  delegateAllowlist: readonly string[];
  /** Worker pool: threads and tasks per thread. 0 threads runs checks inline on the main thread. */
  poolThreads: number;
  poolConcurrency: number;
  poolMaxQueue: number;
  /** Connections each check thread opens ahead to each configured provider before it is ready (0: none). */
  connectAhead: number;
  /** Hard timeout of one upstream call, beyond the request deadline, so late answers fill the cache. */
  checkHardTimeoutMs: number;
  cacheMaxEntries: number;
  /** The fleet's shared cache (docs/fleet.md); null keeps every result in this process only. */
  redisUrl: string | null;
  /** Bound on every Redis command; past it the instance goes on without Redis. */
  redisTimeoutMs: number;
  shutdownGraceMs: number;
  trustProxy: boolean;
  metricsToken: string | null;
  freeTierMonthlyLimit: number;
  planLimits: Readonly<Record<'Basic' | 'DeFi' | 'Execution', number>>;
  signupsPerHour: number;
  /** VERDICT_LOG_DAYS: how long the verdict log keeps an answer (docs/policies.md §10). */
  verdictLogDays: number;
  /** VERDICT_LOG=off: answers are not logged (a setting for measurement only, as ATTESTATIONS=off). */
  verdictLog: boolean;
  /** Live agent keys an account may hold (MAX_AGENT_KEYS, docs/policies.md §1). */
  maxAgentKeys: number;
  /** How often expired limit reservations are settled (POLICY_RELEASE_INTERVAL_MS, docs/policies.md §3). */
  policyReleaseIntervalMs: number;
  x402PayTo: string | null;
  x402Settlement: 'local' | 'facilitator';
  x402SettlerKey: string | null;
  x402RpcUrl: string | null;
  x402FacilitatorUrl: string | null;
  x402MaxTimeoutSeconds: number;
  /** When true the answer waits for on-chain settlement; default answers once verified and claimed. */
  x402SettleBeforeResponse: boolean;
  /** Local settlements between gas estimate and broadcast at once. */
  x402SettleConcurrency: number;
  /**
   * Sign every DecideResponse (docs/attestations.md). Off exists to measure what signing costs;
   * a deployment keeps it on.
   */
  attestations: boolean;
  /** ATTESTATION_SIGNING: where answers are signed (docs/attestations.md, "Where the signature is made"). */
  attestationSigning: 'prepared' | 'auto' | 'thread' | 'inline';
  /** ATTESTATION_KEY: the verdict signer's secp256k1 key; null: made on first start, kept in the store. */
  attestationKey: string | null;
  /** Counterparty screening (docs/screening.md). */
  screening: ScreeningConfig;
}

export interface ScreeningConfig {
  /** SANCTIONS_LIST_URL: an SDN Advanced or legacy SDN XML; null (`off`): the embedded snapshot only. */
  sanctionsListUrl: string | null;
  /** BLOCKLIST_URLS: the operator's feeds. */
  blocklistUrls: readonly string[];
  /** SANCTIONS_REFRESH_S: how often each list is fetched again (one instance of a fleet does it). */
  refreshS: number;
  /** SANCTIONS_MAX_AGE_S: older than this, the sanctions list warns `screening_data_stale`; null: never. */
  maxAgeS: number | null;
  /** SCREENING_MAX_LIST_BYTES: a longer download is cut and refused. */
  maxListBytes: number;
  /** SCREENING_FETCH_TIMEOUT_MS: the whole download; SCREENING_STALL_MS: no byte for this long. */
  fetchTimeoutMs: number;
  stallMs: number;
  /** SCREENING_POLL_S: how often an instance reads the fleet's list versions from the database. */
  pollS: number;
  /** SANCTIONS_ALLOW_SHRINK: accept a list shrunk by more than half (a deliberate large delisting); off by default. */
  allowShrink: boolean;
}

/** OFAC's SDN Advanced XML export: the default SANCTIONS_LIST_URL. */
export const OFAC_SDN_ADVANCED_URL =
  'https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports/SDN_ADVANCED.XML';

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string, def: string): string {
  const v = env[name];
  return v === undefined || v === '' ? def : v;
}
function optStr(env: Env, name: string): string | null {
  const v = env[name];
  return v === undefined || v === '' ? null : v;
}
function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}
function bool(
  env: Env,
  name: string,
  def: boolean,
  truthy = ['true', '1', 'yes', 'on'],
  falsy = ['false', '0', 'no', 'off'],
): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const v = raw.trim().toLowerCase();
  if (truthy.includes(v)) return true;
  if (falsy.includes(v)) return false;
  throw new ConfigError(`${name} must be one of ${[...truthy, ...falsy].join(', ')}, got ${JSON.stringify(raw)}`);
}
/** A comma-separated list of 0x addresses (empty by default), lower-cased; anything else is refused. */
function addressList(env: Env, name: string): string[] {
  const items = str(env, name, '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const a of items)
    if (!/^0x[0-9a-fA-F]{40}$/.test(a))
      throw new ConfigError(`${name} must list 0x addresses, got ${JSON.stringify(a)}`);
  return [...new Set(items.map((a) => a.toLowerCase()))];
}

function url(env: Env, name: string, def: string): string;
function url(env: Env, name: string, def: null): string | null;
function url(env: Env, name: string, def: string | null): string | null {
  const raw = optStr(env, name) ?? def;
  if (raw === null) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new ConfigError(`${name} must use http or https, got ${u.protocol}`);
  return raw.replace(/\/+$/, '');
}
/**
 * ALLOWED_ORIGINS: a comma-separated list of browser origins (`https://ops.example.com`) and the
 * word `loopback`; unset, the origin of PUBLIC_BASE_URL and loopback. Anything that is not a bare
 * http(s) origin is refused at start, so a typo never silently admits or refuses everyone.
 */
function allowedOrigins(env: Env, publicBaseUrl: string | null): { origins: string[]; loopback: boolean } {
  const raw = optStr(env, 'ALLOWED_ORIGINS');
  if (raw === null) return { origins: publicBaseUrl === null ? [] : [new URL(publicBaseUrl).origin], loopback: true };
  const origins = new Set<string>();
  let loopback = false;
  for (const item of raw.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    if (item.toLowerCase() === 'loopback') {
      loopback = true;
      continue;
    }
    let u: URL | null = null;
    try {
      u = new URL(item);
    } catch {
      // reported below
    }
    if (
      u === null ||
      (u.protocol !== 'http:' && u.protocol !== 'https:') ||
      u.origin !== item.replace(/\/$/, '').toLowerCase()
    )
      throw new ConfigError(
        `ALLOWED_ORIGINS must list origins (scheme://host[:port], no path) or the word loopback, got ${JSON.stringify(item)}`,
      );
    origins.add(u.origin);
  }
  return { origins: [...origins], loopback };
}
/** REDIS_URL: redis:// or rediss://, optionally with a password and a database number (never echoed: it may hold a password). */
function redisUrl(env: Env): string | null {
  const raw = optStr(env, 'REDIS_URL');
  if (raw === null) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL');
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new ConfigError(`REDIS_URL must use redis or rediss, got ${u.protocol}`);
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/\d{1,2}$/.test(u.pathname))
    throw new ConfigError('REDIS_URL may name a database number only (redis://host:6379/0)');
  return raw;
}
function keyValueList(env: Env, name: string, def: string): Record<string, string> {
  const raw = str(env, name, def);
  const out: Record<string, string> = {};
  for (const part of raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq <= 0)
      throw new ConfigError(`${name} must be a comma-separated list of name=value, got ${JSON.stringify(part)}`);
    out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

/** The order of secp256k1's group: a private key is an integer in [1, n). */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

function validPrivateKey(hex: string): boolean {
  if (!/^0x[0-9a-fA-F]{64}$/.test(hex)) return false;
  const k = BigInt(hex);
  return k > 0n && k < SECP256K1_N;
}

export function loadConfig(env: Env = process.env): Readonly<Config> {
  const rpcRaw = keyValueList(env, 'RPC_URLS', '');
  const rpcUrls: Record<string, string> = {};
  for (const [chain, u] of Object.entries(rpcRaw))
    rpcUrls[chain] = url({ [`RPC_URLS[${chain}]`]: u }, `RPC_URLS[${chain}]`, '');

  const planRaw = keyValueList(env, 'PLAN_LIMITS', 'DeFi=10000,Execution=100000');
  const freeTier = int(env, 'FREE_TIER_MONTHLY_LIMIT', 100, 0, 1e9);
  const planLimits = { Basic: freeTier, DeFi: 10000, Execution: 100000 };
  for (const [plan, v] of Object.entries(planRaw)) {
    if (plan !== 'DeFi' && plan !== 'Execution' && plan !== 'Basic')
      throw new ConfigError(`PLAN_LIMITS: unknown plan ${JSON.stringify(plan)} (Basic, DeFi, Execution)`);
    planLimits[plan] = int({ v }, 'v', 0, 0, 1e12);
  }

  const databaseUrl = str(env, 'DATABASE_URL', 'sqlite:./data/preflight.db');
  if (!/^sqlite:.+/.test(databaseUrl) && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(`DATABASE_URL must be sqlite:<path> or postgres://..., got ${JSON.stringify(databaseUrl)}`);
  }
  const logLevel = str(env, 'LOG_LEVEL', 'info');
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (!levels.includes(logLevel))
    throw new ConfigError(`LOG_LEVEL must be one of ${levels.join(', ')}, got ${JSON.stringify(logLevel)}`);
  const settlement = str(env, 'X402_SETTLEMENT', 'local');
  if (settlement !== 'local' && settlement !== 'facilitator')
    throw new ConfigError(`X402_SETTLEMENT must be local or facilitator, got ${JSON.stringify(settlement)}`);
  const payTo = optStr(env, 'X402_PAY_TO');
  if (payTo !== null && !/^0x[0-9a-fA-F]{40}$/.test(payTo))
    throw new ConfigError(`X402_PAY_TO must be a 0x-prefixed 20-byte address, got ${JSON.stringify(payTo)}`);
  const settlerKey = optStr(env, 'X402_SETTLER_KEY');
  if (settlerKey !== null && !/^0x[0-9a-fA-F]{64}$/.test(settlerKey))
    throw new ConfigError('X402_SETTLER_KEY must be a 0x-prefixed 32-byte hex private key');

  const attestationSigning = str(env, 'ATTESTATION_SIGNING', 'prepared');
  if (
    attestationSigning !== 'prepared' &&
    attestationSigning !== 'auto' &&
    attestationSigning !== 'thread' &&
    attestationSigning !== 'inline'
  )
    throw new ConfigError(
      `ATTESTATION_SIGNING must be one of prepared, auto, thread, inline, got ${JSON.stringify(attestationSigning)}`,
    );
  const attestationKey = optStr(env, 'ATTESTATION_KEY');
  // The message never repeats the value: it is a private key.
  if (attestationKey !== null && !validPrivateKey(attestationKey))
    throw new ConfigError('ATTESTATION_KEY must be a 0x-prefixed 32-byte hex secp256k1 private key (not 0, below n)');

  const requestDeadlineMs = int(env, 'REQUEST_DEADLINE_MS', 250, 10, 10000);
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL', null);
  const origins = allowedOrigins(env, publicBaseUrl);
  const cfg: Config = {
    port: int(env, 'PORT', 8080, 0, 65535),
    host: str(env, 'HOST', '0.0.0.0'),
    logLevel: logLevel as Config['logLevel'],
    publicBaseUrl,
    allowedOrigins: origins.origins,
    allowLoopbackOrigins: origins.loopback,
    databaseUrl,
    priceApiUrl: url(env, 'PRICE_API_URL', 'https://api.coingecko.com/api/v3'),
    priceApiKey: optStr(env, 'PRICE_API_KEY'),
    dexApiUrl: url(env, 'DEX_API_URL', 'https://api.dexscreener.com'),
    sourcifyUrl: url(env, 'SOURCIFY_URL', 'https://sourcify.dev/server'),
    etherscanApiUrl: url(env, 'ETHERSCAN_API_URL', 'https://api.etherscan.io/v2/api'),
    etherscanApiKey: optStr(env, 'ETHERSCAN_API_KEY'),
    rpcUrls: Object.freeze(rpcUrls),
    allowPrivateTargets: bool(env, 'ALLOW_PRIVATE_TARGETS', false),
    requestDeadlineMs,
    maxDeadlineMs: 10000,
    billing: bool(env, 'BILLING', true),
    headStaleSeconds: int(env, 'HEAD_STALE_SECONDS', 60, 1, 86400),
    bridgeStatusUrls: Object.freeze(
      str(env, 'BRIDGE_STATUS_URLS', '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .map((u, i) => url({ [`BRIDGE_STATUS_URLS[${i}]`]: u }, `BRIDGE_STATUS_URLS[${i}]`, '')),
    ),
    delegateAllowlist: Object.freeze(addressList(env, 'DELEGATE_ALLOWLIST')),
    poolThreads: int(env, 'POOL_THREADS', 2, 0, 64),
    poolConcurrency: int(env, 'POOL_CONCURRENCY', 64, 1, 4096),
    poolMaxQueue: int(env, 'POOL_MAX_QUEUE', 4096, 1, 1e6),
    connectAhead: int(env, 'CONNECT_AHEAD', 2, 0, 16),
    checkHardTimeoutMs: int(env, 'CHECK_HARD_TIMEOUT_MS', 5000, 10, 60000),
    cacheMaxEntries: int(env, 'CACHE_MAX_ENTRIES', 50000, 100, 1e7),
    redisUrl: redisUrl(env),
    redisTimeoutMs: int(env, 'REDIS_TIMEOUT_MS', 50, 1, 10000),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10000, 0, 600000),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    metricsToken: optStr(env, 'METRICS_TOKEN'),
    freeTierMonthlyLimit: freeTier,
    planLimits: Object.freeze(planLimits),
    signupsPerHour: int(env, 'SIGNUPS_PER_HOUR', 10, 1, 1e6),
    verdictLogDays: int(env, 'VERDICT_LOG_DAYS', 30, 1, 3650),
    verdictLog: bool(env, 'VERDICT_LOG', true),
    maxAgentKeys: int(env, 'MAX_AGENT_KEYS', 100, 0, 100_000),
    policyReleaseIntervalMs: int(env, 'POLICY_RELEASE_INTERVAL_MS', 15_000, 100, 45_000),
    x402PayTo: payTo,
    x402Settlement: settlement,
    x402SettlerKey: settlerKey,
    x402RpcUrl: url(env, 'X402_RPC_URL', null),
    x402FacilitatorUrl: url(env, 'X402_FACILITATOR_URL', null),
    x402MaxTimeoutSeconds: int(env, 'X402_MAX_TIMEOUT_SECONDS', 60, 30, 3600),
    x402SettleBeforeResponse: bool(env, 'X402_SETTLE_BEFORE_RESPONSE', false),
    x402SettleConcurrency: int(env, 'X402_SETTLE_CONCURRENCY', 2, 1, 64),
    attestations: bool(env, 'ATTESTATIONS', true),
    attestationSigning,
    attestationKey,
    screening: Object.freeze({
      sanctionsListUrl:
        str(env, 'SANCTIONS_LIST_URL', '').trim().toLowerCase() === 'off'
          ? null
          : url(env, 'SANCTIONS_LIST_URL', OFAC_SDN_ADVANCED_URL),
      blocklistUrls: Object.freeze(
        str(env, 'BLOCKLIST_URLS', '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
          .map((u, i) => url({ [`BLOCKLIST_URLS[${i}]`]: u }, `BLOCKLIST_URLS[${i}]`, '')),
      ),
      refreshS: int(env, 'SANCTIONS_REFRESH_S', 3600, 1, 7 * 86400),
      maxAgeS:
        optStr(env, 'SANCTIONS_MAX_AGE_S') === null ? null : int(env, 'SANCTIONS_MAX_AGE_S', 0, 1, 10 * 365 * 86400),
      maxListBytes: int(env, 'SCREENING_MAX_LIST_BYTES', 150 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      fetchTimeoutMs: int(env, 'SCREENING_FETCH_TIMEOUT_MS', 120_000, 100, 3_600_000),
      stallMs: int(env, 'SCREENING_STALL_MS', 30_000, 100, 600_000),
      pollS: int(env, 'SCREENING_POLL_S', 15, 1, 60),
      allowShrink: bool(env, 'SANCTIONS_ALLOW_SHRINK', false),
    }),
  };
  return Object.freeze(cfg);
}
