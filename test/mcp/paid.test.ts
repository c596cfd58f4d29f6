/**
 * An MCP client without a key pays with x402 (the official @x402/fetch client as the transport's
 * fetch) on a real local Base USDC: the tool call is paid once, at the endpoint's price, and
 * answered; the MCP answer carries the receipt; the POSTs that called no tool claim nothing.
 * The stdio bin pays the same way from PREFLIGHT_PAYER_KEY: once per call, never above its cap,
 * and once only when its connection drops after the service answered.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MCP_BIN, runMcpBin } from '../helpers/spawn.js';
import { startUsdcChain } from '../helpers/usdc.js';
import { PRICE, decodeHeader, droppingRelay, startPaidServer, until, v2Fetch } from '../billing/x402/fixture.js';

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
  t.equal(tools.length, 7);
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

/** The stdio bin as a desktop agent starts it, with `env` beside PATH and PREFLIGHT_URL. */
async function stdioBin(url: string, env: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'preflight-test', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MCP_BIN],
    env: { PATH: process.env.PATH ?? '', PREFLIGHT_URL: url, ...env },
    stderr: 'pipe',
  });
  await client.connect(transport);
  return client;
}

const text = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
const allPayments = async () => {
  const c = await srv.store.countPaymentsByState();
  return c.verified + c.settling + c.settled + c.failed;
};
/** Waits until `n` payments are settled and none is still on its way. */
const settledAt = (n: number) =>
  until(async () => {
    const c = await srv.store.countPaymentsByState();
    return c.settled >= n && c.verified === 0 && c.settling === 0 ? c : undefined;
  });

t.test('the stdio bin pays a tool call from PREFLIGHT_PAYER_KEY: one payment, 0.01 USDC, no API key', async (t) => {
  const payer = await chain.wallet(PRICE * 3n);
  const before = await chain.balanceOf(srv.payTo);
  const settled = (await srv.store.countPaymentsByState()).settled;
  const served = await srv.served();
  const client = await stdioBin(srv.url, { PREFLIGHT_PAYER_KEY: payer.privateKey });
  t.teardown(() => client.close());

  const r = (await client.callTool({ name: 'preflight_decide', arguments: DECIDE })) as CallToolResult;
  t.notOk(r.isError, text(r));
  t.match(r.structuredContent, { verdict: /^(proceed|wait|block)$/, attestation: { signature: /^0x/ } });
  t.equal(await srv.served(), served + 1, 'one answer served');
  const counts = await settledAt(settled + 1);
  t.equal(counts.settled, settled + 1, 'one payment settled');
  t.equal(counts.failed, 0);
  t.equal(await chain.balanceOf(srv.payTo), before + PRICE, 'exactly 0.01 USDC more at payTo');
  t.equal(await chain.balanceOf(payer.address), PRICE * 2n, 'exactly 0.01 USDC less at the payer');
});

t.test('a challenge above PREFLIGHT_MAX_PAYMENT_USD is not paid: a tool error, nothing signed or served', async (t) => {
  const payer = await chain.wallet(PRICE * 3n);
  const payments = await allPayments();
  const served = await srv.served();
  const client = await stdioBin(srv.url, { PREFLIGHT_PAYER_KEY: payer.privateKey, PREFLIGHT_MAX_PAYMENT_USD: '0.005' });
  t.teardown(() => client.close());

  const r = (await client.callTool({ name: 'preflight_decide', arguments: DECIDE })) as CallToolResult;
  t.equal(r.isError, true);
  t.match(
    text(r),
    /^Not paid: the service asks more per call than PREFLIGHT_MAX_PAYMENT_USD allows \(\$0\.005\)/,
    text(r),
  );
  t.equal(await srv.served(), served, 'nothing served');
  t.equal(await allPayments(), payments, 'no payment reached the service');
  t.equal(await chain.balanceOf(payer.address), PRICE * 3n, 'the payer keeps every cent');
});

t.test('an API key takes precedence over PREFLIGHT_PAYER_KEY: an unknown key is a 401, nothing paid', async (t) => {
  const payer = await chain.wallet(PRICE * 3n);
  const payments = await allPayments();
  const client = await stdioBin(srv.url, {
    PREFLIGHT_PAYER_KEY: payer.privateKey,
    PREFLIGHT_API_KEY: `pvk_${'A'.repeat(43)}`,
  });
  t.teardown(() => client.close());
  const r = (await client.callTool({ name: 'preflight_decide', arguments: DECIDE })) as CallToolResult;
  t.equal(r.isError, true);
  t.match(text(r), /401/, text(r));
  t.equal(await allPayments(), payments, 'no payment made');
  t.equal(await chain.balanceOf(payer.address), PRICE * 3n);
});

t.test(
  'the connection drops twice after the paid answer: the bin asks again under the same id and pays once',
  async (t) => {
    // The operator dispatcher resends once on a reset by itself (the same authorization, answered
    // from what the service kept); the second drop reaches the bin, which makes the call again: a
    // new authorization under the same payment identifier, answered the same way and never claimed.
    const relay = await droppingRelay(srv.url);
    t.teardown(() => relay.close());
    relay.drop.on = true;
    relay.drop.times = 2;
    const payer = await chain.wallet(PRICE * 3n);
    const before = await chain.balanceOf(srv.payTo);
    const payments = await allPayments();
    const settled = (await srv.store.countPaymentsByState()).settled;
    const served = await srv.served();
    const client = await stdioBin(relay.url, { PREFLIGHT_PAYER_KEY: payer.privateKey });
    t.teardown(() => client.close());

    const r = (await client.callTool({ name: 'preflight_decide', arguments: DECIDE })) as CallToolResult;
    t.notOk(r.isError, text(r));
    t.equal(relay.drop.on, false, 'two paid answers were dropped');
    t.match(r.structuredContent, { verdict: /^(proceed|wait|block)$/ });
    t.equal(await srv.served(), served + 1, 'served once: the retry got the kept answer');
    await settledAt(settled + 1);
    t.equal(await allPayments(), payments + 1, "the retry's authorization was never claimed");
    t.equal(await chain.balanceOf(srv.payTo), before + PRICE, 'exactly 0.01 USDC more at payTo');
    t.equal(await chain.balanceOf(payer.address), PRICE * 2n, 'exactly 0.01 USDC less at the payer');
  },
);

t.test('a PREFLIGHT_PAYER_KEY that is not a private key: the bin exits 2 saying why', async (t) => {
  const { code, stdout, stderr } = await runMcpBin({ PREFLIGHT_URL: srv.url, PREFLIGHT_PAYER_KEY: '0x1234' });
  t.equal(code, 2);
  t.match(stderr, /PREFLIGHT_PAYER_KEY must be a private key/);
  t.notMatch(stderr, /0x1234/, 'the value itself is not repeated');
  t.equal(stdout, '', 'nothing on the MCP channel');
});
