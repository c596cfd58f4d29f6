/**
 * The MCP tools (docs/mcp.md): six tools, each the same call as one HTTP endpoint. Their input and
 * output schemas are the generated schemas of schemas/, bundled into one self-contained document
 * each (MCP clients resolve no external references). A tool call is an HTTP call made by `call`:
 * over the streamable HTTP transport it goes through the service's own endpoint (src/mcp/http.ts),
 * from the stdio bin to PREFLIGHT_URL (src/mcp/stdio.ts). Either way the answer, the credentials,
 * the quota and the payment rules are the endpoint's.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { schemas } from '../generated/schemas.js';
import { VERSION } from '../version.js';
import type { SchemaId } from '../http/validation.js';
import { POLICY_NAME } from '../policy/document.js';
import type { ValidationDetail } from '../wire.js';

type Json = Record<string, unknown>;

export interface McpTool {
  name: string;
  title: string;
  description: string;
  /** The endpoint answering the call. */
  path: string;
  /**
   * A GET endpoint whose path takes the arguments (`preflight_usage`): the path for them, or the
   * 422-style problems of arguments that cannot make one (no body carries them to a validator).
   */
  get?: (args: Record<string, unknown>) => string | ValidationDetail[];
  /** The input schema: a schema of schemas/, or (for a GET tool, whose input is no request body) the schema itself. */
  request: SchemaId | Json;
  response: keyof typeof schemas;
}

export const MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'preflight_guard',
    title: 'Guard an action',
    description:
      'Before executing an on-chain action (swap, transfer, bridge, approve, ...), get proceed, wait or block with the evidence. Same as POST /v1/guard.',
    path: '/v1/guard',
    request: 'GuardRequest',
    response: 'DecideResponse',
  },
  {
    name: 'preflight_decide',
    title: 'Decide on a goal',
    description:
      "Run a goal's explicit checks (prices, pegs, pools, contracts, transactions, status pages) and get proceed, wait or block. Same as POST /v1/decide.",
    path: '/v1/decide',
    request: 'DecideRequest',
    response: 'DecideResponse',
  },
  {
    name: 'preflight_screen',
    title: 'Screen counterparties',
    description:
      "Before paying, approving or delegating to addresses, screen up to 100 of them: sanctions list, the operator's blocklists, lookalikes of known counterparties (address poisoning), recipients delegated to a sweeper. Same as POST /v1/screen.",
    path: '/v1/screen',
    request: 'ScreenRequest',
    response: 'ScreenResponse',
  },
  {
    name: 'stablecoin_peg',
    title: 'Stablecoin peg status',
    description:
      'Peg status of one or more stablecoins: price, deviation, pegged/warning/depegged. Same as POST /v1/agents/stablecoin-intelligence/analyze.',
    path: '/v1/agents/stablecoin-intelligence/analyze',
    request: 'StablecoinIntelligenceRequest',
    response: 'StablecoinIntelligenceResponse',
  },
  {
    name: 'bridge_risk',
    title: 'Bridge risk',
    description:
      'Read bridge status pages for exploits, pauses and incidents. Same as POST /v1/agents/bridge-risk/analyze.',
    path: '/v1/agents/bridge-risk/analyze',
    request: 'BridgeRiskRequest',
    response: 'BridgeRiskResponse',
  },
  {
    name: 'yield_route',
    title: 'Yield routing',
    description:
      'Rank yield options by risk-adjusted APY, excluding thin liquidity, high risk and depegged stablecoins. Same as POST /v1/agents/yield-routing/recommend.',
    path: '/v1/agents/yield-routing/recommend',
    request: 'YieldRoutingRequest',
    response: 'YieldRoutingResponse',
  },
  {
    name: 'preflight_usage',
    title: "A policy's spend limits and usage",
    description:
      "What the key's policy limits have counted in their current windows: committed and reserved USD, what remains, counts. Same as GET /v1/policies/{name}/usage; free. The policy's name is decision.policy.name of a guard answer under it.",
    path: '/v1/policies/{name}/usage',
    get: (args) => {
      const extra = Object.keys(args).filter((k) => k !== 'policy');
      if (extra.length > 0)
        return [{ loc: ['body', extra[0]], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' }];
      if (typeof args.policy !== 'string' || !POLICY_NAME.test(args.policy))
        return [
          {
            loc: ['body', 'policy'],
            msg: `String should match pattern '${POLICY_NAME.source}'`,
            type: 'string_pattern_mismatch',
          },
        ];
      return `/v1/policies/${args.policy}/usage`;
    },
    request: {
      type: 'object',
      description: "The policy whose limits to read: the key's own (decision.policy.name of a guard answer under it).",
      properties: { policy: { type: 'string', pattern: POLICY_NAME.source, description: "The policy's name." } },
      required: ['policy'],
      additionalProperties: false,
    },
    response: 'PolicyUsage',
  },
];

const all = schemas as unknown as Record<string, Json>;

/** Copy of `node` with each `$ref: "Id"` pointed at `#/$defs/Id` and nested `$id`s dropped; records the ids met. */
function rewrite(node: unknown, seen: Set<string>): unknown {
  if (Array.isArray(node)) return node.map((x) => rewrite(x, seen));
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$id') continue;
    if (k === '$ref' && typeof v === 'string' && !v.startsWith('#')) {
      seen.add(v);
      out[k] = `#/$defs/${v}`;
    } else out[k] = rewrite(v, seen);
  }
  return out;
}

/** One schema of schemas/ with everything it references under `$defs`. */
export function bundledSchema(id: string): Json {
  if (!all[id]) throw new Error(`no schema ${id}`);
  const seen = new Set<string>();
  const root = rewrite(all[id], seen) as Json;
  const defs: Json = {};
  const done = new Set<string>();
  let pending = [...seen];
  while (pending.length > 0) {
    const next: string[] = [];
    for (const ref of pending) {
      if (done.has(ref)) continue;
      done.add(ref);
      if (!all[ref]) throw new Error(`${id} references a schema that does not exist: ${ref}`);
      const found = new Set<string>();
      defs[ref] = rewrite(all[ref], found);
      next.push(...found);
    }
    pending = next;
  }
  return done.size > 0 ? { ...root, $defs: defs } : root;
}

/** The tools as `tools/list` lists them. */
export function listedTools(): Tool[] {
  return MCP_TOOLS.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: (typeof t.request === 'string' ? bundledSchema(t.request) : t.request) as Tool['inputSchema'],
    outputSchema: bundledSchema(t.response) as Tool['outputSchema'],
    annotations: { title: t.title, readOnlyHint: true, openWorldHint: true },
  }));
}

/** An HTTP answer as the tool layer needs it. */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Makes the HTTP call behind a tool: POST `path` with `body` (JSON), or GET `path` when `body` is
 * undefined, the caller's credentials attached.
 */
export type CallEndpoint = (path: string, body: unknown) => Promise<HttpAnswer>;

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const toolError = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

/** "amount_usd: must be >= 0" for each entry of a 422's `detail`, the `body` prefix of `loc` left out. */
function validationText(body: unknown): string {
  const detail = (body as { detail?: unknown })?.detail;
  if (!Array.isArray(detail) || detail.length === 0) return 'Invalid arguments.';
  const lines = detail.map((d: { loc?: unknown[]; msg?: string }) => {
    const loc = Array.isArray(d.loc) ? d.loc.filter((p, i) => !(i === 0 && p === 'body')) : [];
    const field = loc.length > 0 ? loc.join('.') : '(arguments)';
    return `${field}: ${d.msg ?? 'invalid'}`;
  });
  return `Invalid arguments: ${lines.join('; ')}`;
}

/**
 * The text item of a served answer: the verdict and the summary sentence (`decision.summary` for
 * decide and guard, `summary` or `summary.message` for the agents). Yield routing has no verdict:
 * its summary alone.
 */
function verdictLine(body: Json): string {
  const decision = body.decision as Json | undefined;
  const raw = body.summary ?? decision?.summary;
  const message = (raw as Json | undefined)?.message;
  const summary = typeof raw === 'string' ? raw : typeof message === 'string' ? message : null;
  const verdict = typeof body.verdict === 'string' ? body.verdict : null;
  if (verdict !== null && summary) return `${verdict}: ${summary}`;
  return (summary || verdict) ?? 'served';
}

/** An HTTP answer as a tool result (docs/mcp.md §3, §4). */
export function toolResult(answer: HttpAnswer): CallToolResult {
  const body = parse(answer.body);
  if (answer.status === 200 && body !== null && typeof body === 'object' && !Array.isArray(body)) {
    return { structuredContent: body as Json, content: [{ type: 'text', text: verdictLine(body as Json) }] };
  }
  if (answer.status === 422) return toolError(validationText(body));
  const raw = (body as { detail?: unknown } | undefined)?.detail;
  const detail = typeof raw === 'string' ? raw : answer.body.slice(0, 500);
  const retry = answer.headers['retry-after'];
  return toolError(`HTTP ${answer.status}: ${detail}${retry ? ` (Retry-After: ${retry} s)` : ''}`);
}

/** A call the caller's side chose not to make (a payment it will not sign): its message is the tool error as it is. */
export class CallNotMade extends Error {}

/**
 * An MCP server with the six tools, each answered by `call`. Arguments go to the endpoint as
 * they are: the endpoint validates them, so a tool error names the same fields a 422 would.
 */
export function createToolServer(call: CallEndpoint, onError?: (err: unknown, tool: string) => void): Server {
  const server = new Server(
    { name: 'preflight', title: 'preflight', version: VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        'Call preflight_guard before executing an on-chain action; act only on verdict proceed. wait: retry later; block: do not act.',
    },
  );
  const tools = listedTools();
  const byName = new Map(MCP_TOOLS.map((t) => [t.name, t]));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = byName.get(request.params.name);
    if (!tool) return toolError(`Unknown tool ${JSON.stringify(request.params.name)}.`);
    const args = request.params.arguments ?? {};
    let answer: HttpAnswer;
    try {
      const target = tool.get ? tool.get(args) : tool.path;
      if (typeof target !== 'string') return toolError(validationText({ detail: target }));
      answer = await call(target, tool.get ? undefined : args);
    } catch (err) {
      onError?.(err, tool.name);
      if (err instanceof CallNotMade) return toolError(err.message);
      return toolError(`The service could not be reached: ${(err as Error).message}`);
    }
    return toolResult(answer);
  });
  return server;
}
