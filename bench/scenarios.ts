/**
 * What the bench sends, and at what load. Bodies are JSON strings; the cold ones carry `{{n}}`
 * placeholders that the load process fills with a per-request number, so every request asks
 * about assets, pairs and contracts the cache has never seen (the emulators know them all).
 */
import { COLD_KEYS, CONTRACT, PAIR } from './upstreams.js';

export type Auth = 'none' | 'key' | 'x402';

export interface Scenario {
  name: string;
  /** What it measures, for the table. */
  about: string;
  server: 'reference' | 'floor' | 'service';
  path: string;
  body: string;
  auth: Auth;
  expectStatus: number;
  /** Text every answer must contain, e.g. the verdict the emulators' data calls for. */
  expectBody: string;
  connections: number;
  durationSec: number;
  warmupSec: number;
  /** Requests per second across all connections; unset drives as fast as answers come. */
  overallRate?: number;
  /** Settings of the service this scenario runs on, in a service process of its own. */
  env?: Record<string, string>;
  /** More text the probe answer must contain (the load checks `expectBody` only). */
  probeAlso?: string;
  /** Request headers besides content-type and the credential (a browser's `Origin`, say). */
  headers?: Record<string, string>;
  /** First `{{n}}` of its load (default 0): a scenario sharing a server and cold keys with another starts apart. */
  nStart?: number;
  /** The load's key is an agent key bound to the bench policy (bench/policy.ts: 20 rules, two limits). */
  policy?: boolean;
  /** The service's store: a fresh PostgreSQL database (BENCH_PG_URL) instead of a SQLite file. */
  store?: 'postgres';
}

const decideBody = (checks: unknown[]): string =>
  JSON.stringify({ goal: 'Swap 1 ETH for USDC on Base if the market is sane', checks });

export const CACHED_DECIDE = decideBody([
  { type: 'price', asset_id: 'ethereum', min_price: 1000, max_price: 10000 },
  { type: 'dex_price', chain: 'base', pair_address: PAIR, min_liquidity_usd: 100000 },
  { type: 'contract_verified', chain: 'base', contract_address: CONTRACT },
  { type: 'stablecoin_depeg', asset_id: 'usd-coin' },
]);

/** Four checks on four fresh keys per request; `coldAddress(n)` in upstreams.ts builds the same address. */
export const COLD_DECIDE = decideBody([
  { type: 'price', asset_id: 'bench-{{n}}', min_price: 1 },
  { type: 'dex_price', chain: 'base', pair_address: '0xpair{{n}}', min_liquidity_usd: 100000 },
  { type: 'contract_verified', chain: 'base', contract_address: `0x${'be'.padEnd(32, '0')}{{n:8}}` },
  { type: 'stablecoin_depeg', asset_id: 'benchusd-{{n}}' },
]);

export const GUARD_SWAP = JSON.stringify({
  action: 'swap',
  chain: 'base',
  pair_address: PAIR,
  amount_usd: 5000,
  stablecoin_asset_id: 'usd-coin',
});

/**
 * A guard with a simulation: 100 units of a token the service has never seen (`coldToken(n)` in
 * upstreams.ts) sent by transfer(), declared as 100 USD. Each request pays the node's latency for
 * the simulation, then the price provider's and the node's (decimals) side by side.
 */
export const GUARD_SIMULATION = JSON.stringify({
  action: 'contract_call',
  chain: 'base',
  amount_usd: 100,
  transaction: {
    from: '0x00000000000000000000000000000000000a11ce',
    to: `0x${'5c'.padEnd(32, '0')}{{n:8}}`,
    data: `0xa9059cbb${'b0b0'.padStart(64, '0')}${(100_000_000).toString(16).padStart(64, '0')}`,
  },
});
export const SIMULATION_RATE = 50;

/**
 * A guard with an EIP-7702 authorization to a delegate the service has never seen
 * (`coldAddress(n)`, verified, listed by the request): per request its code, the two probe
 * simulations and its source lookup, all concurrent, so one round of upstream latency.
 */
export const GUARD_DELEGATION = JSON.stringify({
  action: 'contract_call',
  chain: 'base',
  authorization: {
    authority: '0x00000000000000000000000000000000000a11ce',
    address: `0x${'be'.padEnd(32, '0')}{{n:8}}`,
    chain_id: 8453,
    nonce: 0,
  },
  known_safe_addresses: [`0x${'be'.padEnd(32, '0')}{{n:8}}`],
});

/**
 * A guard with a signed CoW Protocol order (docs/action-scan.md §7) selling 100 units of a token
 * the service has never seen (`coldToken(n)`, 1 USD, 6 decimals) for 100 USDC, the signer given:
 * per request one token-price call beside one decimals batch to the node, so one upstream round.
 */
export const GUARD_ORDER = JSON.stringify({
  action: 'contract_call',
  chain: 'base',
  signer: '0x00000000000000000000000000000000000a11ce',
  typed_data: {
    domain: {
      name: 'Gnosis Protocol',
      version: 'v2',
      chainId: 8453,
      verifyingContract: '0x9008D19f58AAbD9eD0D60971565AA8510560ab41',
    },
    types: {
      Order: [
        { name: 'sellToken', type: 'address' },
        { name: 'buyToken', type: 'address' },
        { name: 'receiver', type: 'address' },
        { name: 'sellAmount', type: 'uint256' },
        { name: 'buyAmount', type: 'uint256' },
        { name: 'validTo', type: 'uint32' },
        { name: 'appData', type: 'bytes32' },
        { name: 'feeAmount', type: 'uint256' },
        { name: 'kind', type: 'string' },
        { name: 'partiallyFillable', type: 'bool' },
        { name: 'sellTokenBalance', type: 'string' },
        { name: 'buyTokenBalance', type: 'string' },
      ],
    },
    primaryType: 'Order',
    message: {
      sellToken: `0x${'5c'.padEnd(32, '0')}{{n:8}}`,
      buyToken: CONTRACT,
      receiver: '0x0000000000000000000000000000000000000000',
      sellAmount: '100000000',
      buyAmount: '100000000',
      validTo: Math.floor(Date.now() / 1000) + 86_400,
      appData: `0x${'00'.repeat(32)}`,
      feeAmount: '0',
      kind: 'sell',
      partiallyFillable: false,
      sellTokenBalance: 'erc20',
      buyTokenBalance: 'erc20',
    },
  },
});

/**
 * A cached guard that names addresses, so counterparty_screen runs on each answer: an approval of
 * a limited amount to a verified, known spender (docs/screening.md §4). Every check is cached after
 * the first answer; the screen itself is never cached (a lookup per address, in memory).
 */
export const GUARD_SCREENED = JSON.stringify({
  action: 'approve',
  chain: 'base',
  spender: CONTRACT,
  approval_amount: '1000',
  known_safe_addresses: [CONTRACT],
});

/** A price check without its asset: a 422 before any billing or engine work. */
export const INVALID_DECIDE = decideBody([{ type: 'price', min_price: 'cheap' }]);

/** An MCP initialize, as a page on a DNS-rebound name sends it (docs/browser.md §1). */
export const MCP_INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
});

const PROCEED = '"verdict":"proceed"';
/** A signed answer (docs/attestations.md). */
const SIGNED = '"attestation":{"signer":"0x';

/**
 * Rate-capped scenarios. autocannon spends each connection's per-second budget at the start of
 * every second, all connections together, so the connection count is the size of that burst: a
 * few concurrent agents, not a synchronized crowd. Capacity under a crowd is what the max-rate
 * scenarios and the pool mode's cold-max measure.
 */
/** The request rate at which the keyed and the paid decide are compared. */
export const PAID_RATE = 50;
/**
 * Paid calls a second one instance must carry from one busy payer (decide-paid-capacity): each is
 * a signature recovered, a balance read, a claim, and a settlement transaction built, signed, sent
 * and followed to its receipt.
 */
export const PAID_CAPACITY_RATE = 200;
export const COLD_RATE = 50;
/**
 * Fresh checks a second one instance must carry (bench/README.md, "Cold path"): agents' questions
 * are mostly new, and fleets add instances under load.
 */
export const COLD_CAPACITY_RATE = 300;

/** The rate at which a refreshing million-address list is held to a steady one. */
export const SCREEN_RATE = 200;

const std = { durationSec: 10, warmupSec: 2 };

/** The signed cached decide at full speed. */
const SIGNED_CACHED: Scenario = {
  name: 'decide-cached',
  about: 'API key, 4 checks all cached, signed answers',
  server: 'service',
  path: '/v1/decide',
  body: CACHED_DECIDE,
  auth: 'key',
  expectStatus: 200,
  expectBody: PROCEED,
  probeAlso: SIGNED,
  connections: 50,
  ...std,
};

/** The cached decide with an API key at the paid rate: what a paid answer is compared with. */
const KEYED_DECIDE: Scenario = {
  ...SIGNED_CACHED,
  name: 'decide-keyed',
  about: `API key, cached decide at ${PAID_RATE} req/s`,
  connections: 2,
  overallRate: PAID_RATE,
};

/** The same decide paid per call with x402 (bench/payments.ts). */
const PAID_DECIDE: Scenario = {
  ...KEYED_DECIDE,
  name: 'decide-paid',
  about: `x402 payment per request, cached decide at ${PAID_RATE} req/s`,
  path: '/v1/x402/decide',
  auth: 'x402',
};

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'reference',
    about: 'bare express 5 + Ajv, same body, the cached answer',
    server: 'reference',
    path: '/v1/decide',
    body: CACHED_DECIDE,
    auth: 'none',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 50,
    ...std,
  },
  {
    name: 'floor',
    about: 'bare node:http + Ajv, same body, the cached answer',
    server: 'floor',
    path: '/v1/decide',
    body: CACHED_DECIDE,
    auth: 'none',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 50,
    ...std,
  },
  SIGNED_CACHED,
  // Where the signature is made (docs/attestations.md): the default `prepared` above, and each of
  // the other ways, so the bench measures them all in the same run.
  ...(['auto', 'thread', 'inline'] as const).map(
    (way): Scenario => ({
      ...SIGNED_CACHED,
      name: `decide-cached-${way}`,
      about: `as decide-cached with ATTESTATION_SIGNING=${way} (${
        way === 'thread'
          ? 'every signature on the signing thread'
          : way === 'inline'
            ? 'every signature on the event loop'
            : 'on the signing thread unless it lags'
      })`,
      env: { ATTESTATION_SIGNING: way },
    }),
  ),
  {
    ...SIGNED_CACHED,
    name: 'decide-cached-unsigned',
    about: 'as decide-cached with ATTESTATIONS=off (a setting for measurement only)',
    probeAlso: undefined,
    env: { ATTESTATIONS: 'off' },
  },
  {
    ...SIGNED_CACHED,
    name: 'decide-cached-redis',
    about: 'as decide-cached on an instance with REDIS_URL set (the fleet cache behind the local one)',
    probeAlso: undefined,
    env: { REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/11' },
  },
  {
    name: 'decide-cold',
    about: `API key, 4 fresh checks per request, upstreams answer in LATENCY ms, ${COLD_RATE} req/s`,
    server: 'service',
    path: '/v1/decide',
    body: COLD_DECIDE,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 4,
    overallRate: COLD_RATE,
    ...std,
  },
  {
    name: 'decide-cold-capacity',
    about: `API key, 4 fresh checks per request, upstreams answer in LATENCY ms, ${COLD_CAPACITY_RATE} req/s`,
    server: 'service',
    path: '/v1/decide',
    body: COLD_DECIDE,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 30,
    overallRate: COLD_CAPACITY_RATE,
    // Above decide-cold's keys (50 req/s for 12 s), below the capacity ramp's (bench/cold.ts).
    nStart: 1000,
    ...std,
  },
  {
    name: 'guard-swap',
    about: 'API key, guard for a swap (rpc health, peg, depth, rug signals)',
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SWAP,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 50,
    ...std,
  },
  {
    name: 'guard-swap-unlogged',
    about: 'as guard-swap with VERDICT_LOG=off (a setting for measurement only): what the verdict log costs',
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SWAP,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 50,
    env: { VERDICT_LOG: 'off' },
    ...std,
  },
  {
    name: 'guard-policy',
    about: 'as guard-swap with an agent key bound to a 20-rule policy with two limits: every answer reserves',
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SWAP,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    probeAlso: '"policy":{"name":"bench"',
    connections: 50,
    policy: true,
    env: {},
    ...std,
  },
  {
    name: 'guard-swap-pg',
    about: 'as guard-swap on a service whose store is PostgreSQL',
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SWAP,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 50,
    store: 'postgres',
    env: {},
    ...std,
  },
  {
    name: 'guard-policy-pg',
    about: 'as guard-policy on a service whose store is PostgreSQL',
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SWAP,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    probeAlso: '"policy":{"name":"bench"',
    connections: 50,
    policy: true,
    store: 'postgres',
    env: {},
    ...std,
  },
  {
    name: 'guard-simulation',
    about: `API key, guard simulating a transfer of a fresh token per request, node and prices in LATENCY ms, ${SIMULATION_RATE} req/s`,
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SIMULATION,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 8,
    overallRate: SIMULATION_RATE,
    ...std,
  },
  {
    name: 'guard-delegation',
    about: `API key, guard scanning an authorization to a fresh delegate per request, node and Sourcify in LATENCY ms, ${SIMULATION_RATE} req/s`,
    server: 'service',
    path: '/v1/guard',
    body: GUARD_DELEGATION,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 8,
    overallRate: SIMULATION_RATE,
    ...std,
  },
  {
    name: 'guard-order',
    about: `API key, guard reading a signed CoW order selling a fresh token per request, node and prices in LATENCY ms, ${SIMULATION_RATE} req/s`,
    server: 'service',
    path: '/v1/guard',
    body: GUARD_ORDER,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 8,
    overallRate: SIMULATION_RATE,
    // The simulation's tokens are priced and their decimals kept by then: start on fresh ones.
    nStart: COLD_KEYS / 2,
    ...std,
  },
  {
    name: 'guard-screened',
    about: 'API key, cached guard naming a spender, screened against the embedded sanctions list only',
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SCREENED,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 50,
    env: {},
    ...std,
  },
  {
    name: 'guard-screened-1m',
    about: 'as guard-screened, with a 1,000,000-address blocklist (BLOCKLIST_URLS) loaded',
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SCREENED,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 50,
    env: { BLOCKLIST_URLS: '{{BLOCKLIST}}/blocklist-1m.txt', SANCTIONS_REFRESH_S: '86400' },
    ...std,
  },
  {
    name: 'guard-screened-1m-refresh',
    about: `as guard-screened-1m at ${SCREEN_RATE} req/s while the list refreshes every 2 s, each fetch a new version`,
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SCREENED,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 4,
    overallRate: SCREEN_RATE,
    env: { BLOCKLIST_URLS: '{{BLOCKLIST}}/blocklist-1m-moving.txt', SANCTIONS_REFRESH_S: '2', SCREENING_POLL_S: '1' },
    ...std,
  },
  {
    name: 'guard-screened-1m-steady',
    about: `as guard-screened-1m at ${SCREEN_RATE} req/s, no refresh: the p99 guard-screened-1m-refresh is held to`,
    server: 'service',
    path: '/v1/guard',
    body: GUARD_SCREENED,
    auth: 'key',
    expectStatus: 200,
    expectBody: PROCEED,
    connections: 4,
    overallRate: SCREEN_RATE,
    env: { BLOCKLIST_URLS: '{{BLOCKLIST}}/blocklist-1m.txt', SANCTIONS_REFRESH_S: '86400' },
    ...std,
  },
  {
    name: 'invalid-body',
    about: 'schema violation, answered 422',
    server: 'service',
    path: '/v1/decide',
    body: INVALID_DECIDE,
    auth: 'none',
    expectStatus: 422,
    expectBody: '"detail":[',
    connections: 50,
    ...std,
  },
  {
    name: 'mcp-foreign-origin',
    about: 'POST /mcp from a foreign browser Origin, refused 403 before the body is read',
    server: 'service',
    path: '/mcp',
    body: MCP_INITIALIZE,
    auth: 'none',
    headers: { origin: 'http://evil.example.com', accept: 'application/json, text/event-stream' },
    expectStatus: 403,
    expectBody: '"detail":"This origin may not call',
    connections: 50,
    ...std,
  },
  KEYED_DECIDE,
  PAID_DECIDE,
  {
    ...PAID_DECIDE,
    name: 'decide-paid-capacity',
    about: `x402 payment per request from one payer, cached decide at ${PAID_CAPACITY_RATE} req/s on 8 connections`,
    connections: 8,
    overallRate: PAID_CAPACITY_RATE,
  },
  {
    ...KEYED_DECIDE,
    name: 'decide-keyed-pg',
    about: 'as decide-keyed on a service whose store is PostgreSQL',
    store: 'postgres',
  },
  {
    ...PAID_DECIDE,
    name: 'decide-paid-pg',
    about: "as decide-paid on a service whose store is PostgreSQL (each payer's claims under its advisory lock)",
    store: 'postgres',
  },
];
