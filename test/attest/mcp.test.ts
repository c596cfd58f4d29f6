/**
 * Answers through the MCP tools are the endpoints' answers, so they are signed too: the official
 * MCP client calls preflight_decide and preflight_guard over streamable HTTP, and viem recovers the
 * published signer from the attestation in each tool result.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { keccak256, toBytes, verifyTypedData } from 'viem';
import { startTestApp } from '../helpers/app.js';

const app = await startTestApp();
t.teardown(() => app.close());
const signer = ((await (await fetch(`${app.url}/v1/capabilities`)).json()) as any).attestation.signer;
const client = new Client({ name: 'preflight-attest-test', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`)));
t.teardown(() => client.close());

const calls: Array<[string, Record<string, unknown>, number]> = [
  ['preflight_decide', { goal: 'bounded approval', checks: [{ type: 'approval_amount', amount: '10' }] }, 8453],
  ['preflight_guard', { action: 'transfer', chain: 'arbitrum', strict_mode: false }, 42161],
];

for (const [name, args, chainId] of calls) {
  t.test(`${name}: the tool result carries a signed answer`, async (t) => {
    const result = (await client.callTool({ name, arguments: args })) as { structuredContent?: any; isError?: boolean };
    t.notOk(result.isError, 'the tool answered');
    const body = result.structuredContent;
    const a = body.attestation;
    t.equal(a.signer, signer, 'the published signer');
    t.ok(await verifyTypedData({ address: signer, ...a.typed_data, signature: a.signature }), 'viem recovers it');
    t.equal(a.typed_data.domain.chainId, chainId);
    t.equal(a.typed_data.message.verdict, String(['proceed', 'wait', 'block'].indexOf(body.verdict)));
    t.equal(a.typed_data.message.requestHash, keccak256(toBytes(JSON.stringify(args))), 'over the arguments as sent');
  });
}
