/**
 * Every endpoint of the service, once, each with the handler that answers it (docs/endpoints.md).
 * The app mounts every route from this table and nothing else, and the OpenAPI document,
 * /v1/capabilities and /v1/agents are generated from it.
 */
import type { SchemaId } from './validation.js';

/**
 * free: anyone; paid: an API key or an x402 payment; payment_only: an x402 payment;
 * per_tool: the door checks credentials and bills nothing, each tool call it makes is a POST to the
 * tool's own endpoint, billed there (POST /mcp, docs/mcp.md).
 */
export type Access = 'free' | 'paid' | 'payment_only' | 'per_tool';
/** The POST handlers: `decide` is built in src/app.ts, the others come from src/compose.ts. */
export type HandlerKey = 'decide' | 'guard' | 'screen' | 'stablecoin' | 'bridge' | 'yield' | 'signup' | 'mcp';

export interface AgentMeta {
  name: string;
  slug: string;
  description: string;
}

interface PostCommon {
  path: string;
  summary: string;
  handler: HandlerKey;
  tag: string;
  agent?: AgentMeta;
}

/** A POST whose body is validated against `request` and answered with `response`; the billing gate prices it. */
export interface SchemaPostEndpoint extends PostCommon {
  access: 'free' | 'paid' | 'payment_only';
  request: SchemaId;
  response: string;
}

/**
 * POST /mcp: a JSON-RPC 2.0 message in, JSON-RPC out. The handler reads the parsed body itself
 * (no schema step) and the billing gate is not applied: every tool call is billed by its endpoint.
 */
export interface ToolsPostEndpoint extends PostCommon {
  access: 'per_tool';
}

export type PostEndpoint = SchemaPostEndpoint | ToolsPostEndpoint;

const AGENTS = {
  decision: {
    name: 'Decision Verification',
    slug: 'decision-verification',
    description:
      "Runs a goal's explicit checks (prices, pegs, pools, contracts, transactions, status pages) and answers proceed, wait or block with the evidence.",
  },
  execution: {
    name: 'Execution Guard',
    slug: 'execution-guard',
    description:
      'Turns an action description (swap, transfer, bridge, approve, ...) into a plan of safety checks and judges it before execution.',
  },
  defi: {
    name: 'DeFi Risk',
    slug: 'defi-risk',
    description:
      'Verifies DeFi positions and counterparties with the same check engine: depegs, rug-pull signals, unverified contracts, unlimited approvals.',
  },
  stablecoin: {
    name: 'Stablecoin Intelligence',
    slug: 'stablecoin-intelligence',
    description:
      'Peg status of many stablecoins in one call: price, deviation, pegged/warning/depegged, and the worst asset.',
  },
  bridge: {
    name: 'Bridge Risk',
    slug: 'bridge-risk',
    description:
      'Reads bridge status pages and statuspage feeds for exploits, pauses and incidents, one result per URL.',
  },
  yield: {
    name: 'Yield Routing',
    slug: 'yield-routing',
    description:
      'Filters and ranks yield options by risk-adjusted APY, excluding thin liquidity, high risk and depegged stablecoins.',
  },
} satisfies Record<string, AgentMeta>;

export const POST_ENDPOINTS: readonly PostEndpoint[] = [
  {
    path: '/v1/api-keys/signup',
    summary: 'Get a free API key',
    request: 'ApiKeySignupRequest',
    response: 'ApiKeySignupResponse',
    access: 'free',
    handler: 'signup',
    tag: 'keys',
  },
  {
    path: '/v1/decide',
    summary: 'Decide on a goal from explicit checks',
    request: 'DecideRequest',
    response: 'DecideResponse',
    access: 'paid',
    handler: 'decide',
    tag: 'decide',
  },
  {
    path: '/v1/guard',
    summary: 'Guard an action before executing it',
    request: 'GuardRequest',
    response: 'DecideResponse',
    access: 'paid',
    handler: 'guard',
    tag: 'guard',
  },
  {
    path: '/v1/screen',
    summary: 'Screen counterparty addresses',
    request: 'ScreenRequest',
    response: 'ScreenResponse',
    access: 'paid',
    handler: 'screen',
    tag: 'guard',
  },
  {
    path: '/v1/x402/decide',
    summary: 'Decide, paid per call with x402',
    request: 'DecideRequest',
    response: 'DecideResponse',
    access: 'payment_only',
    handler: 'decide',
    tag: 'x402',
  },
  {
    path: '/v1/x402/guard',
    summary: 'Guard, paid per call with x402',
    request: 'GuardRequest',
    response: 'DecideResponse',
    access: 'payment_only',
    handler: 'guard',
    tag: 'x402',
  },
  {
    path: '/v1/acp/decide',
    summary: 'Decide for agentic commerce clients, paid with x402',
    request: 'DecideRequest',
    response: 'DecideResponse',
    access: 'payment_only',
    handler: 'decide',
    tag: 'x402',
  },
  {
    path: '/v1/acp/guard',
    summary: 'Guard for agentic commerce clients, paid with x402',
    request: 'GuardRequest',
    response: 'DecideResponse',
    access: 'payment_only',
    handler: 'guard',
    tag: 'x402',
  },
  {
    path: '/v1/agents/decision-verification/decide',
    summary: 'Decision Verification agent',
    request: 'DecideRequest',
    response: 'DecideResponse',
    access: 'paid',
    handler: 'decide',
    tag: 'agents',
    agent: AGENTS.decision,
  },
  {
    path: '/v1/agents/execution-guard/execute',
    summary: 'Execution Guard agent',
    request: 'GuardRequest',
    response: 'DecideResponse',
    access: 'paid',
    handler: 'guard',
    tag: 'agents',
    agent: AGENTS.execution,
  },
  {
    path: '/v1/agents/defi-risk/verify',
    summary: 'DeFi Risk agent',
    request: 'DecideRequest',
    response: 'DecideResponse',
    access: 'paid',
    handler: 'decide',
    tag: 'agents',
    agent: AGENTS.defi,
  },
  {
    path: '/v1/agents/stablecoin-intelligence/analyze',
    summary: 'Stablecoin Intelligence agent',
    request: 'StablecoinIntelligenceRequest',
    response: 'StablecoinIntelligenceResponse',
    access: 'paid',
    handler: 'stablecoin',
    tag: 'agents',
    agent: AGENTS.stablecoin,
  },
  {
    path: '/v1/agents/bridge-risk/analyze',
    summary: 'Bridge Risk agent',
    request: 'BridgeRiskRequest',
    response: 'BridgeRiskResponse',
    access: 'paid',
    handler: 'bridge',
    tag: 'agents',
    agent: AGENTS.bridge,
  },
  {
    path: '/v1/agents/yield-routing/recommend',
    summary: 'Yield Routing agent',
    request: 'YieldRoutingRequest',
    response: 'YieldRoutingResponse',
    access: 'paid',
    handler: 'yield',
    tag: 'agents',
    agent: AGENTS.yield,
  },
  {
    path: '/mcp',
    summary: 'MCP tools over streamable HTTP (JSON-RPC 2.0), each tool call billed as its endpoint',
    access: 'per_tool',
    handler: 'mcp',
    tag: 'mcp',
  },
];

/** Whether the entry takes a body of its own schema (every POST but /mcp). */
export function hasSchema(e: PostEndpoint): e is SchemaPostEndpoint {
  return e.access !== 'per_tool';
}

/** The POSTs with a request schema: what validation, the billing gate and the x402 catalogue see. */
export const SCHEMA_POST_ENDPOINTS: readonly SchemaPostEndpoint[] = POST_ENDPOINTS.filter(hasSchema);

function pathOf(e: PostEndpoint | undefined, what: string): string {
  if (e === undefined) throw new Error(`the endpoint table has no ${what}`);
  return e.path;
}

/** Where a free API key is taken. */
export const SIGNUP_PATH = pathOf(
  POST_ENDPOINTS.find((e) => e.handler === 'signup'),
  'signup',
);

/**
 * The path a caller with an API key uses for this request shape: the table's first `paid` entry
 * with no agent serving it (`/v1/decide`, `/v1/guard`), or null when there is none.
 */
export function keyedPathFor(request: string): string | null {
  return POST_ENDPOINTS.find((e) => e.access === 'paid' && e.request === request && !e.agent)?.path ?? null;
}

/**
 * The path that takes an x402 payment for this request shape: the table's first `payment_only`
 * entry serving it (`/v1/x402/decide`, `/v1/x402/guard`), or null when there is none.
 */
export function payPerCallPathFor(request: string): string | null {
  return POST_ENDPOINTS.find((e) => e.access === 'payment_only' && e.request === request)?.path ?? null;
}

/**
 * The GET handlers: the meta ones are in src/http/routes/meta.ts, `docs` and `docsFiles` in
 * src/http/routes/docs.ts, `metrics` in src/http/routes/metrics.ts (given by src/compose.ts).
 */
export type GetHandlerKey =
  | 'root'
  | 'health'
  | 'capabilities'
  | 'agents'
  | 'openapi'
  | 'docs'
  | 'docsFiles'
  | 'metrics';

/** A query parameter of a management GET row, for the OpenAPI document (the handler reads and checks it, 422 `["query", name]`). */
export interface QueryParam {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

export interface GetEndpoint {
  path: string;
  summary: string;
  /** What a caller gets and when, for the OpenAPI document (shown by /docs). */
  description: string;
  tag: string;
  /** Schema of the body, or a plain description when its shape is ours and free-form. */
  response: string | null;
  array?: boolean;
  /** Which handler answers GET (and HEAD) on the path. */
  handler: GetHandlerKey;
  /**
   * The handler of the files one level under the path (`/docs/swagger-ui.css`): it answers the names
   * it knows and passes the rest on (404). They are the page's assets, not operations of the OpenAPI document.
   */
  files?: GetHandlerKey;
}

export const GET_ENDPOINTS: readonly GetEndpoint[] = [
  {
    path: '/',
    summary: 'Service name, version and links',
    description: "The service's name, version and the paths of its free endpoints. No credentials; never billed.",
    tag: 'meta',
    response: null,
    handler: 'root',
  },
  {
    path: '/health',
    summary: 'Liveness: {"status":"ok"}, version and uptime; no authentication',
    description:
      'Liveness for load balancers and probes: `status` is `ok`, or `degraded` (still 200) while the fleet cache (Redis) is unreachable and every answer is computed by this instance alone; with version and uptime. Not cached (Cache-Control: no-store). No credentials.',
    tag: 'meta',
    response: null,
    handler: 'health',
  },
  {
    path: '/v1/capabilities',
    summary: 'Check types with fields and defaults, guard actions, agents, pricing, limits, auth',
    description:
      "What this deployment offers: every check type with its fields and defaults, the guard's actions and fields, the agents, the MCP tools, the attestation signer and domain, prices, quotas and body limits, and which endpoints are free, paid or x402 only. No credentials.",
    tag: 'meta',
    response: null,
    handler: 'capabilities',
  },
  {
    path: '/v1/agents',
    summary: 'The analysis agents and their endpoints',
    description:
      'The six analysis agents, each with its name, slug, description and the endpoint that answers it. No credentials.',
    tag: 'agents',
    response: 'AgentInfo',
    array: true,
    handler: 'agents',
  },
  {
    path: '/openapi.json',
    summary: 'This OpenAPI 3.1 document',
    description:
      'This document, generated from the request and response schemas the service validates with. No credentials.',
    tag: 'meta',
    response: null,
    handler: 'openapi',
  },
  {
    path: '/docs',
    summary: 'This document as an interactive reference (Swagger UI, HTML)',
    description:
      'This document rendered as an interactive reference page. The page and its scripts are served by the service itself and load nothing from another origin. No credentials.',
    tag: 'meta',
    response: null,
    handler: 'docs',
    files: 'docsFiles',
  },
  {
    path: '/metrics',
    summary: 'Prometheus metrics (Bearer METRICS_TOKEN when set)',
    description:
      'The Prometheus text exposition: requests, verdicts, checks, cache, upstreams, payments, quota and the worker pool. When the operator sets METRICS_TOKEN it must be sent as `Authorization: Bearer <token>` (401 otherwise). Not cached.',
    tag: 'meta',
    response: null,
    handler: 'metrics',
  },
];

/** The six agents as AgentInfo, each with its endpoints. */
export function agentInfos(): Array<{
  name: string;
  slug: string;
  status: 'live';
  description: string;
  endpoints: string[];
}> {
  return POST_ENDPOINTS.filter((e) => e.agent).map((e) => ({
    name: e.agent!.name,
    slug: e.agent!.slug,
    status: 'live' as const,
    description: e.agent!.description,
    endpoints: [`POST ${e.path}`],
  }));
}

/**
 * Account management (docs/policies.md): keys and policies, answered for the account of the key
 * presented. `management` access: a key is required (401 without one; x402 cannot pay), free,
 * and the account's owner key only (403 for an agent key), unless the row lets an agent key bound
 * to the policy it names (`{name}`) call it. The store down: 503 with Retry-After.
 */
export type ManagementMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type ManagementHandlerKey =
  | 'keysCreate'
  | 'keysList'
  | 'keysUpdate'
  | 'keysDelete'
  | 'policyPut'
  | 'policyList'
  | 'policyGet'
  | 'policyVersion'
  | 'policyDelete'
  | 'policyUsage'
  | 'policyEvaluate'
  | 'verdicts';

/** A path parameter: its name in `{}` in the path, what it is and the pattern it must match (else 422). */
export interface PathParam {
  name: string;
  description: string;
  schema: { type: 'string'; pattern: string } | { type: 'integer'; minimum: number; maximum: number };
}

export interface ManagementEndpoint {
  method: ManagementMethod;
  /** The path in OpenAPI form, parameters in braces: `/v1/policies/{name}`. */
  path: string;
  summary: string;
  description: string;
  tag: string;
  access: 'management';
  handler: ManagementHandlerKey;
  params?: readonly PathParam[];
  query?: readonly QueryParam[];
  /** The body's schema, for the methods that take one. */
  request?: SchemaId;
  /** The answer's schema; null for a 204 with no body. */
  response: string | null;
  status: 200 | 201 | 204;
  /** `bound`: an agent key bound to the policy named in the path may call it too. */
  agent?: 'bound';
  /** The call counts against the account's monthly quota (the dry run). */
  billed?: true;
  /** A body cap other than MAX_REQUEST_BODY_BYTES. */
  bodyLimit?: number;
}

/** PUT /v1/policies/{name} takes bodies up to this (the documented maxima need about 1.4 MB). */
export const POLICY_BODY_LIMIT = 2 * 1024 * 1024;

const KEY_ID: PathParam = {
  name: 'id',
  description: "The key's id, as POST /v1/keys and GET /v1/keys answer it",
  schema: { type: 'string', pattern: '^[A-Za-z0-9-]{1,64}$' },
};
const POLICY_NAME_PARAM: PathParam = {
  name: 'name',
  description: "The policy's name: a lower-case letter or digit, then up to 63 of a-z 0-9 _ -",
  schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
};
const VERSION_PARAM: PathParam = {
  name: 'n',
  description: 'The version number, from 1',
  schema: { type: 'integer', minimum: 1, maximum: 2147483647 },
};

export const MANAGEMENT_ENDPOINTS: readonly ManagementEndpoint[] = [
  {
    method: 'POST',
    path: '/v1/keys',
    summary: 'Create an agent key',
    description:
      "Creates an agent key of the caller's account, optionally bound to a policy, and shows it once, in this answer. Names are unique among the account's live keys (409); at most MAX_AGENT_KEYS live agent keys (409).",
    tag: 'keys',
    access: 'management',
    handler: 'keysCreate',
    request: 'KeyCreateRequest',
    response: 'KeyCreated',
    status: 201,
  },
  {
    method: 'GET',
    path: '/v1/keys',
    summary: "List the account's keys",
    description:
      "Every key of the caller's account, the owner key first, revoked ones included, with name, role, policy and times; never a key itself.",
    tag: 'keys',
    access: 'management',
    handler: 'keysList',
    response: 'KeyList',
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/v1/keys/{id}',
    summary: 'Bind a key to a policy, or unbind it',
    description:
      'Binds a live key of the account (the owner key included) to a policy by name, or to none with null. Honoured by this instance at once and by every instance within 5 s.',
    tag: 'keys',
    access: 'management',
    handler: 'keysUpdate',
    params: [KEY_ID],
    request: 'KeyUpdateRequest',
    response: 'KeyInfo',
    status: 200,
  },
  {
    method: 'DELETE',
    path: '/v1/keys/{id}',
    summary: 'Revoke an agent key',
    description:
      'Revokes an agent key of the account: refused by this instance at once and by every instance within 5 s. The owner key cannot be revoked here (409).',
    tag: 'keys',
    access: 'management',
    handler: 'keysDelete',
    params: [KEY_ID],
    response: null,
    status: 204,
  },
  {
    method: 'GET',
    path: '/v1/policies',
    summary: "List the account's policies",
    description: "Every policy of the caller's account with its current version and hash.",
    tag: 'policies',
    access: 'management',
    handler: 'policyList',
    response: 'PolicyList',
    status: 200,
  },
  {
    method: 'PUT',
    path: '/v1/policies/{name}',
    summary: 'Create or update a policy',
    description:
      "Stores the document as the policy's next version (201), or answers the current version when the document equals it (200). Versions are immutable and numbered from 1; `hash` is keccak256 of the stored document's RFC 8785 canonical JSON. Bodies up to 2 MiB.",
    tag: 'policies',
    access: 'management',
    handler: 'policyPut',
    params: [POLICY_NAME_PARAM],
    request: 'PolicyDocument',
    response: 'PolicyVersion',
    status: 201,
    bodyLimit: POLICY_BODY_LIMIT,
  },
  {
    method: 'GET',
    path: '/v1/policies/{name}',
    summary: "A policy's current version",
    description: 'The current version, as PUT answers it. An agent key bound to the policy may read it.',
    tag: 'policies',
    access: 'management',
    handler: 'policyGet',
    params: [POLICY_NAME_PARAM],
    response: 'PolicyVersion',
    status: 200,
    agent: 'bound',
  },
  {
    method: 'DELETE',
    path: '/v1/policies/{name}',
    summary: 'Delete a policy',
    description: 'Deletes the policy and its versions; 409 while a live key is bound to it.',
    tag: 'policies',
    access: 'management',
    handler: 'policyDelete',
    params: [POLICY_NAME_PARAM],
    response: null,
    status: 204,
  },
  {
    method: 'GET',
    path: '/v1/policies/{name}/versions/{n}',
    summary: 'One version of a policy',
    description: 'That version, as PUT answered it. An agent key bound to the policy may read it.',
    tag: 'policies',
    access: 'management',
    handler: 'policyVersion',
    params: [POLICY_NAME_PARAM, VERSION_PARAM],
    response: 'PolicyVersion',
    status: 200,
    agent: 'bound',
  },
  {
    method: 'GET',
    path: '/v1/policies/{name}/usage',
    summary: "A policy's limits and what they have counted",
    description:
      "Each limit of the current version with its window's start and end, the USD committed and reserved (awaiting release), what remains, and the count. An agent key bound to the policy may read it.",
    tag: 'policies',
    access: 'management',
    handler: 'policyUsage',
    params: [POLICY_NAME_PARAM],
    response: 'PolicyUsage',
    status: 200,
    agent: 'bound',
  },
  {
    method: 'POST',
    path: '/v1/policies/{name}/evaluate',
    summary: 'Dry run: what the guard would answer under a policy',
    description:
      "Answers the GuardRequest as POST /v1/guard would under the policy's current version, with `decision.dry_run: true`, no reservation and no attestation. Counts one call against the account's monthly quota. An agent key bound to the policy may call it.",
    tag: 'policies',
    access: 'management',
    handler: 'policyEvaluate',
    params: [POLICY_NAME_PARAM],
    request: 'GuardRequest',
    response: 'DecideResponse',
    status: 200,
    agent: 'bound',
    billed: true,
  },
  {
    method: 'GET',
    path: '/v1/verdicts',
    summary: "The account's verdict log, newest first",
    description:
      "Every answer given to a call with one of the account's keys (decide, guard, the agents, MCP tool calls): when, which key, which endpoint, the verdict, risk and failure modes, the policy version, and what it reserved in the policy's limits with that reservation's state now. Newest first, at most 500 a page; pass `next_cursor` as `cursor` for the next page. Rows are kept VERDICT_LOG_DAYS (30) days. The account's owner key only: 401 without a key, 403 for an agent key.",
    tag: 'account',
    access: 'management',
    handler: 'verdicts',
    response: 'VerdictPage',
    status: 200,
    query: [
      {
        name: 'limit',
        description: 'Rows on the page, 1 to 500 (50 when absent).',
        schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
      },
      {
        name: 'cursor',
        description: "The previous page's `next_cursor`: the page after it.",
        schema: { type: 'string' },
      },
      { name: 'key', description: "Only this key's answers (a key id of the account).", schema: { type: 'string' } },
      {
        name: 'verdict',
        description: 'Only answers with this verdict.',
        schema: { type: 'string', enum: ['proceed', 'wait', 'block'] },
      },
      {
        name: 'since',
        description: 'Only answers given at or after this time (RFC 3339).',
        schema: { type: 'string', format: 'date-time' },
      },
    ],
  },
];

/** `/v1/policies/{name}` → `/v1/policies/:name`, the form express routes on. */
export function expressPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}
