#!/usr/bin/env node
/**
 * `preflight-mcp`: the MCP tools over stdio for desktop agents (docs/mcp.md §2). Each tool call is
 * a POST to the service at PREFLIGHT_URL with PREFLIGHT_API_KEY as x-api-key, or, without a key
 * and with PREFLIGHT_PAYER_KEY, paid per call with x402 (payer.ts), so the answer, the quota and
 * the errors are the service's. Diagnostics go to stderr; stdout carries only MCP.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { closeDispatchers, operatorDispatcher } from '../net/dispatchers.js';
import { send } from '../net/transport.js';
import { type PayerSettings, payingPoster, readPayer } from './payer.js';
import { type CallEndpoint, CallNotMade, createToolServer } from './tools.js';

const CALL_TIMEOUT_MS = 120_000;

function endpointCaller(baseUrl: string, apiKey: string | undefined, payer: PayerSettings | null): CallEndpoint {
  const base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (apiKey) headers['x-api-key'] = apiKey;
  const target = (path: string) => new URL(path.replace(/^\//, ''), base);
  // A key takes precedence: the call is counted against it and nothing is paid.
  if (!apiKey && payer !== null) {
    const post = payingPoster(payer, headers, CALL_TIMEOUT_MS);
    return async (path, body) => {
      // The usage is a GET for a key only: x402 cannot pay for it.
      if (body === undefined) throw new CallNotMade('preflight_usage needs PREFLIGHT_API_KEY: x402 cannot pay for it.');
      try {
        return await post(target(path), JSON.stringify(body));
      } catch (err) {
        if (err instanceof CallNotMade) throw err;
        throw new Error(`${base.origin}: ${(err as Error).message}`);
      }
    };
  }
  return async (path, body) => {
    const out = await send(operatorDispatcher(), target(path), {
      method: body === undefined ? 'GET' : 'POST',
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    if (!out.ok) throw new Error(`${base.origin}: ${out.message}`);
    return out.res;
  };
}

async function main(): Promise<void> {
  const url = process.env.PREFLIGHT_URL;
  if (!url || !URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    process.stderr.write('preflight-mcp: set PREFLIGHT_URL to the service, e.g. https://preflight.example.com\n');
    process.exit(2);
  }
  const apiKey = process.env.PREFLIGHT_API_KEY?.trim() || undefined;
  const payer = readPayer(process.env);
  if ('error' in payer) {
    process.stderr.write(`preflight-mcp: ${payer.error}\n`);
    process.exit(2);
  }
  const server = createToolServer(endpointCaller(url, apiKey, payer.payer), (err, tool) =>
    process.stderr.write(`preflight-mcp: ${tool}: ${(err as Error).message}\n`),
  );
  const transport = new StdioServerTransport();
  transport.onclose = () => {
    void closeDispatchers();
  };
  await server.connect(transport);
}

await main();
