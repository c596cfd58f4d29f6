/** The free read-only endpoints, the error catalogue, and the OpenAPI document under a real validator. */
import t from 'tap';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startTestApp, post } from '../helpers/app.js';
import { MANAGEMENT_ENDPOINTS, POST_ENDPOINTS } from '../../src/http/endpoints.js';

const app = await startTestApp({ PUBLIC_BASE_URL: 'https://api.example.com' });
t.teardown(() => app.close());

t.test('GET / names the service and links', async (t) => {
  const res = await fetch(`${app.url}/`);
  t.equal(res.status, 200);
  const body = await res.json();
  t.match(body, { name: String, version: '0.1.0', links: { health: '/health', openapi: '/openapi.json' } });
});

t.test('GET /health', async (t) => {
  const res = await fetch(`${app.url}/health`);
  t.equal(res.status, 200);
  t.match(await res.json(), { status: 'ok', version: '0.1.0', uptime_s: Number });
  t.ok(res.headers.get('x-request-id'), 'carries a request id');
});

t.test('x-request-id is taken from the caller when sane', async (t) => {
  const res = await fetch(`${app.url}/health`, { headers: { 'x-request-id': 'abc-123' } });
  t.equal(res.headers.get('x-request-id'), 'abc-123');
  const bad = await fetch(`${app.url}/health`, { headers: { 'x-request-id': 'a b\tc' } });
  t.not(bad.headers.get('x-request-id'), 'a b\tc');
});

t.test('GET /v1/agents lists the six agents as AgentInfo', async (t) => {
  const body = (await (await fetch(`${app.url}/v1/agents`)).json()) as Array<Record<string, unknown>>;
  t.equal(body.length, 6);
  t.same(body.map((a) => a.slug).sort(), [
    'bridge-risk',
    'decision-verification',
    'defi-risk',
    'execution-guard',
    'stablecoin-intelligence',
    'yield-routing',
  ]);
  for (const a of body)
    t.match(a, {
      name: String,
      slug: String,
      status: 'live',
      description: String,
      endpoints: [/^POST \/v1\/agents\//],
    });
});

t.test('GET /v1/capabilities is generated from the schemas', async (t) => {
  const body = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as any;
  t.equal(body.check_types.length, 10);
  const depeg = body.check_types.find((c: any) => c.type === 'stablecoin_depeg');
  t.match(
    depeg.fields.find((f: any) => f.name === 'warn_deviation_pct'),
    { default: 0.005, required: false },
  );
  t.match(
    depeg.fields.find((f: any) => f.name === 'asset_id'),
    { required: true },
  );
  t.equal(body.guard.actions.length, 10);
  t.match(body.pricing.per_call, { amount: '10000', network: 'base', display: '0.01 USDC on base' });
  t.match(body.limits, {
    max_body_bytes: 262144,
    max_checks_per_request: 20,
    deadline_ms: { default: 250, max: 10000 },
  });
  t.equal(body.agents.length, 6);
});

t.test('GET /openapi.json is a valid OpenAPI 3.1 document with every path', async (t) => {
  const doc = (await (await fetch(`${app.url}/openapi.json`)).json()) as any;
  t.equal(doc.openapi, '3.1.0');
  t.equal(doc.info.version, '0.1.0');
  for (const p of ['/', '/health', '/v1/capabilities', '/v1/agents', ...POST_ENDPOINTS.map((e) => e.path)])
    t.ok(doc.paths[p], `documents ${p}`);
  t.equal(
    Object.keys(doc.paths).filter((p) => doc.paths[p].post).length,
    17,
    'all seventeen POST paths, /mcp, /v1/keys, /v1/screen and the dry run among them',
  );
  for (const e of MANAGEMENT_ENDPOINTS) {
    const op = doc.paths[e.path]?.[e.method.toLowerCase()];
    t.ok(op, `documents ${e.method} ${e.path}`);
    t.same(op?.security, [{ ApiKey: [] }, { BearerKey: [] }], 'a key, never a payment');
    t.ok(op?.responses[401] && op?.responses[403] && op?.responses[503], 'with its 401, 403 and 503');
  }
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'swagger-parser validates it with zero errors');
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(ops)) {
      t.ok(typeof op.description === 'string' && op.description.length > 40, `${method} ${path} is described`);
    }
  }
  t.match(doc.paths['/v1/decide'].post.description, /block.*wait.*proceed.*attestation.*API key.*x402/s);
  t.match(doc.paths['/v1/x402/guard'].post.description, /x402 only/);
  t.match(doc.paths['/v1/api-keys/signup'].post.description, /No credentials/);
  const metrics = doc.paths['/metrics'].get;
  t.same(metrics.security, [{}, { MetricsToken: [] }], '/metrics: no credentials, or the operator token when set');
  t.ok(metrics.responses['401'], '/metrics documents its 401');
  t.same(doc.paths['/health'].get.security, [], 'the other free GETs need no credentials');
});

t.test('error catalogue', async (t) => {
  const nf = await fetch(`${app.url}/nope`);
  t.equal(nf.status, 404);
  t.same(await nf.json(), { detail: 'Not Found' });

  const wrong = await fetch(`${app.url}/v1/decide`, { method: 'GET' });
  t.equal(wrong.status, 405);
  t.same(await wrong.json(), { detail: 'Method Not Allowed' });
  t.equal(wrong.headers.get('allow'), 'POST');

  const getOnly = await fetch(`${app.url}/health`, { method: 'DELETE' });
  t.equal(getOnly.status, 405);

  const empty = await post(`${app.url}/v1/decide`, {});
  t.equal(empty.status, 422);
  t.same(empty.body, { detail: [{ loc: ['body', 'goal'], msg: 'Field required', type: 'missing' }] });

  const malformed = await post(`${app.url}/v1/decide`, '{"goal": "x",');
  t.equal(malformed.status, 422);
  t.match(malformed.body, { detail: [{ loc: ['body', Number], type: 'json_invalid', msg: /JSON/ }] });

  const noBody = await fetch(`${app.url}/v1/decide`, { method: 'POST' });
  t.equal(noBody.status, 422);
  t.match(await noBody.json(), { detail: [{ loc: ['body'], type: 'missing' }] });

  const big = await post(`${app.url}/v1/decide`, { goal: 'x'.repeat(300 * 1024) });
  t.equal(big.status, 413);
  t.match(big.body, { detail: /256 KiB/ });

  const unknown = await post(`${app.url}/v1/decide`, { goal: 'g', checks: [{ type: 'teleport' }] });
  t.equal(unknown.status, 422);
  t.match(unknown.body.detail[0], {
    loc: ['body', 'checks', 0],
    type: 'union_tag_invalid',
    msg: /http.*contract_verified/,
  });
});

t.test('a decide with no checks waits with no_checks', async (t) => {
  const res = await post(`${app.url}/v1/decide`, { goal: 'nothing to check' });
  t.equal(res.status, 200);
  t.match(res.body, {
    verdict: 'wait',
    risk: 'medium',
    confidence: 0,
    evidence: [],
    failure_modes: ['no_checks'],
    decision: { goal: 'nothing to check', retry_after_s: Number, request_id: String, evaluated_at: String },
  });
});

t.test('one access-log line per request, no secrets', async (t) => {
  const before = app.logs.length;
  await post(
    `${app.url}/v1/decide`,
    { goal: 'g' },
    { 'x-api-key': 'pvk_secret_value', authorization: 'Bearer pvk_secret_value' },
  );
  const lines = app.logs.slice(before).filter((l) => l.msg === 'request');
  t.equal(lines.length, 1);
  t.match(lines[0], { route: '/v1/decide', method: 'POST', status: 200 });
  t.notMatch(JSON.stringify(app.logs), /pvk_secret_value/);
});
