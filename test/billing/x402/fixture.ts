/**
 * The x402 tests' service: the real app with billing on, paid on a real (local) Base USDC, a
 * SQLite ledger in a temp file and the log captured line by line; plus the official clients.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Wallet, hexlify, randomBytes, type TypedDataDomain, type TypedDataField } from 'ethers';
import { createWalletClient, defineChain, http as viemHttp } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment as wrapV1 } from 'x402-fetch';
import { wrapFetchWithPayment as wrapV2, x402Client } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import type { Config } from '../../../src/config.js';
import type { ComposeOptions } from '../../../src/compose.js';
import type { AppDeps } from '../../../src/app.js';
import { startTestApp } from '../../helpers/app.js';
import { pgSchemaUrl } from '../../helpers/pg.js';
import type { Store } from '../../../src/store/types.js';
import type { X402 } from '../../../src/billing/x402/index.js';
import type { UsdcChain } from '../../helpers/usdc.js';
import { EIP712_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../../src/billing/x402/constants.js';
import type { Authorization, ExactEvmPayload } from '../../../src/billing/x402/types.js';
import type { JsonRpcEmulator } from '../../emulators/jsonrpc.js';

export interface PaidServer {
  url: string;
  config: Readonly<Config>;
  x402: X402;
  store: Store;
  logs: Array<Record<string, unknown>>;
  payTo: string;
  /** How many answers the engine gave (the verdict counter): what was served. */
  served(): Promise<number>;
  close(): Promise<void>;
}

export const PATH = '/v1/x402/decide';
export const PRICE = 10_000n;

export interface PaidServerOptions {
  env?: Record<string, string>;
  retry?: RetryPolicyOverrides;
  /** A ledger file to use (kept by the caller, e.g. across a restart). */
  dbFile?: string;
  payTo?: string;
  settlerKey?: string;
  /** App dependencies to replace (e.g. a handler). */
  extra?: Partial<AppDeps>;
}
type RetryPolicyOverrides = NonNullable<ComposeOptions['x402']>['retry'];

/**
 * Two instances of the paid service on one fresh PostgreSQL schema, paying to one address: a fleet's
 * shared ledger. Null when PostgreSQL is missing (the test then failed in CI or was skipped).
 */
export async function startPaidPair(
  t: Parameters<typeof pgSchemaUrl>[0],
  chain: UsdcChain,
  schemaPrefix: string,
): Promise<{ a: PaidServer; b: PaidServer; payTo: string } | null> {
  const url = await pgSchemaUrl(t, schemaPrefix);
  if (url === null) return null;
  const env = { DATABASE_URL: url };
  const payTo = (await chain.wallet()).address;
  // Retries wait as long as in production (2 s): a payment one instance is still sending (between
  // its estimate and its broadcast) is not yet due for the other's retry (docs/x402.md §5).
  const retry = { baseDelayMs: 2000, maxDelayMs: 4000 };
  const a = await startPaidServer(chain, { env, payTo, retry });
  t.teardown(() => a.close());
  const b = await startPaidServer(chain, { env, payTo, retry });
  t.teardown(() => b.close());
  return { a, b, payTo };
}

/** The real service (src/compose.ts and buildApp) with billing on and x402 paid on the local chain. */
export async function startPaidServer(chain: UsdcChain, opts: PaidServerOptions = {}): Promise<PaidServer> {
  const payTo = opts.payTo ?? Wallet.createRandom().address;
  const settlerKey = opts.settlerKey ?? (await chain.wallet(0n, 10n ** 20n)).privateKey;
  const app = await startTestApp(
    {
      BILLING: 'on',
      X402_PAY_TO: payTo,
      X402_SETTLER_KEY: settlerKey,
      X402_RPC_URL: chain.rpcUrl,
      ...(opts.dbFile === undefined ? {} : { DATABASE_URL: `sqlite:${opts.dbFile}` }),
      ...opts.env,
    },
    opts.extra ?? {},
    { x402: { retry: { pollMs: 50, baseDelayMs: 100, maxDelayMs: 400, ...opts.retry }, receiptPollMs: 25 } },
  );
  return {
    url: app.url,
    config: app.config,
    x402: app.payments,
    store: app.store,
    logs: app.logs,
    payTo,
    async served() {
      const metric = await app.metrics.registry.getSingleMetric('preflight_verdicts_total')?.get();
      return (metric?.values ?? []).reduce((n, v) => n + v.value, 0);
    },
    close: () => app.close(),
  };
}

/** The official v1 client (x402-fetch) paying from `wallet`. */
export function v1Fetch(chain: UsdcChain, wallet: Wallet, inner: typeof fetch = fetch): typeof fetch {
  // Base by its chain id (the client names the network from it), served by the local chain.
  const base = defineChain({
    id: 8453,
    name: 'Base',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  const client = createWalletClient({
    account: privateKeyToAccount(wallet.privateKey as `0x${string}`),
    chain: base,
    transport: viemHttp(chain.rpcUrl),
  });
  return wrapV1(inner, client as never) as typeof fetch;
}

/** The official v2 client (@x402/fetch with the exact EVM scheme) paying from `wallet`. */
export function v2Fetch(wallet: Wallet, inner: typeof fetch = fetch): typeof fetch {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(wallet.privateKey as `0x${string}`) });
  return wrapV2(inner, client) as typeof fetch;
}

export function decodeHeader(value: string | null): Record<string, unknown> | null {
  return value === null ? null : (JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as Record<string, unknown>);
}

export function postJson(
  f: typeof fetch,
  url: string,
  body: unknown = { goal: 'pay once' },
  headers: Record<string, string> = {},
): Promise<Response> {
  return f(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** Waits until `fn` returns a value that is not undefined, polling every 25 ms. */
export async function until<T>(fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Signs an EIP-3009 transfer as a paying client would (the domain defaults to Base USDC's). */
export async function signPayload(
  wallet: Pick<Wallet, 'signTypedData'>,
  auth: Authorization,
  domain: TypedDataDomain = EIP712_DOMAIN,
): Promise<ExactEvmPayload> {
  const signature = await wallet.signTypedData(
    domain,
    TRANSFER_WITH_AUTHORIZATION_TYPES as unknown as Record<string, TypedDataField[]>,
    auth,
  );
  return { signature, authorization: auth };
}

/** An authorization for 0.01 USDC to `to`, valid from 10 minutes ago for `seconds`. */
export function authorization(
  from: string,
  to: string,
  over: Partial<Authorization> = {},
  seconds = 60,
): Authorization {
  const now = Math.floor(Date.now() / 1000);
  return {
    from,
    to,
    value: '10000',
    validAfter: String(now - 600),
    validBefore: String(now + seconds),
    nonce: hexlify(randomBytes(32)),
    ...over,
  };
}

/** A node for a settlement sender: fixed fees and estimates, nonce `nonce`, receipts that say mined. */
export function senderNode(node: JsonRpcEmulator, nonce: number): JsonRpcEmulator {
  return node
    .setResult('eth_estimateGas', '0x15f90')
    .setResult('eth_getBlockByNumber', { number: '0x1', baseFeePerGas: '0x3b9aca00' })
    .setResult('eth_maxPriorityFeePerGas', '0x5f5e100')
    .setResult('eth_getTransactionCount', `0x${nonce.toString(16)}`)
    .setResult('eth_getTransactionReceipt', { status: '0x1', blockNumber: '0x2' });
}

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

/** The offers of a 402, as the clients read them: v1 from the body, v2 from PAYMENT-REQUIRED. */
export async function offers(
  url: string,
): Promise<{ v1: Record<string, unknown>; v2: Record<string, unknown>; v2Required: Record<string, unknown> }> {
  const res = await postJson(fetch, url);
  const body = await res.json();
  const v2Required = decodeHeader(res.headers.get('payment-required')) as Record<string, unknown>;
  return { v1: body.accepts[0], v2: (v2Required.accepts as Array<Record<string, unknown>>)[0], v2Required };
}

/**
 * Runs an official client up to the moment it sends its payment and returns the payment header
 * it built, without delivering it: the tests replay or tamper with it.
 */
export async function captureHeader(version: 1 | 2, chain: UsdcChain, wallet: Wallet, url: string): Promise<string> {
  let captured: string | null = null;
  const inner = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    const h = req.headers.get(version === 2 ? 'payment-signature' : 'x-payment');
    if (h === null) return fetch(req);
    captured = h;
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  const client = version === 1 ? v1Fetch(chain, wallet, inner) : v2Fetch(wallet, inner);
  await postJson(client, url);
  if (captured === null) throw new Error('the client sent no payment');
  return captured;
}

/**
 * A loopback TCP relay in front of `target` that, while `drop` is on, lets a paid request reach
 * the service, reads the service's whole answer, and closes the client's connection without
 * passing any of it on: a connection dropped after the service answered. With `drop.times`, that
 * many drops turn `drop.on` off, for a client in another process that retries on its own.
 */
export async function droppingRelay(
  target: string,
): Promise<{ url: string; drop: { on: boolean; times?: number }; close(): Promise<void> }> {
  const { port: tport } = new URL(target);
  const drop: { on: boolean; times?: number } = { on: false };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(tport), '127.0.0.1');
    sockets.add(client).add(upstream);
    let paid = false;
    let dropped = false;
    client.on('data', (d) => {
      if (/payment-signature:/i.test(d.toString('latin1'))) paid = true;
      upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (paid && drop.on && !dropped) {
        dropped = true;
        if (drop.times !== undefined && --drop.times <= 0) drop.on = false;
        client.destroy();
      } else if (!dropped && !client.destroyed) client.write(d);
    });
    client.on('close', () => {
      if (!dropped) upstream.destroy();
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    drop,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
