/**
 * The MCP tools through the official MCP client, over streamable HTTP (POST /mcp) and over stdio
 * (the built preflight-mcp bin), against the real service: emulated price, DEX and status-page
 * upstreams on loopback and a real local chain (anvil) as the operator's RPC. Billing on, so the
 * credentials and the quota are the real gate's.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { verifyTypedData } from 'viem';
import { schemas } from '../../src/generated/schemas.js';
import { post, startTestApp, type TestApp } from '../helpers/app.js';
import { startAnvil, type Anvil } from '../helpers/anvil.js';
import { MCP_BIN, runMcpBin } from '../helpers/spawn.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { startDexScreener, type DexScreenerEmulator } from '../emulators/dexscreener.js';
import { startStatusPage, type StatusPageEmulator } from '../emulators/statuspage.js';

const PAIR = '0x88a43bbdf9d098eec7bceda4e2494615dfd9bb9c';
const QUOTA = 6;
const EXAMPLE = { action: 'bridge', chain: 'base', amount_usd: 2500, strict_mode: true };
const TOOLS = [
  'bridge_risk',
  'preflight_decide',
  'preflight_guard',
  'preflight_screen',
  'preflight_usage',
  'stablecoin_peg',
  'yield_route',
];

let anvil: Anvil;
let cg: CoinGeckoEmulator;
let dex: DexScreenerEmulator;
let status: StatusPageEmulator;
let app: TestApp;
let signups = 0;

t.before(async () => {
  [anvil, cg, dex, status] = await Promise.all([startAnvil(), startCoinGecko(), startDexScreener(), startStatusPage()]);
  cg.setPrice('usd-coin', 'usd', 0.9998).setPrice('tether', 'usd', 1.0003);
  dex.setPair('base', PAIR, { liquidityUsd: 1_000_000 });
  app = await startTestApp({
    BILLING: 'on',
    FREE_TIER_MONTHLY_LIMIT: String(QUOTA),
    PRICE_API_URL: cg.url,
    DEX_API_URL: dex.url,
    RPC_URLS: `base=${anvil.url}`,
    BRIDGE_STATUS_URLS: `${status.url}/api/v2/status.json`,
    ALLOW_PRIVATE_TARGETS: 'true',
    REQUEST_DEADLINE_MS: '3000',
  });
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([anvil?.close(), cg?.close(), dex?.close(), status?.close()]);
});

async function newKey(): Promise<string> {
  const res = await post(`${app.url}/v1/api-keys/signup`, { email: `mcp-${++signups}@example.com` });
  if (res.status !== 200 || typeof res.body.api_key !== 'string') throw new Error(`signup: ${res.status}`);
  return res.body.api_key as string;
}

async function httpClient(key: string | null): Promise<Client> {
  const client = new Client({ name: 'preflight-test', version: '1.0.0' });
  const headers: Record<string, string> = key === null ? {} : { 'x-api-key': key };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers } }));
  return client;
}

async function stdioClient(key: string | null): Promise<Client> {
  const client = new Client({ name: 'preflight-test', version: '1.0.0' });
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', PREFLIGHT_URL: app.url };
  if (key !== null) env.PREFLIGHT_API_KEY = key;
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [MCP_BIN], env, stderr: 'pipe' }));
  return client;
}

const text = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

for (const [transport, connect] of [
  ['streamable HTTP', httpClient],
  ['stdio', stdioClient],
] as const) {
  t.test(`over ${transport}`, async (t) => {
    const key = await newKey();
    const client = await connect(key);
    t.teardown(() => client.close());

    t.test('lists the seven tools with the schemas of schemas/', async (t) => {
      const { tools } = await client.listTools();
      t.same(tools.map((x) => x.name).sort(), TOOLS);
      const guard = tools.find((x) => x.name === 'preflight_guard')!;
      t.same(
        (guard.inputSchema.properties as Record<string, { enum?: string[] }>).action.enum,
        schemas.GuardRequest.properties.action.enum,
        'the guard input is GuardRequest',
      );
      t.same(guard.outputSchema?.required, schemas.DecideResponse.required, 'the guard output is DecideResponse');
      const decide = tools.find((x) => x.name === 'preflight_decide')!;
      const defs = (decide.inputSchema as { $defs?: Record<string, unknown> }).$defs ?? {};
      t.ok(defs.Check && defs.HttpCheck, 'the checks the decide input references travel with it');
    });

    t.test('preflight_guard on the published example gives the same verdict as POST /v1/guard', async (t) => {
      const http = await post(`${app.url}/v1/guard`, EXAMPLE, { 'x-api-key': key });
      t.equal(http.status, 200);
      const r = (await client.callTool({ name: 'preflight_guard', arguments: EXAMPLE })) as CallToolResult;
      t.notOk(r.isError, text(r));
      const s = r.structuredContent as Record<string, any>;
      t.equal(s.verdict, http.body.verdict);
      t.equal(s.verdict, 'proceed');
      t.equal(s.risk, http.body.risk);
      t.same(s.checks, http.body.checks);
      t.same(s.failure_modes, http.body.failure_modes);
      t.equal(text(r), `proceed: ${s.decision.summary}`, 'the text is the verdict and the summary sentence');
      const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as any;
      const a = s.attestation;
      t.ok(
        await verifyTypedData({
          address: caps.attestation.signer,
          domain: a.typed_data.domain,
          types: a.typed_data.types,
          primaryType: a.typed_data.primaryType,
          message: a.typed_data.message,
          signature: a.signature,
        }),
        'the signed answer comes through MCP intact: viem recovers the published signer',
      );
    });

    t.test('invalid arguments are a tool error naming the field', async (t) => {
      const r = (await client.callTool({
        name: 'preflight_guard',
        arguments: { action: 'teleport', chain: 'base', amount_usd: 10 },
      })) as CallToolResult;
      t.equal(r.isError, true);
      t.match(text(r), /^Invalid arguments: action: /);
      const neg = (await client.callTool({
        name: 'preflight_guard',
        arguments: { action: 'swap', amount_usd: -1 },
      })) as CallToolResult;
      t.equal(neg.isError, true);
      t.equal(text(neg), 'Invalid arguments: amount_usd: Input should be greater than or equal to 0');
      const nested = (await client.callTool({
        name: 'preflight_decide',
        arguments: { goal: 'check a page', checks: [{ type: 'http', url: 'not a url' }] },
      })) as CallToolResult;
      t.equal(nested.isError, true);
      t.match(text(nested), /^Invalid arguments: checks\.0\.url: /, 'a field inside a list is named by its path');
      const peg = (await client.callTool({
        name: 'stablecoin_peg',
        arguments: { asset_ids: 'usd-coin' },
      })) as CallToolResult;
      t.equal(peg.isError, true);
      t.match(text(peg), /^Invalid arguments: asset_ids: /);
      const usage = (await client.callTool({
        name: 'preflight_usage',
        arguments: { policy: 'Not A Name' },
      })) as CallToolResult;
      t.equal(usage.isError, true);
      t.match(text(usage), /^Invalid arguments: policy: /);
    });

    t.test("an agent key's guard answers under its policy; preflight_usage reads its limits", async (t) => {
      const put = await fetch(`${app.url}/v1/policies/mcp-pay`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({
          default: 'allow',
          chains: ['ethereum'],
          limits: [{ id: 'daily', window: 'day', max_usd: 500 }],
        }),
      });
      t.ok(put.status === 201 || put.status === 200);
      const made = await post(
        `${app.url}/v1/keys`,
        { name: `mcp agent ${transport}`, policy: 'mcp-pay' },
        { 'x-api-key': key },
      );
      t.equal(made.status, 201);
      const agent = await connect(made.body.api_key);
      t.teardown(() => agent.close());
      const r = (await agent.callTool({ name: 'preflight_guard', arguments: EXAMPLE })) as CallToolResult;
      const s = r.structuredContent as Record<string, any>;
      t.equal(s.decision.policy.name, 'mcp-pay', 'answered under the policy');
      t.equal(s.verdict, 'block', 'base is not among its chains');
      t.equal(s.evidence.find((e: any) => e.name === 'policy').reason, 'policy_chain_not_allowed');
      const u = (await agent.callTool({ name: 'preflight_usage', arguments: { policy: 'mcp-pay' } })) as CallToolResult;
      t.notOk(u.isError, text(u));
      const limits = (u.structuredContent as any).limits;
      t.same(
        limits.map((l: any) => [l.id, l.max_usd, l.remaining_usd]),
        [['daily', 500, 500]],
      );
      const other = (await agent.callTool({
        name: 'preflight_usage',
        arguments: { policy: 'not-mine' },
      })) as CallToolResult;
      t.equal(other.isError, true);
      t.match(text(other), /^HTTP 403: /, "another policy's usage is refused");
    });
  });
}

t.test('no key: POST /mcp answers 401 and the MCP client cannot connect', async (t) => {
  const raw = await fetch(`${app.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  t.equal(raw.status, 401);
  t.match(await raw.json(), { detail: /API key is required/ });
  t.equal(raw.headers.get('www-authenticate'), 'Bearer realm="preflight"');

  const err = await httpClient(null).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof StreamableHTTPError, 'the client reports the HTTP error');
  t.equal((err as StreamableHTTPError).code, 401);

  const unknown = await httpClient(`pvk_${'A'.repeat(43)}`).then(
    () => null,
    (e: unknown) => e,
  );
  t.equal((unknown as StreamableHTTPError).code, 401, 'an unknown key too');
});

t.test('stdio without a key: the tool call carries the service’s 401', async (t) => {
  const client = await stdioClient(null);
  t.teardown(() => client.close());
  const r = (await client.callTool({ name: 'preflight_guard', arguments: EXAMPLE })) as CallToolResult;
  t.equal(r.isError, true);
  t.match(text(r), /^HTTP 401: An API key is required/);
});

t.test('one key, one quota: HTTP, MCP over HTTP and MCP over stdio count together', async (t) => {
  const key = await newKey();
  const viaHttp = await httpClient(key);
  const viaStdio = await stdioClient(key);
  t.teardown(async () => {
    await viaHttp.close();
    await viaStdio.close();
  });
  // Listing tools and connecting count nothing.
  await viaHttp.listTools();
  await viaStdio.listTools();

  const calls: Array<() => Promise<string>> = [
    async () => String((await post(`${app.url}/v1/guard`, EXAMPLE, { 'x-api-key': key })).status),
    async () => text((await viaHttp.callTool({ name: 'preflight_guard', arguments: EXAMPLE })) as CallToolResult),
    async () => text((await viaStdio.callTool({ name: 'preflight_guard', arguments: EXAMPLE })) as CallToolResult),
  ];
  const served: string[] = [];
  for (let i = 0; i < QUOTA; i++) served.push(await calls[i % 3]());
  t.same(
    served.map((s) => (s === '200' || s.startsWith('proceed:') ? 'served' : s)),
    Array(QUOTA).fill('served'),
  );

  const overHttp = await post(`${app.url}/v1/guard`, EXAMPLE, { 'x-api-key': key });
  t.equal(overHttp.status, 429, 'the HTTP call past the quota is refused');
  t.equal(overHttp.headers.get('ratelimit-remaining'), '0');
  for (const client of [viaHttp, viaStdio]) {
    const r = (await client.callTool({ name: 'preflight_guard', arguments: EXAMPLE })) as CallToolResult;
    t.equal(r.isError, true, 'the MCP call past the quota is a tool error');
    t.match(
      text(r),
      /^HTTP 429: The monthly quota of this API key .* is used up; it resets at \S+Z\..*Retry-After: \d+ s/,
    );
  }
});

t.test('Authorization: Bearer works as x-api-key does, and the MCP answer carries the quota left', async (t) => {
  const key = await newKey();
  const client = new Client({ name: 'preflight-test', version: '1.0.0' });
  const seen: Array<string | null> = [];
  const observed: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (String(init?.body).includes('"tools/call"')) seen.push(res.headers.get('ratelimit-remaining'));
    return res;
  };
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
      fetch: observed,
    }),
  );
  t.teardown(() => client.close());
  const r = (await client.callTool({ name: 'preflight_guard', arguments: EXAMPLE })) as CallToolResult;
  t.equal((r.structuredContent as { verdict: string }).verdict, 'proceed');
  t.same(seen, [String(QUOTA - 1)], 'one call counted, and the answer says so');
});

t.test('with payments on, no key and no payment: POST /mcp answers the 402 challenge', async (t) => {
  const paid = await startTestApp({
    BILLING: 'on',
    X402_PAY_TO: `0x${'22'.repeat(20)}`,
    X402_SETTLEMENT: 'facilitator',
    X402_FACILITATOR_URL: 'http://127.0.0.1:9',
  });
  t.teardown(() => paid.close());
  const r = await post(
    `${paid.url}/mcp`,
    { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    { accept: 'application/json, text/event-stream' },
  );
  t.equal(r.status, 402);
  t.ok(r.headers.get('payment-required'), 'the v2 challenge header');
  t.match(r.body, { accepts: [{ network: 'base', maxAmountRequired: '10000' }], note: /API key/ });
});

t.test('stateless: GET and DELETE /mcp are 405; the stdio bin without PREFLIGHT_URL exits 2 saying why', async (t) => {
  for (const method of ['GET', 'DELETE']) {
    const r = await fetch(`${app.url}/mcp`, { method, headers: { accept: 'text/event-stream' } });
    t.equal(r.status, 405, method);
    t.equal(r.headers.get('allow'), 'POST');
  }
  const { code, stdout, stderr } = await runMcpBin({});
  t.equal(code, 2);
  t.match(stderr, /set PREFLIGHT_URL/);
  t.equal(stdout, '', 'nothing on the MCP channel');
});

t.test(
  'the other four tools answer as their endpoints, and the client accepts each answer against outputSchema',
  async (t) => {
    const calls: Array<[string, string, Record<string, unknown>]> = [
      [
        'preflight_decide',
        '/v1/decide',
        {
          goal: 'approve a bounded allowance',
          checks: [{ type: 'approval_amount', amount: '1000', spender: `0x${'11'.repeat(20)}` }],
        },
      ],
      ['stablecoin_peg', '/v1/agents/stablecoin-intelligence/analyze', { asset_ids: ['usd-coin', 'tether'] }],
      ['bridge_risk', '/v1/agents/bridge-risk/analyze', { bridge_status_urls: [`${status.url}/api/v2/status.json`] }],
      [
        'yield_route',
        '/v1/agents/yield-routing/recommend',
        {
          options: [
            { name: 'thin-vault', apy: 40, risk_score: 10, liquidity_usd: 20_000, stablecoin_asset_id: 'tether' },
            { name: 'base-vault', chain: 'base', apy: 10, risk_score: 20, liquidity_usd: 2_000_000 },
          ],
        },
      ],
    ];
    for (const [name, path, args] of calls) {
      const key = await newKey();
      const client = await httpClient(key);
      const http = await post(`${app.url}${path}`, args, { 'x-api-key': key });
      t.equal(http.status, 200, `${path} serves`);
      // callTool validates structuredContent against the tool's outputSchema and throws when it does not fit.
      const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
      await client.close();
      t.notOk(r.isError, `${name}: ${text(r)}`);
      const s = r.structuredContent as Record<string, any>;
      t.equal(s.verdict, http.body.verdict, `${name}: the same verdict`);
      t.same(s.recommended, http.body.recommended, `${name}: the same recommendation`);
      t.same(Object.keys(s).sort(), Object.keys(http.body).sort(), `${name}: the same fields`);
      const summary = s.decision?.summary ?? s.summary?.message ?? s.summary;
      t.equal(
        text(r),
        name === 'yield_route' ? summary : `${s.verdict}: ${summary}`,
        `${name}: the verdict and the summary sentence (yield routing has no verdict)`,
      );
    }
  },
);
