/**
 * An MCP client without a key pays with x402 (the official @x402/fetch client as the transport's
 * fetch) on a real local Base USDC: the tool call is paid once, at the endpoint's price, and
 * answered; the MCP answer carries the receipt; the POSTs that called no tool claim nothing.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startUsdcChain } from '../helpers/usdc.js';
import { PRICE, decodeHeader, startPaidServer, until, v2Fetch } from '../billing/x402/fixture.js';

const chain = await startUsdcChain();
t.teardown(() => chain.close());
const srv = await startPaidServer(chain);
t.teardown(() => srv.close());

const DECIDE = {
  goal: 'approve a bounded allowance',
  checks: [{ type: 'approval_amount', amount: '1000', spender: `0x${'11'.repeat(20)}` }],
};

t.test('a paid tool call over /mcp: one payment settled, payTo +0.01 USDC, the receipt on the answer', async (t) => {
  const payer = await chain.wallet(PRICE * 5n);
  const pay = v2Fetch(payer);
  const receipts: Array<string | null> = [];
  const observed = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await pay(input, init);
    if (String(init?.body).includes('"tools/call"')) receipts.push(res.headers.get('payment-response'));
    return res;
  }) as typeof fetch;
  const before = await chain.balanceOf(srv.payTo);
  const servedBefore = await srv.served();

  const client = new Client({ name: 'preflight-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { fetch: observed }));
  t.teardown(() => client.close());
  const { tools } = await client.listTools();
  t.equal(tools.length, 5);
  t.equal(await srv.served(), servedBefore, 'connecting and listing serve nothing');

  const r = (await client.callTool({ name: 'preflight_decide', arguments: DECIDE })) as CallToolResult;
  t.notOk(r.isError, JSON.stringify(r.content));
  t.match(r.structuredContent, { verdict: /^(proceed|wait|block)$/ });
  t.equal(await srv.served(), servedBefore + 1, 'one answer served');
  t.equal(receipts.length, 1);
  t.match(decodeHeader(receipts[0]), { success: true, network: 'eip155:8453', payer: payer.address });

  const counts = await until(async () => {
    const c = await srv.store.countPaymentsByState();
    return c.settled >= 1 && c.verified === 0 && c.settling === 0 ? c : undefined;
  });
  t.same(counts, { verified: 0, settling: 0, settled: 1, failed: 0 }, 'one payment claimed and settled, no other');
  t.equal(await chain.balanceOf(srv.payTo), before + PRICE, 'exactly 0.01 USDC more at payTo');
  t.equal(await chain.balanceOf(payer.address), PRICE * 4n, 'exactly 0.01 USDC less at the payer');
});
