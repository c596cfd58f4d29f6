/**
 * The endpoint table (src/http/endpoints.ts) is the one source of the app's routes
 * (docs/endpoints.md §1): every route express holds is a row of the table or its 405, every row
 * reaches the handler it names with its method and answers 405 with Allow to the others, a row
 * whose handler is not given is not mounted, and POST /mcp is a row of the POST loop with the JSON
 * reader but without the schema step or the billing gate.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { buildApp, buildRoutes, type AppDeps } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Engine } from '../../src/engine/runner.js';
import type { ApiHandler } from '../../src/http/api.js';
import {
  GET_ENDPOINTS,
  type HandlerKey,
  MANAGEMENT_ENDPOINTS,
  POST_ENDPOINTS,
  type SchemaPostEndpoint,
} from '../../src/http/endpoints.js';
import { sendJson } from '../../src/http/errors.js';
import type { Metrics } from '../../src/metrics.js';
import { captureLogger } from '../helpers/app.js';
import { OFFLINE_UPSTREAMS } from '../helpers/offline.js';

/** A body each request schema accepts. */
const BODIES: Record<string, unknown> = {
  ApiKeySignupRequest: { email: 'table@example.com' },
  DecideRequest: { goal: 'g', checks: [{ type: 'approval_amount', amount: '1000' }] },
  GuardRequest: { action: 'bridge', chain: 'base', amount_usd: 2500, strict_mode: true },
  StablecoinIntelligenceRequest: { asset_ids: ['usd-coin'] },
  BridgeRiskRequest: { bridge_status_urls: ['https://status.example.com/'] },
  YieldRoutingRequest: { options: [{ name: 'vault', apy: 4.2 }] },
  ScreenRequest: { addresses: ['0x1111111111111111111111111111111111111111'] },
};

/** Which gates the app asked for, and which ones a request went through. */
const asked: string[] = [];
const passed: string[] = [];
const billing = (e: SchemaPostEndpoint): ApiHandler => {
  asked.push(e.path);
  return (_req, _res, next) => {
    passed.push(e.path);
    next();
  };
};

/** Each given POST handler answers with its own key and the body it was handed. */
const stub =
  (key: HandlerKey): ApiHandler =>
  (req, res) =>
    sendJson(res, 200, { handler: key, body: req.body ?? null });
const metricsHandler: RequestHandler = (_req, res) => {
  res.type('text/plain').send('stub metrics\n');
};

function deps(all: boolean): AppDeps {
  const { logger } = captureLogger('error');
  const handlers = all
    ? Object.fromEntries(POST_ENDPOINTS.filter((e) => e.handler !== 'decide').map((e) => [e.handler, stub(e.handler)]))
    : {};
  return {
    config: loadConfig({ BILLING: 'off', POOL_THREADS: '0', ...OFFLINE_UPSTREAMS }),
    logger,
    metrics: { httpRequest() {}, verdict() {} } as unknown as Metrics,
    // decide is built in: no checks run, so its answer is judged from no results.
    engine: { shared: null, run: async () => [] } as unknown as Engine,
    handlers,
    billing: all ? billing : null,
    ...(all ? { metricsHandler } : {}),
  };
}

/** The routes as `method path` (`all` for app.all), nested routers included. */
function routesOf(deps: AppDeps): { routes: string[]; middleware: Array<{ slash: boolean }>; posts: string[] } {
  const { app, postChains } = buildRoutes(deps);
  interface Layer {
    route?: { path: string; methods: Record<string, boolean> };
    handle: { stack?: Layer[] };
    slash: boolean;
  }
  const routes: string[] = [];
  const middleware: Layer[] = [];
  const walk = (stack: Layer[]): void => {
    for (const l of stack) {
      if (l.route) {
        // app.all's route lists every method express knows.
        const methods = Object.keys(l.route.methods);
        routes.push(`${methods.length > 1 ? 'all' : methods[0]} ${l.route.path}`);
      } else if (Array.isArray(l.handle.stack)) {
        middleware.push(l);
        walk(l.handle.stack);
      } else middleware.push(l);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return { routes: routes.sort(), middleware, posts: [...postChains.keys()].sort() };
}

t.test('every route express holds is a row of the table, or the 405 of one', async (t) => {
  const { routes, middleware, posts } = routesOf(deps(true));
  const expected = [
    ...GET_ENDPOINTS.flatMap((g) => [
      `get ${g.path}`,
      `all ${g.path}`,
      ...(g.files === undefined ? [] : [`get ${g.path}/:file`]),
    ]),
    ...POST_ENDPOINTS.flatMap((e) => [`post ${e.path}`, `all ${e.path}`]),
  ].sort();
  t.same(routes, expected);
  t.ok(
    middleware.every((l) => l.slash),
    'everything else (the request context, the GET rows’ router, 404, errors) is mounted on no path of its own',
  );
  t.equal(middleware.length, 4);
  t.same(
    posts,
    POST_ENDPOINTS.map((e) => e.path).sort(),
    'the POST router has a chain for every POST row, /mcp included',
  );
  t.same(
    asked.sort(),
    POST_ENDPOINTS.filter((e) => e.access === 'paid' || e.access === 'payment_only')
      .map((e) => e.path)
      .sort(),
    'the billing gate is made for the paid and payment-only rows only: not for signup, not for /mcp',
  );
});

t.test('a row whose handler is not given is not mounted', async (t) => {
  const { routes, posts } = routesOf(deps(false));
  t.notOk(
    routes.some((r) => r.endsWith(' /mcp') || r.endsWith(' /metrics') || r.endsWith(' /v1/guard')),
    'no /mcp, /metrics or /v1/guard',
  );
  t.same(
    posts,
    POST_ENDPOINTS.filter((e) => e.handler === 'decide')
      .map((e) => e.path)
      .sort(),
    'decide is built in',
  );
});

const server = http.createServer(buildApp(deps(true)));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

async function call(
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; allow: string | null; text: string }> {
  const res = await fetch(base + path, {
    method,
    ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.status, allow: res.headers.get('allow'), text: await res.text() };
}

t.test('every GET row answers GET and HEAD with its handler, and 405 with Allow to the rest', async (t) => {
  for (const g of GET_ENDPOINTS) {
    const got = await call('GET', g.path);
    t.equal(got.status, 200, `GET ${g.path}`);
    if (g.handler === 'metrics') t.equal(got.text, 'stub metrics\n', 'the metrics handler given');
    t.equal((await call('HEAD', g.path)).status, 200, `HEAD ${g.path}`);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const denied = await call(method, g.path, method === 'POST' ? '{}' : undefined);
      t.equal(denied.status, 405, `${method} ${g.path}`);
      t.equal(denied.allow, 'GET, HEAD');
      t.same(JSON.parse(denied.text), { detail: 'Method Not Allowed' });
    }
    const options = await call('OPTIONS', g.path);
    t.same([options.status, options.allow], [200, 'GET, HEAD'], `OPTIONS ${g.path}: what express answers`);
  }
  const docs = GET_ENDPOINTS.find((g) => g.files !== undefined);
  t.ok(docs, 'a row serves files');
  t.equal((await call('GET', `${docs?.path}/swagger-ui.css`)).status, 200, 'a file it knows');
  t.equal((await call('GET', `${docs?.path}/nope.css`)).status, 404, 'a name it does not know');
  t.equal((await call('POST', `${docs?.path}/swagger-ui.css`, '{}')).status, 404, 'files answer GET only');
});

t.test('every POST row reaches the handler it names, through both doors, and 405s the rest', async (t) => {
  for (const e of POST_ENDPOINTS) {
    const body = JSON.stringify(
      e.access === 'per_tool' ? { jsonrpc: '2.0', id: 1, method: 'ping' } : BODIES[e.request],
    );
    for (const path of [e.path, `${e.path}/`]) {
      const got = await call('POST', path, body);
      t.equal(got.status, 200, `POST ${path}: ${got.text.slice(0, 200)}`);
      const answer = JSON.parse(got.text);
      if (e.handler === 'decide') t.match(answer, { verdict: String }, `${path} is decide's`);
      else t.match(answer, { handler: e.handler, body: JSON.parse(body) }, `${path} is ${e.handler}'s`);
    }
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const denied = await call(method, e.path, method === 'PUT' ? body : undefined);
      t.equal(denied.status, 405, `${method} ${e.path}`);
      t.equal(denied.allow, 'POST');
    }
  }
});

t.test('POST /mcp: the JSON reader, no schema step, no billing gate', async (t) => {
  passed.length = 0;
  const anything = await call('POST', '/mcp', '{"not":"json-rpc"}');
  t.same(JSON.parse(anything.text), { handler: 'mcp', body: { not: 'json-rpc' } }, 'any JSON reaches the handler');
  t.same(passed, [], 'through no billing gate');
  const broken = await call('POST', '/mcp', '{"jsonrpc":');
  t.equal(broken.status, 422);
  t.match(JSON.parse(broken.text), { detail: [{ type: 'json_invalid' }] }, 'a body that is not JSON is the usual 422');
  await call('POST', '/v1/guard', JSON.stringify(BODIES.GuardRequest));
  t.same(passed, ['/v1/guard'], 'while a paid row goes through its gate');
});

t.test('no path outside the table answers', async (t) => {
  for (const path of [
    '/v1',
    '/v1/',
    '/mcp/x',
    '/metrics/x',
    '/health/x',
    '/docs/a/b',
    '/v1/x402',
    '/v1/agents/bridge-risk',
  ])
    for (const method of ['GET', 'POST']) {
      const got = await call(method, path, method === 'POST' ? '{}' : undefined);
      t.equal(got.status, 404, `${method} ${path}`);
    }
});

t.test('/mcp in /v1/capabilities and /openapi.json, from its row', async (t) => {
  const caps = JSON.parse((await call('GET', '/v1/capabilities')).text);
  t.equal(caps.mcp.endpoint, 'POST /mcp');
  t.same(caps.auth.per_tool_endpoints, ['POST /mcp']);
  t.notOk(caps.auth.free_endpoints.includes('POST /mcp'), 'not listed as free');
  const paid = new Set(POST_ENDPOINTS.filter((e) => e.access === 'paid').map((e) => `POST ${e.path}`));
  // preflight_usage reads a policy's usage: a management row (a key, free; docs/policies.md §4).
  const managed = new Set(MANAGEMENT_ENDPOINTS.map((e) => `${e.method} ${e.path}`));
  for (const tool of caps.mcp.tools)
    t.ok(
      paid.has(tool.endpoint) || (tool.name === 'preflight_usage' && managed.has(tool.endpoint)),
      `${tool.name} is answered by a paid row (the usage by its management row)`,
    );
  const doc = JSON.parse((await call('GET', '/openapi.json')).text);
  const op = doc.paths['/mcp']?.post;
  t.match(op, { operationId: 'mcp', tags: ['mcp'], responses: { 200: {}, 401: {}, 402: {} } });
  t.same(
    op.requestBody.content['application/json'].schema.oneOf.map((s: { type: string }) => s.type),
    ['object', 'array'],
    'a JSON-RPC message or a batch of them',
  );
  t.same(Object.keys(doc.paths['/mcp']), ['post'], 'one operation');
});
