/** The free read-only endpoints' handlers: /, /health, /v1/capabilities, /v1/agents, /openapi.json. */
import { IDEMPOTENCY_KEEP_MS } from '../idempotency.js';
import { VERDICT_PAGE_MAX } from './verdicts.js';
import type { RequestHandler } from 'express';
import { CHAIN_IDS, type Config } from '../../config.js';
import { DECIDE_CHAIN_ID, type Attester } from '../../attest/index.js';
import { DOMAIN_NAME, DOMAIN_VERSION, RISK_CODES, VERDICT_CODES, VERDICT_TYPES } from '../../attest/verdict.js';
import { VERSION } from '../../version.js';
import { buildOpenApi } from '../../openapi.js';
import {
  agentInfos,
  GET_ENDPOINTS,
  type GetHandlerKey,
  MANAGEMENT_ENDPOINTS,
  POLICY_BODY_LIMIT,
  POST_ENDPOINTS,
} from '../endpoints.js';
import { KEY_CACHE_MS } from '../../billing/keys.js';
import type { PolicyReason } from '../../policy/evaluate.js';
import { MCP_TOOLS } from '../../mcp/tools.js';
import { CHECK_TYPES, GUARD_ACTIONS, checkSchemaId, describeFields, schemaMap } from '../../schema-info.js';
import { MAX_DEPTH } from '../validation.js';
import type { Screening } from '../../screening/service.js';
import {
  MAX_REQUEST_BODY_BYTES,
  NETWORK_V1,
  NETWORK_V2,
  PRICE_ATOMIC,
  PRICE_DISPLAY,
  USDC_BASE,
  USDC_DECIMALS,
} from '../../pricing.js';

const maxItems = (id: string, field: string): number | undefined => schemaMap[id]?.properties?.[field]?.maxItems;

/** How answers are signed (docs/attestations.md): the signer, the domain and the types. Never the key. */
function attestationInfo(attester: Attester | null): Record<string, unknown> | null {
  if (attester === null) return null;
  return {
    signer: attester.address,
    scheme: 'EIP-712',
    domain: { name: DOMAIN_NAME, version: DOMAIN_VERSION },
    domain_chain_id: {
      decide: DECIDE_CHAIN_ID,
      guard: 'the chain id of the request chain (base, 8453, when omitted); 0 for a chain without a known id',
      chains: CHAIN_IDS,
    },
    primaryType: 'Verdict',
    types: VERDICT_TYPES,
    codes: { verdict: VERDICT_CODES, risk: RISK_CODES },
    fields: {
      id: 'keccak256 of the answer id (UTF-8): the request id the service made, unique per answer',
      confidenceBps: 'round(confidence * 10000)',
      requestHash: 'keccak256 of the request body bytes as received',
      actionHash:
        'keccak256(abi.encode(uint256 chainId, address from, address to, uint256 value, bytes32 keccak256(data))) of the guard request transaction (to: zero address for a deployment); 32 zero bytes without one',
      policyHash:
        'the hash of the policy version the answer was made under (decision.policy.hash); 32 zero bytes without a policy',
      issuedAt: 'unix seconds',
      expiresAt: 'issuedAt + expires_in',
    },
    executor: 'contracts/PreflightAccount.sol',
  };
}

/** The MCP door (docs/mcp.md): where it is and which endpoint answers, and bills, each tool. */
function mcpInfo(): Record<string, unknown> | null {
  const door = POST_ENDPOINTS.find((e) => e.handler === 'mcp');
  if (door === undefined) return null;
  return {
    endpoint: `POST ${door.path}`,
    transport: 'streamable HTTP, stateless, JSON answers',
    billing: 'per tool call, as a call to the endpoint that answers the tool',
    tools: MCP_TOOLS.map((tool) => ({ name: tool.name, endpoint: `${tool.get ? 'GET' : 'POST'} ${tool.path}` })),
  };
}

/** The policy item's reasons, in the order they are evaluated (docs/policies.md §3). */
const POLICY_REASONS: readonly PolicyReason[] = [
  'policy_chain_not_allowed',
  'policy_rule_blocked',
  'policy_no_rule_matched',
  'policy_unlimited_approval',
  'policy_approval_exceeds_max',
  'policy_permit_lifetime_exceeds_max',
  'policy_value_unknown',
  'policy_limit_exceeded',
  'policy_unavailable',
];

export function capabilities(config: Readonly<Config>, attester: Attester | null = null): Record<string, unknown> {
  return {
    service: 'preflight',
    version: VERSION,
    check_types: CHECK_TYPES.map((type) => {
      const id = checkSchemaId(type);
      return { type, description: schemaMap[id].description, fields: describeFields(id) };
    }),
    guard: { actions: GUARD_ACTIONS, fields: describeFields('GuardRequest') },
    agents: agentInfos(),
    mcp: mcpInfo(),
    attestation: attestationInfo(attester),
    pricing: {
      per_call: {
        amount: PRICE_ATOMIC,
        decimals: USDC_DECIMALS,
        display: PRICE_DISPLAY,
        asset: USDC_BASE,
        network: NETWORK_V1,
        network_caip2: NETWORK_V2,
        scheme: 'exact',
      },
      payments_enabled: config.billing && config.x402PayTo !== null,
      free_tier: { plan: 'Basic', monthly_calls: config.freeTierMonthlyLimit },
      plans: config.planLimits,
    },
    limits: {
      max_body_bytes: MAX_REQUEST_BODY_BYTES,
      max_nesting_depth: MAX_DEPTH,
      max_checks_per_request: maxItems('DecideRequest', 'checks'),
      max_asset_ids: maxItems('StablecoinIntelligenceRequest', 'asset_ids'),
      max_bridge_status_urls: maxItems('BridgeRiskRequest', 'bridge_status_urls'),
      max_yield_options: maxItems('YieldRoutingRequest', 'options'),
      deadline_ms: {
        default: config.requestDeadlineMs,
        max: config.maxDeadlineMs,
        request_field: 'context.deadline_ms',
      },
    },
    auth: {
      billing: config.billing,
      methods: [
        { kind: 'api_key', header: 'x-api-key' },
        { kind: 'api_key', header: 'Authorization', format: 'Bearer <API_KEY>' },
        { kind: 'x402', version: 2, header: 'PAYMENT-SIGNATURE' },
        { kind: 'x402', version: 1, header: 'X-PAYMENT' },
      ],
      signup: 'POST /v1/api-keys/signup',
      free_endpoints: [
        ...GET_ENDPOINTS.map((e) => `GET ${e.path}`),
        ...POST_ENDPOINTS.filter((e) => e.access === 'free').map((e) => `POST ${e.path}`),
      ],
      payment_only_endpoints: POST_ENDPOINTS.filter((e) => e.access === 'payment_only').map((e) => `POST ${e.path}`),
      per_tool_endpoints: POST_ENDPOINTS.filter((e) => e.access === 'per_tool').map((e) => `POST ${e.path}`),
      // docs/policies.md §1: a key required, free (the dry run counts one call), x402 cannot pay.
      management_endpoints: MANAGEMENT_ENDPOINTS.map((e) => ({
        endpoint: `${e.method} ${e.path}`,
        agent_key: e.agent === 'bound' ? 'bound to the named policy' : 'refused (403)',
        billed: e.billed === true,
      })),
    },
    policies: {
      docs: 'docs/policies.md',
      max_agent_keys: config.maxAgentKeys,
      max_policy_body_bytes: POLICY_BODY_LIMIT,
      policy_document: describeFields('PolicyDocument'),
      reasons: POLICY_REASONS,
      windows: ['hour', 'day', 'week', 'month', { rolling_s: '60 to 2592000' }],
      key_cache_s: KEY_CACHE_MS / 1000,
      // docs/policies.md §9, §10.
      idempotency_key: {
        header: 'Idempotency-Key',
        length: '1 to 255 visible ASCII',
        kept_h: IDEMPOTENCY_KEEP_MS / 3_600_000,
      },
      verdict_log: { endpoint: 'GET /v1/verdicts', page_max: VERDICT_PAGE_MAX, retention_days: config.verdictLogDays },
    },
  };
}

/** The meta GET handlers by their key in the endpoint table; the bodies are built once, here. */
export function metaHandlers(
  config: Readonly<Config>,
  attester: Attester | null = null,
  sharedState: (() => 'ok' | 'degraded') | null = null,
  screening: Pick<Screening, 'info' | 'health'> | null = null,
): Record<Extract<GetHandlerKey, 'root' | 'health' | 'capabilities' | 'agents' | 'openapi'>, RequestHandler> {
  const started = Date.now();
  const caps = capabilities(config, attester);
  const openapi = buildOpenApi(config.publicBaseUrl);
  const agents = agentInfos();
  return {
    root: (_req, res) => {
      res.json({
        name: 'preflight',
        description: 'Pre-execution verification for on-chain agents: proceed, wait or block before you act.',
        version: VERSION,
        links: {
          health: '/health',
          capabilities: '/v1/capabilities',
          agents: '/v1/agents',
          openapi: '/openapi.json',
          docs: '/docs',
          metrics: '/metrics',
          signup: '/v1/api-keys/signup',
        },
      });
    },
    health: (_req, res) => {
      res.setHeader('cache-control', 'no-store');
      // A fleet cache that is away degrades, it does not stop, the service: still 200 (docs/fleet.md).
      const fleet = sharedState?.() ?? null;
      // So does a screening list whose last refresh failed or was refused (docs/screening.md §3).
      const lists = screening?.health() ?? null;
      res.json({
        status: fleet === 'degraded' || lists?.status === 'degraded' ? 'degraded' : 'ok',
        version: VERSION,
        uptime_s: Math.floor((Date.now() - started) / 1000),
        ...(fleet === null ? {} : { shared_cache: fleet }),
        ...(lists === null || lists.status === 'ok' ? {} : { screening: lists }),
      });
    },
    capabilities: (_req, res) => {
      // The lists change with each refresh; the rest is built once.
      res.json(screening === null ? caps : { ...caps, screening: { lists: screening.info() } });
    },
    agents: (_req, res) => {
      res.json(agents);
    },
    openapi: (_req, res) => {
      res.json(openapi);
    },
  };
}
