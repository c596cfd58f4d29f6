/**
 * A paid endpoint on loopback for the x402 tests: the payment engine mounted the way the billing
 * gate mounts it (challenge without a header, handle with one, onServed after a response below
 * 500), a real SQLite ledger in a temp file, a log captured line by line, and a real USDC chain.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { Wallet, hexlify, randomBytes, type TypedDataDomain, type TypedDataField } from 'ethers';
import { createWalletClient, defineChain, http as viemHttp } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment as wrapV1 } from 'x402-fetch';
import { wrapFetchWithPayment as wrapV2, x402Client } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { loadConfig, type Config } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { openStore } from '../../../src/store/index.js';
import type { Store } from '../../../src/store/types.js';
import { createX402, type X402, type X402Deps } from '../../../src/billing/x402/index.js';
import type { UsdcChain } from '../../helpers/usdc.js';
import { EIP712_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../../src/billing/x402/constants.js';
import type { Authorization, ExactEvmPayload } from '../../../src/billing/x402/types.js';

export interface PaidServer {
  url: string;
  config: Readonly<Config>;
  x402: X402;
  store: Store;
  logs: Array<Record<string, unknown>>;
  payTo: string;
  dbFile: string;
  /** How many times the paid handler ran. */
  served(): number;
  close(): Promise<void>;
}

export const PATH = '/v1/x402/decide';
export const PRICE = 10_000n;

export interface PaidServerOptions {
  env?: Record<string, string>;
  retry?: X402Deps['retry'];
  /** Reuse a ledger (a restart); the caller then removes it. */
  dbFile?: string;
  payTo?: string;
  settlerKey?: string;
}

export async function startPaidServer(chain: UsdcChain, opts: PaidServerOptions = {}): Promise<PaidServer> {
  const dir = opts.dbFile === undefined ? mkdtempSync(join(tmpdir(), 'x402-')) : null;
  const dbFile = opts.dbFile ?? join(dir as string, 'ledger.db');
  const payTo = opts.payTo ?? Wallet.createRandom().address;
  const settlerKey = opts.settlerKey ?? (await chain.wallet(0n, 10n ** 20n)).privateKey;
  const config = loadConfig({
    X402_PAY_TO: payTo,
    X402_SETTLER_KEY: settlerKey,
    X402_RPC_URL: chain.rpcUrl,
    DATABASE_URL: `sqlite:${dbFile}`,
    LOG_LEVEL: 'info',
    ...opts.env,
  });
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line));
      cb();
    },
  });
  const logger = createLogger(config.logLevel, sink);
  const store = await openStore(config);
  const x402 = createX402({ config, store, logger, retry: { pollMs: 50, baseDelayMs: 100, maxDelayMs: 400, ...opts.retry }, receiptPollMs: 25 });
  let served = 0;
  const app = express();
  app.use(express.json());
  app.post(PATH, async (req, res) => {
    if (!x402.hasPayment(req)) return x402.challenge(req, res, 'An API key works too.');
    const r = await x402.handle(req, res);
    if (!r.ok) return;
    res.on('finish', () => {
      if (res.statusCode < 500) r.onServed();
    });
    served++;
    res.json({ verdict: 'proceed', goal: req.body?.goal ?? null });
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  x402.start();
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    x402,
    store,
    logs,
    payTo,
    dbFile,
    served: () => served,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await x402.stop();
      await store.close();
      if (dir !== null) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The official v1 client (x402-fetch) paying from `wallet`. */
export function v1Fetch(chain: UsdcChain, wallet: Wallet, inner: typeof fetch = fetch): typeof fetch {
  // Base by its chain id (the client names the network from it), served by the local chain.
  const base = defineChain({ id: 8453, name: 'Base', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [chain.rpcUrl] } } });
  const client = createWalletClient({ account: privateKeyToAccount(wallet.privateKey as `0x${string}`), chain: base, transport: viemHttp(chain.rpcUrl) });
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

export function postJson(f: typeof fetch, url: string, body: unknown = { goal: 'pay once' }, headers: Record<string, string> = {}): Promise<Response> {
  return f(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
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
export async function signPayload(wallet: Pick<Wallet, 'signTypedData'>, auth: Authorization, domain: TypedDataDomain = EIP712_DOMAIN): Promise<ExactEvmPayload> {
  const signature = await wallet.signTypedData(domain, TRANSFER_WITH_AUTHORIZATION_TYPES as unknown as Record<string, TypedDataField[]>, auth);
  return { signature, authorization: auth };
}

/** An authorization for 0.01 USDC to `to`, valid from 10 minutes ago for `seconds`. */
export function authorization(from: string, to: string, over: Partial<Authorization> = {}, seconds = 60): Authorization {
  const now = Math.floor(Date.now() / 1000);
  return { from, to, value: '10000', validAfter: String(now - 600), validBefore: String(now + seconds), nonce: hexlify(randomBytes(32)), ...over };
}

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

/** The offers of a 402, as the clients read them: v1 from the body, v2 from PAYMENT-REQUIRED. */
export async function offers(url: string): Promise<{ v1: Record<string, unknown>; v2: Record<string, unknown>; v2Required: Record<string, unknown> }> {
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
