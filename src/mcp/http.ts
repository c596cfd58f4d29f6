/**
 * `POST /mcp`: the MCP tools over streamable HTTP (docs/mcp.md §1), stateless: each POST gets a
 * fresh server and transport, no session, JSON answers.
 *
 * The door checks credentials as the paid endpoints do (an unknown key or none: 401; with payments
 * on, no key and no payment: the 402 challenge), so a client that cannot pay hears it on connect.
 * It counts nothing: each tool call is a POST to the tool's own endpoint on this same instance,
 * carrying the caller's credential and payment headers, so the endpoint's gate counts the quota
 * (one key, one count, MCP and HTTP alike) and takes any payment, and the answer is the endpoint's.
 */
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Config } from '../config.js';
import type { ApiHandler, ApiRequest, ApiResponse } from '../http/api.js';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import { operatorDispatcher } from '../net/dispatchers.js';
import { send } from '../net/transport.js';
import type { Store } from '../store/types.js';
import type { PaymentGate } from '../billing/gate.js';
import { SIGNUP_PATH } from '../billing/gate.js';
import { KeyResolver, presentedKey } from '../billing/keys.js';
import { type CallEndpoint, createToolServer } from './tools.js';

export interface McpDeps {
  config: Readonly<Config>;
  store: Store;
  logger: Logger;
  payments?: PaymentGate;
  keys?: KeyResolver;
}

/** Headers of the MCP request passed on to the tool's endpoint: credentials, payment, and where the caller is. */
const FORWARDED = [
  'x-api-key',
  'authorization',
  'payment-signature',
  'x-payment',
  'x-request-id',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'host',
] as const;

/** The POST endpoints' deadline plus a margin: the endpoint answers first, even when it times out. */
const CALL_TIMEOUT_MS = 120_000;

/** This instance's own address as the request reached it. */
function selfOrigin(req: ApiRequest): string {
  const { localAddress, localPort } = req.socket;
  const host = localAddress === undefined ? '127.0.0.1' : localAddress.replace(/^::ffff:/, '');
  return `http://${host.includes(':') ? `[${host}]` : host}:${localPort}`;
}

/** Headers of the tool's answer repeated on the MCP answer: the quota left and the x402 receipt. */
const RETURNED = [
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'payment-response',
  'x-payment-response',
] as const;

function callThrough(req: ApiRequest, res: ApiResponse): CallEndpoint {
  const origin = selfOrigin(req);
  const base: Record<string, string> = {};
  for (const name of FORWARDED) {
    const v = req.headers[name];
    if (typeof v === 'string') base[name] = v;
  }
  return async (path, body) => {
    const out = await send(operatorDispatcher(), new URL(path, origin), {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...base,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        accept: 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    if (!out.ok) throw new Error(out.message);
    // The JSON answer is written once every call of the POST is done, so these still get out.
    if (!res.headersSent)
      for (const name of RETURNED) if (out.res.headers[name]) res.setHeader(name, out.res.headers[name]);
    return out.res;
  };
}

const BEARER_REALM = 'Bearer realm="preflight"';

export function mcpHandler(deps: McpDeps): ApiHandler {
  const { config, store } = deps;
  const payments = deps.payments?.configured ? deps.payments : undefined;
  const keys = deps.keys ?? new KeyResolver(store);
  const log = deps.logger.child({ component: 'mcp' });

  /** true when the request may go on; otherwise it has been answered or an HttpError is thrown. */
  async function admitted(req: ApiRequest, res: ApiResponse): Promise<boolean> {
    if (!config.billing) return true;
    const raw = presentedKey(req);
    if (raw !== null) {
      let record: Awaited<ReturnType<typeof keys.resolve>>;
      try {
        record = await keys.resolve(raw);
      } catch (err) {
        log.error({ err }, 'key lookup failed');
        throw new HttpError(
          503,
          'The billing store is unavailable right now. Retry shortly.',
          {},
          { 'Retry-After': '5' },
        );
      }
      if (!record || record.revokedAt !== null) {
        throw new HttpError(
          401,
          `Unknown or revoked API key. Get a new one with POST ${SIGNUP_PATH}.`,
          { signup: SIGNUP_PATH },
          { 'WWW-Authenticate': `${BEARER_REALM}, error="invalid_token"` },
        );
      }
      return true;
    }
    if (payments?.hasPayment(req)) return true;
    if (payments) {
      payments.challenge(
        req,
        res,
        `An API key also works here: get a free one with POST ${SIGNUP_PATH} and send it as x-api-key.`,
      );
      return false;
    }
    throw new HttpError(
      401,
      `An API key is required: get a free one with POST ${SIGNUP_PATH}, then send it as the x-api-key header or as Authorization: Bearer <key>.`,
      { signup: SIGNUP_PATH },
      { 'WWW-Authenticate': BEARER_REALM },
    );
  }

  return async (req, res) => {
    if (!(await admitted(req, res))) return;
    const server = createToolServer(callThrough(req, res), (err, tool) => log.error({ err, tool }, 'tool call failed'));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };
}
