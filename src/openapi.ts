/** The OpenAPI 3.1 document, generated from schemas/ and the endpoint table. */
import { schemas } from './generated/schemas.js';
import {
  GET_ENDPOINTS,
  MANAGEMENT_ENDPOINTS,
  POST_ENDPOINTS,
  type ManagementEndpoint,
  type PostEndpoint,
  type SchemaPostEndpoint,
} from './http/endpoints.js';
import { VERSION } from './version.js';

type Json = Record<string, any>;

/** Schema ids become component refs; `$id` is dropped (components are named by key). */
function toComponent(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toComponent);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === '$id') continue;
    out[k] = k === '$ref' && typeof v === 'string' ? `#/components/schemas/${v}` : toComponent(v);
  }
  // OpenAPI's discriminator needs the mapping-free form to name refs that exist; it does.
  return out;
}

/** What each tag groups, shown by the reference page at /docs. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  meta: 'Free read-only endpoints: service information, health, capabilities, this document, metrics.',
  keys: "Free API keys (100 calls a month), and an account's agent keys, each bound to a policy or none.",
  policies:
    "Operators' policies: what the keys bound to one may do, with spend limits counted across every instance (docs/policies.md).",
  decide: 'Goals with explicit checks, paid with an API key or an x402 payment.',
  guard: 'Action descriptions turned into a plan of safety checks, paid with an API key or an x402 payment.',
  x402: 'The same answers, paid per call with x402 only (0.01 USDC on Base).',
  agents: 'The six analysis agents and their endpoints.',
  mcp: 'The MCP tools over streamable HTTP: JSON-RPC 2.0, each tool call billed as a call to its endpoint.',
  account: "An account's own records for its owner key: the verdict log (docs/policies.md §10).",
};

/** One JSON-RPC 2.0 message as MCP sends it (docs/mcp.md §1); the MCP transport checks the rest. */
const JSON_RPC_MESSAGE = {
  type: 'object',
  description: 'A JSON-RPC 2.0 request, notification or response, e.g. initialize, tools/list or tools/call',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { type: 'string', const: '2.0' },
    id: { type: ['string', 'integer'] },
    method: { type: 'string' },
    params: { type: 'object' },
  },
};
const oneOrMany = (schema: Json) => ({ oneOf: [schema, { type: 'array', items: schema, minItems: 1 }] });

/** What the handlers without an agent do, for the operations' descriptions (docs/rules.md §3, §4). */
const HANDLER_TEXT: Partial<Record<PostEndpoint['handler'], string>> = {
  signup:
    'Creates an API key on the free plan and shows it once, in this answer; only its hash is kept. Limited per client address.',
  decide:
    "Runs the goal's explicit checks concurrently under the request's deadline, each answered from cache while its `ttl_s` lasts, and judges them: `block` when a check fails, `wait` when one warns or could not be evaluated, `proceed` when they pass.",
  guard:
    'Turns the action description (swap, transfer, bridge, approve, ...) and what it carries (a transaction to simulate, typed data to sign, an EIP-7702 authorization) into a plan of safety checks, runs the plan and judges it as decide does.',
  screen:
    "Screens up to 100 addresses by the guard's counterparty_screen rules: the sanctions list and the operator's blocklists, lookalikes of the known counterparties (the request's known_addresses and, for a keyed call, the account's), and recipients delegated to a sweeper when the chain has a node. One result per address, in order, and the lists with their dates and hashes.",
};

/** What a DecideResponse carries besides the verdict. */
const DECIDE_ANSWER =
  ' The answer carries confidence, risk, `expires_in`, every result as evidence, and an EIP-712 attestation of the verdict signed by the service (the signer is in GET /v1/capabilities).';

/** Who may call, by access (docs/rules.md §6). */
const ACCESS_TEXT: Record<SchemaPostEndpoint['access'], string> = {
  free: ' No credentials.',
  paid: ' Paid: an API key (`x-api-key` or `Authorization: Bearer`), one call against its monthly quota, or an x402 payment per call (without either: 402 with the x402 challenge, or 401 where payments are not configured).',
  payment_only: ' Paid per call with x402 only: a request without a payment is answered 402 with the challenge.',
};

/** The operation's description: what the row's agent or handler does, what it answers, who may call. */
function postDescription(e: SchemaPostEndpoint): string {
  const what = e.agent?.description ?? HANDLER_TEXT[e.handler] ?? '';
  return `${what}${e.response === 'DecideResponse' ? DECIDE_ANSWER : ''}${ACCESS_TEXT[e.access]}`.trim();
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** `PUT /v1/policies/{name}` → `putPoliciesByName`. */
function managementOperationId(e: ManagementEndpoint): string {
  const words = e.path
    .replace(/^\/v1\//, '')
    .split('/')
    .map((w) => (w.startsWith('{') ? `by-${w.slice(1, -1)}` : w));
  const camel = words
    .join('-')
    .replace(/[^a-zA-Z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''));
  return `${e.method.toLowerCase()}${camel.charAt(0).toUpperCase()}${camel.slice(1)}`;
}

/** A management row as an operation: the key's answers (401, 403, 503), its path parameters, its body. */
function managementOperation(e: ManagementEndpoint, errorBody: Json): Json {
  const responses: Json = {};
  if (e.status === 204) responses[204] = { description: 'Done; no body' };
  else responses[e.status] = json(ref(e.response ?? 'ErrorResponse'), e.status === 201 ? 'Created' : 'The answer');
  if (e.handler === 'policyPut')
    responses[200] = json(ref('PolicyVersion'), 'The document equals the current version: that version, no new one');
  responses[401] = json(errorBody, 'No API key, or an unknown or revoked one (x402 payments cannot pay for this call)');
  responses[403] = json(
    errorBody,
    e.agent === 'bound'
      ? 'An agent key not bound to this policy: it needs the owner key'
      : "An agent key: this call needs the account's owner key",
  );
  if (e.params?.length || e.handler === 'keysCreate' || e.query?.some((q) => q.name === 'key'))
    responses[404] = json(errorBody, 'No such key, policy or version in the account');
  if (['keysCreate', 'keysDelete', 'policyDelete'].includes(e.handler))
    responses[409] = json(
      errorBody,
      e.handler === 'policyDelete'
        ? 'A live key is bound to the policy'
        : e.handler === 'keysDelete'
          ? 'The owner key cannot be revoked here'
          : 'The name is taken by a live key, or the account holds MAX_AGENT_KEYS live agent keys',
    );
  if (e.request !== undefined)
    responses[413] = json(errorBody, `Body larger than ${e.bodyLimit === undefined ? '256 KiB' : '2 MiB'}`);
  if (e.request !== undefined || e.params?.length || e.query?.length)
    responses[422] = json(
      ref('HTTPValidationError'),
      'A path or query parameter or the body does not match its schema',
    );
  if (e.billed) responses[429] = json(errorBody, "The account's monthly quota is used up");
  responses[503] = {
    ...json(errorBody, 'The account store is unavailable; nothing was changed'),
    headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait before retrying' } },
  };
  const op: Json = {
    operationId: managementOperationId(e),
    summary: e.summary,
    description: `${e.description}${e.billed ? '' : ' Free.'} Needs the account's API key (\`x-api-key\` or \`Authorization: Bearer\`).`,
    tags: [e.tag],
    security: [{ ApiKey: [] }, { BearerKey: [] }],
    responses,
  };
  if (e.params?.length)
    op.parameters = e.params.map((p) => ({
      name: p.name,
      in: 'path',
      required: true,
      description: p.description,
      schema: p.schema,
    }));
  if (e.query?.length)
    op.parameters = [
      ...(op.parameters ?? []),
      ...e.query.map((q) => ({
        name: q.name,
        in: 'query',
        required: false,
        description: q.description,
        schema: q.schema,
      })),
    ];
  if (e.request !== undefined)
    op.requestBody = { required: true, content: { 'application/json': { schema: ref(e.request) } } };
  return op;
}
const json = (schema: unknown, description: string) => ({ description, content: { 'application/json': { schema } } });

export function buildOpenApi(serverUrl: string | null): Json {
  const components: Json = {};
  for (const [id, s] of Object.entries(schemas)) components[id] = toComponent(s);
  const errorBody = ref('ErrorResponse');
  const paths: Json = {};

  for (const e of GET_ENDPOINTS) {
    const schema = e.response
      ? e.array
        ? { type: 'array', items: ref(e.response) }
        : ref(e.response)
      : { type: 'object' };
    const metrics = e.path === '/metrics';
    const ok = metrics
      ? {
          description: 'Prometheus text exposition format',
          content: { 'text/plain': { schema: { type: 'string' } } },
        }
      : e.path === '/docs'
        ? { description: 'The reference page', content: { 'text/html': { schema: { type: 'string' } } } }
        : json(schema, 'OK');
    paths[e.path] = {
      get: {
        operationId:
          `get${e.path.replace(/[^a-zA-Z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}` ||
          'getRoot',
        summary: e.summary,
        description: e.description,
        tags: [e.tag],
        // Free: an empty requirement says so (no credentials), instead of leaving it unstated;
        // /metrics takes the operator's token when one is set, so it is optional there.
        security: metrics ? [{}, { MetricsToken: [] }] : [],
        responses: metrics
          ? { 200: ok, 401: json(errorBody, 'METRICS_TOKEN is set and the Bearer token is missing or wrong') }
          : { 200: ok },
      },
    };
  }

  /** The x402 challenge, as a paid endpoint and the MCP door answer it. */
  const challenge = {
    description: 'Payment required: the x402 challenge (v2 in the PAYMENT-REQUIRED header, v1 as the body)',
    headers: {
      'PAYMENT-REQUIRED': { schema: { type: 'string' }, description: 'base64 JSON of the x402 v2 PaymentRequired' },
    },
    content: { 'application/json': { schema: { type: 'object' } } },
  };
  const keyOrPayment: Json[] = [{ ApiKey: [] }, { BearerKey: [] }, { X402Payment: [] }, { X402PaymentV1: [] }];

  for (const e of POST_ENDPOINTS) {
    if (e.access === 'per_tool') {
      // The MCP door (docs/mcp.md §1, §4): credentials are checked as a paid endpoint checks
      // them, and each tools/call is a call to the tool's endpoint, counted and paid there.
      paths[e.path] = {
        post: {
          operationId: e.handler,
          summary: e.summary,
          description:
            'The MCP streamable HTTP transport, stateless, with JSON answers. The client must accept both application/json and text/event-stream. initialize, tools/list and notifications are free; each tools/call counts against the key, or takes the x402 payment, as a call to the endpoint that answers the tool (GET /v1/capabilities lists them under mcp.tools).',
          tags: [e.tag],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: oneOrMany(JSON_RPC_MESSAGE) } },
          },
          responses: {
            200: json(oneOrMany({ type: 'object', description: 'A JSON-RPC 2.0 response' }), 'The JSON-RPC answer'),
            202: { description: 'Only notifications or responses were sent: accepted, no body' },
            400: json({ type: 'object' }, 'Not a JSON-RPC message: the JSON-RPC error from the transport'),
            401: json(errorBody, 'Unknown or revoked API key, or no credentials when payments are not configured'),
            402: challenge,
            406: json(
              { type: 'object' },
              'The Accept header does not take both application/json and text/event-stream',
            ),
            413: json(errorBody, 'Body larger than 256 KiB'),
            422: json(ref('HTTPValidationError'), 'The body is not JSON'),
          },
          security: keyOrPayment,
        },
      };
      continue;
    }
    const responses: Json = {
      200: json(ref(e.response), 'The answer'),
      413: json(errorBody, 'Body larger than 256 KiB'),
      422: json(ref('HTTPValidationError'), 'The body does not match the schema'),
    };
    const security: Json[] = [];
    if (e.access !== 'free') {
      responses[402] = challenge;
      responses[400] = json(errorBody, 'Malformed payment header or x402 payment identifier');
      responses[409] = json(
        errorBody,
        'The x402 payment identifier was used for a different request, or its first attempt is still being served (docs/x402.md §9)',
      );
    }
    if (e.access === 'paid') {
      responses[401] = json(
        errorBody,
        'Unknown or revoked API key, or no credentials when payments are not configured',
      );
      responses[429] = json(errorBody, 'Monthly quota used up (with limit, used, resets_at) or too many signups');
      security.push(...keyOrPayment);
    } else if (e.access === 'payment_only') {
      security.push({ X402Payment: [] }, { X402PaymentV1: [] });
    } else {
      responses[429] = json(errorBody, 'Too many signups from this address');
    }
    paths[e.path] = {
      post: {
        operationId: e.path
          .replace(/^\/v1\//, '')
          .replace(/[^a-zA-Z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : '')),
        summary: e.summary,
        description: postDescription(e),
        tags: [e.tag],
        requestBody: { required: true, content: { 'application/json': { schema: ref(e.request) } } },
        responses,
        // The signup is free: an empty list states that no credentials are needed.
        security,
      },
    };
  }

  for (const e of MANAGEMENT_ENDPOINTS) {
    const op = managementOperation(e, errorBody);
    paths[e.path] = { ...(paths[e.path] ?? {}), [e.method.toLowerCase()]: op };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Pre-execution verification service',
      version: VERSION,
      description:
        'Checks an on-chain action against live data before an agent executes it, and answers proceed, wait or block with confidence, risk, expiry and evidence.',
    },
    servers: [{ url: serverUrl ?? '/' }],
    tags: [...new Set([...GET_ENDPOINTS, ...POST_ENDPOINTS, ...MANAGEMENT_ENDPOINTS].map((e) => e.tag))].map(
      (name) => ({
        name,
        ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}),
      }),
    ),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        BearerKey: { type: 'http', scheme: 'bearer', description: 'The API key as a Bearer token' },
        MetricsToken: {
          type: 'http',
          scheme: 'bearer',
          description: "GET /metrics only: the operator's METRICS_TOKEN, required when one is set",
        },
        X402Payment: {
          type: 'apiKey',
          in: 'header',
          name: 'PAYMENT-SIGNATURE',
          description: 'x402 v2 payment payload, base64 JSON',
        },
        X402PaymentV1: {
          type: 'apiKey',
          in: 'header',
          name: 'X-PAYMENT',
          description: 'x402 v1 payment payload, base64 JSON',
        },
      },
    },
  };
}
