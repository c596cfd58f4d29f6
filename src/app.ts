/**
 * buildApp(deps): routes and middleware. It never listens: the server, the tests and the
 * bench bind it themselves. Every route is a row of the endpoint table (src/http/endpoints.ts,
 * docs/endpoints.md), mounted with the handler the row names. Every POST goes: JSON body →
 * schema validation (422) → billing (401/402/429) → handler, so a bad body never costs quota or
 * claims a payment; POST /mcp reads JSON and bills per tool call inside (docs/mcp.md).
 */
import type http from 'node:http';
import express, { type Express, type RequestHandler } from 'express';
import { randomUUID } from 'node:crypto';
import type { Config } from './config.js';
import { accessLog, type Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { Engine } from './engine/runner.js';
import { MAX_REQUEST_BODY_BYTES } from './pricing.js';
import { errorHandler, methodNotAllowed, notFound } from './http/errors.js';
import { validateBody } from './http/validation.js';
import { postRouter, jsonBody } from './http/post-router.js';
import type { ApiErrorHandler, ApiHandler, ApiRequest } from './http/api.js';
import {
  GET_ENDPOINTS,
  MANAGEMENT_ENDPOINTS,
  type ManagementHandlerKey,
  expressPath,
  type GetHandlerKey,
  type HandlerKey,
  POST_ENDPOINTS,
  type SchemaPostEndpoint,
} from './http/endpoints.js';
import { metaHandlers } from './http/routes/meta.js';
import { docsHandlers } from './http/routes/docs.js';
import { consoleHandlers } from './http/routes/console.js';
import { decideHandler } from './http/routes/decide.js';
import { checkOrigin } from './http/origin.js';
import type { Attester } from './attest/index.js';
import type { Screening } from './screening/service.js';
import type { VerdictLog } from './verdicts/log.js';
import type { KeyResolver } from './billing/keys.js';
import type { PolicyService } from './policy/service.js';
import { checkParams, managementAuth } from './billing/management.js';

/** The JSON reader with the common cap, or a row's own (PUT /v1/policies/{name}: 2 MiB). */
function jsonReader(limit: number): ApiHandler {
  return jsonBody(
    limit,
    express.json({
      limit,
      strict: false,
      type: () => true,
      // The bytes an answer's requestHash covers (docs/attestations.md §1).
      verify: (req, _res, buf) => {
        (req as ApiRequest).rawBody = buf;
      },
    }),
  );
}

/**
 * The management rows (docs/endpoints.md §1): path parameters (422), body (413, 422), the key
 * (401, 403, 503), the quota for a billed row, then the handler; every other method on a path
 * they name answers 405 with the methods it has.
 */
function mountManagement(app: Express, deps: AppDeps, json: ApiHandler, origin: ApiHandler): void {
  const m = deps.management;
  if (!m) return;
  const methods = new Map<string, Set<string>>();
  for (const e of MANAGEMENT_ENDPOINTS) {
    const handler = m.handlers[e.handler];
    if (!handler) continue;
    const path = expressPath(e.path);
    // Every management row is called by the console from a browser: a foreign Origin is a 403
    // before anything else (docs/browser.md §1).
    const chain: ApiHandler[] = [routeLabel(e.path), origin, checkParams(e)];
    if (e.request !== undefined) {
      chain.push(e.bodyLimit === undefined ? json : jsonReader(e.bodyLimit), validateBody(e.request));
    }
    chain.push(managementAuth(e, m.keys));
    if (!e.billed && m.quota) chain.push(m.quota);
    if (e.billed && deps.billing && e.request !== undefined) {
      chain.push(
        deps.billing({
          path: e.path,
          summary: e.summary,
          request: e.request,
          response: e.response ?? '',
          access: 'paid',
          handler: 'guard',
          tag: e.tag,
        }),
      );
    }
    chain.push(handler);
    const handlers = chain as RequestHandler[];
    if (e.method === 'GET') app.get(path, ...handlers);
    else if (e.method === 'POST') app.post(path, ...handlers);
    else if (e.method === 'PUT') app.put(path, ...handlers);
    else if (e.method === 'PATCH') app.patch(path, ...handlers);
    else app.delete(path, ...handlers);
    const known = methods.get(path) ?? new Set<string>();
    known.add(e.method);
    if (e.method === 'GET') known.add('HEAD');
    methods.set(path, known);
  }
  for (const [path, known] of methods) app.all(path, routeLabel(path), methodNotAllowed([...known]));
}

export interface AppDeps {
  config: Readonly<Config>;
  logger: Logger;
  metrics: Metrics;
  engine: Engine;
  /** Credentials and payment for paid endpoints; absent when billing is off. Never given POST /mcp. */
  billing?: ((endpoint: SchemaPostEndpoint) => ApiHandler) | null;
  /**
   * POST handlers that live with their own feature modules, by their key in the endpoint table
   * (`mcp`: the MCP tools over streamable HTTP, src/mcp/http.ts). `decide` is built here.
   */
  handlers?: Partial<Record<HandlerKey, ApiHandler>>;
  /** GET /metrics; the other GET handlers are built here. */
  metricsHandler?: RequestHandler;
  /** Where answers to keyed calls are logged (docs/policies.md §10). */
  verdicts?: VerdictLog | null;
  /** Signs every DecideResponse; null when signing is off (for measurement only). */
  attester?: Attester | null;
  /** The screening lists: their state in /health and /v1/capabilities (docs/screening.md). */
  screening?: Screening | null;
  /** Set while the server drains: answers carry `Connection: close`. */
  isDraining?: () => boolean;
  /** Keys bound to a policy answer under it (docs/policies.md); absent: no policies. */
  policies?: PolicyService | null;
  /**
   * The account management rows' handlers (keys, policies; docs/policies.md) and the key cache
   * they check keys with, the billing gate's own. Absent: those rows are not mounted.
   */
  management?: {
    handlers: Partial<Record<ManagementHandlerKey, ApiHandler>>;
    keys: KeyResolver;
    /** Sets the account's RateLimit-* headers on the answers that count nothing (docs/console.md §3). */
    quota?: ApiHandler;
  } | null;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function requestContext(deps: AppDeps): ApiHandler {
  const { metrics, isDraining } = deps;
  // The access line carries only the fields below, none of them secret (src/log.ts, accessLog).
  const access = accessLog(deps.logger);
  return (req, res, next) => {
    const start = process.hrtime.bigint();
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.locals.requestId = id;
    // What a signed answer's id is the hash of: unique per answer, so a caller's own request id,
    // which it may send twice, is never it (docs/attestations.md §1).
    res.locals.answerId = id === given ? randomUUID() : id;
    res.setHeader('x-request-id', id);
    if (isDraining?.()) res.setHeader('connection', 'close');
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = res.locals.route ?? 'unmatched';
      metrics.httpRequest(route, req.method ?? '', res.statusCode, seconds);
      access(id, req.method ?? '', route, res.statusCode, Math.round(seconds * 1e5) / 100, res.locals.billing?.kind);
    });
    next();
  };
}

const routeLabel =
  (path: string): ApiHandler =>
  (_req, res, next) => {
    res.locals.route = path;
    next();
  };

/** What buildApp joins: the express app and the POST router's chains, both mounted from the endpoint table. */
export interface Routes {
  app: Express;
  postChains: ReadonlyMap<string, readonly ApiHandler[]>;
  onError: ApiErrorHandler;
}

export function buildApp(deps: AppDeps): http.RequestListener {
  const { app, postChains, onError } = buildRoutes(deps);
  return postRouter(app, postChains, onError, notFound);
}

/** The routes of buildApp, before the POST router is put in front (tests walk `app.router`). */
export function buildRoutes(deps: AppDeps): Routes {
  const { config, logger } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', config.trustProxy);
  const context = requestContext(deps);
  app.use(context);
  // POSTs to the endpoints' exact paths skip the router (src/http/post-router.ts): same chains.
  const postChains = new Map<string, ApiHandler[]>();

  const json = jsonReader(MAX_REQUEST_BODY_BYTES);

  // Only rows whose handler exists are mounted; a path with none answers 404 like any unknown one.
  const shared = deps.engine.shared ?? null;
  const getHandlers: Partial<Record<GetHandlerKey, RequestHandler>> = {
    ...metaHandlers(
      config,
      deps.attester ?? null,
      shared === null ? null : () => shared.state(),
      deps.screening ?? null,
    ),
    ...docsHandlers(),
    ...consoleHandlers(),
    metrics: deps.metricsHandler,
  };
  // The GET routes sit in a router of their own, which, as an express router does, answers OPTIONS
  // on their paths itself (200, Allow: GET, HEAD); every other method falls through to the 405.
  const pages = express.Router();
  app.use(pages);
  const origin = checkOrigin(config);
  for (const g of GET_ENDPOINTS) {
    const handler = getHandlers[g.handler];
    if (!handler) continue;
    if (g.checkOrigin) pages.get(g.path, routeLabel(g.path), origin, handler);
    else pages.get(g.path, routeLabel(g.path), handler);
    // The files handler labels what it serves itself; a name it does not know falls through to 404.
    const files = g.files === undefined ? undefined : getHandlers[g.files];
    if (files) pages.get(`${g.path}/:file`, files);
    app.all(g.path, routeLabel(g.path), methodNotAllowed(['GET', 'HEAD']));
  }

  const postHandlers: Partial<Record<HandlerKey, ApiHandler>> = { ...deps.handlers, decide: decideHandler(deps) };
  for (const e of POST_ENDPOINTS) {
    const handler = postHandlers[e.handler];
    if (!handler) continue;
    const chain: ApiHandler[] = [routeLabel(e.path)];
    // A foreign browser origin is refused before the body is read (docs/browser.md §1).
    if (e.checkOrigin) chain.push(origin);
    chain.push(json);
    // per_tool (POST /mcp): no schema step (the transport answers JSON-RPC errors) and no billing
    // gate, since each tool call is a POST to the tool's own endpoint and billed there.
    if (e.access !== 'per_tool') {
      chain.push(validateBody(e.request));
      if (e.access !== 'free' && deps.billing) chain.push(deps.billing(e));
    }
    chain.push(handler);
    app.post(e.path, ...chain);
    postChains.set(e.path, [context, ...chain]);
    app.all(e.path, routeLabel(e.path), methodNotAllowed(['POST']));
  }

  mountManagement(app, deps, json, checkOrigin(config));

  const onError = errorHandler(logger);
  app.use(notFound);
  app.use(onError);
  return { app, postChains, onError };
}
