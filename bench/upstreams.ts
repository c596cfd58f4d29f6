/**
 * The emulated upstreams the bench points the service at (test/emulators, on loopback), seeded
 * with enough distinct assets, pairs and contracts that a cold scenario can use a fresh cache key
 * on every request and still get a passing answer. Each answer waits `latencyMs`, like a real API.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startCoinGecko, type CoinGeckoEmulator } from '../test/emulators/coingecko.js';
import { startDexScreener, type DexScreenerEmulator } from '../test/emulators/dexscreener.js';
import { startSourcify, type SourcifyEmulator } from '../test/emulators/sourcify.js';
import { startJsonRpc, type JsonRpcEmulator } from '../test/emulators/jsonrpc.js';

/** Fixed identities the cached and guard scenarios use. */
export const PAIR = '0x88a43bbdf9d098eec7bceda4e2494615dfd9bb9c';
export const CONTRACT = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
/** Cold scenarios use asset `bench-<n>`, stable `benchusd-<n>`, pair `0xpair<n>`, contract `coldAddress(n)`. */
/** How many of each the emulators know; the cold load's numbers stay below this. */
export const COLD_KEYS = 60_000;
/** The one cold key the probes use, kept apart from the ranges the loads walk through. */
export const PROBE_N = COLD_KEYS - 1;
export const coldAddress = (n: number): string => `0x${'be'.padEnd(32, '0')}${String(n).padStart(8, '0')}`;
/** The token a cold simulation moves: `coldToken(n)`, priced at 1 USD with 6 decimals. */
export const coldToken = (n: number): string => `0x${'5c'.padEnd(32, '0')}${String(n).padStart(8, '0')}`;

const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const pad32 = (hex: string): string => hex.replace(/^0x/, '').toLowerCase().padStart(64, '0');

/**
 * eth_simulateV1 as a node answers it for an ERC-20 `transfer(to, amount)`: one block, one call,
 * the token's Transfer log from the sender. The token is whatever the call targets.
 */
function simulateTransfer(params: unknown[]): { result: unknown } {
  const opts = params[0] as {
    blockStateCalls: Array<{ calls: Array<{ from: string; to: string; input?: string; data?: string }> }>;
  };
  const call = opts.blockStateCalls[0].calls[0];
  const data = call.input ?? call.data ?? '0x';
  // No calldata (a delegation probe's payment or call to self): a quiet account, nothing moves.
  if (data === '0x')
    return {
      result: [{ number: '0x1235', calls: [{ status: '0x1', returnData: '0x', gasUsed: '0x5208', logs: [] }] }],
    };
  const to = `0x${data.slice(10 + 24, 10 + 64)}`;
  const amount = `0x${data.slice(10 + 64, 10 + 128)}`;
  return {
    result: [
      {
        number: '0x1235',
        calls: [
          {
            status: '0x1',
            returnData: `0x${pad32('1')}`,
            gasUsed: '0xb411',
            logs: [
              {
                address: call.to,
                topics: [TRANSFER_TOPIC, `0x${pad32(call.from)}`, `0x${pad32(to)}`],
                data: `0x${pad32(amount)}`,
              },
            ],
          },
        ],
      },
    ],
  };
}

/** decimals() and symbol() of any token: 6 and "BENCH". */
function tokenCall(params: unknown[]): { result: string } {
  const { data } = params[0] as { data: string };
  if (data === '0x313ce567') return { result: `0x${pad32('6')}` };
  const symbol = Buffer.from('BENCH').toString('hex').padEnd(64, '0');
  return { result: `0x${pad32('20')}${pad32('5')}${symbol}` };
}

/** Addresses in the bench's blocklist feed (docs/screening.md §8). */
export const BLOCKLIST_SIZE = 1_000_000;

/**
 * The million-address blocklist as a text feed, made once: deterministic addresses none of the
 * scenarios name. `/blocklist-1m.txt` is the same every fetch; `/blocklist-1m-moving.txt` changes one
 * line per fetch, so every refresh of it is a new version that replaces the list in use.
 */
async function startBlocklist(): Promise<{ url: string; close(): Promise<void> }> {
  const lines: string[] = [];
  for (let i = 0; i < BLOCKLIST_SIZE; i++)
    lines.push(`0x${createHash('sha256').update(`bl${i}`).digest('hex').slice(0, 40)}`);
  const body = Buffer.from(`${lines.join('\n')}\n`);
  let fetches = 0;
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    if (req.url === '/blocklist-1m-moving.txt') {
      res.write(`0x${(fetches++).toString(16).padStart(40, 'f')}\n`);
      res.end(body);
    } else res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface Upstreams {
  env: Record<string, string>;
  /** The blocklist feed server (startBlocklist); scenarios name it as {{BLOCKLIST}} in their env. */
  blocklistUrl: string;
  /** The configured delay of every upstream answer. */
  latencyMs: number;
  setLatency(ms: number): void;
  /** Upstream calls received since the last reset, by emulator. */
  counts(): Record<string, number>;
  reset(): void;
  close(): Promise<void>;
}

function seed(
  cg: CoinGeckoEmulator,
  dex: DexScreenerEmulator,
  src: SourcifyEmulator,
  rpc: JsonRpcEmulator,
  coldKeys: number,
): void {
  // Every quote is as fresh as the second it is asked for: a full run lasts longer than the
  // service's 600 s staleness limit, and a quote stamped at seeding would turn every later
  // cold answer into `wait`.
  cg.setPrice('ethereum', 'usd', 3120.55, 'live').setPrice('usd-coin', 'usd', 0.9999, 'live');
  // What the order scenario buys: USDC at its Base address (its decimals, like any token's here, 6).
  cg.setTokenPrice('base', CONTRACT, 1, 'live');
  dex.setPair('base', PAIR);
  src.setVerified(8453, CONTRACT);
  for (let n = 0; n < coldKeys; n++) {
    cg.setPrice(`bench-${n}`, 'usd', 100 + (n % 50), 'live');
    cg.setPrice(`benchusd-${n}`, 'usd', 1.0001, 'live');
    dex.setPair('base', `0xpair${n}`);
    src.setVerified(8453, coldAddress(n));
    cg.setTokenPrice('base', coldToken(n), 1, 'live');
  }
  rpc.setHandler('eth_simulateV1', simulateTransfer);
  rpc.setHandler('eth_call', tokenCall);
  // The chain head is read live too.
  rpc.setResult('eth_getCode', '0x6080604052');
  rpc.setHandler('eth_getBlockByNumber', () => ({
    result: {
      number: `0x${rpc.blockNumber.toString(16)}`,
      timestamp: `0x${Math.floor(Date.now() / 1000).toString(16)}`,
    },
  }));
}

export async function startUpstreams(latencyMs: number, coldKeys: number): Promise<Upstreams> {
  const [cg, dex, src, rpc] = await Promise.all([
    startCoinGecko(),
    startDexScreener(),
    startSourcify(),
    startJsonRpc(),
  ]);
  seed(cg, dex, src, rpc, coldKeys);
  const blocklist = await startBlocklist();
  const all = { price_provider: cg, dex_provider: dex, sourcify: src, rpc } as const;
  const u: Upstreams = {
    env: {
      PRICE_API_URL: cg.url,
      DEX_API_URL: dex.url,
      SOURCIFY_URL: src.url,
      RPC_URLS: `base=${rpc.url}`,
      // No test or bench reaches OFAC: the embedded sanctions snapshot only.
      SANCTIONS_LIST_URL: 'off',
    },
    blocklistUrl: blocklist.url,
    latencyMs,
    setLatency(ms) {
      u.latencyMs = ms;
      for (const em of Object.values(all)) em.fault = ms > 0 ? { delayMs: ms } : null;
    },
    counts() {
      return Object.fromEntries(Object.entries(all).map(([k, em]) => [k, em.stats.requests]));
    },
    reset() {
      for (const em of Object.values(all)) em.resetStats();
      rpc.calls = [];
    },
    async close() {
      await Promise.all([...Object.values(all).map((em) => em.close()), blocklist.close()]);
    },
  };
  u.setLatency(latencyMs);
  return u;
}
