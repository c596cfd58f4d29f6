/**
 * A thread's warm-up before it takes its first real check (docs/api-reference.md, "Health and
 * readiness"): one check of each kind a decide and a bridge-risk call run, WARM_ROUNDS times,
 * sent to a stand-in upstream on loopback inside this thread that answers each with a passing
 * body of the provider's shape (and anything else with `{}`). By the end the thread has loaded
 * and compiled the outbound path (the dispatchers and their wrappers, undici's HTTP/1 client, the
 * body reader, JSON parsing) and each check's passing path with its number formats, which the
 * first real check would otherwise pay for on a caller's time, and the stand-in's connections are
 * closed and their ends read, so none of it is left for the first real task. No request leaves
 * the machine, no cache or breaker of a real upstream is touched (breakers are per host and port),
 * and the outcomes are dropped. The service adds the checks its guards plan (a simulation, a
 * delegation scan, a signed order's scan: src/guard/warm-up.ts), for which the stand-in answers
 * JSON-RPC as a node does. Last, the thread opens connections to the real providers
 * (src/net/ahead.ts), on which nothing is sent until a check sends its request.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import { openAhead } from '../net/dispatchers.js';
import { runTimedCheck, type ExecItem, type ExecResult } from './timed-check.js';

export const WARM_TIMEOUT_MS = 5000;

/** What a warm-up's own engine counts: nothing (the service's metrics are for real calls only). */
export const UNCOUNTED = {
  check() {},
  cacheEvent() {},
  upstream() {},
  poolTask() {},
} as unknown as Metrics;
/** Rounds of the warm-up's checks: V8 compiles a function on its first call and optimises it after several. */
export const WARM_ROUNDS = 3;
const WARM_ID = 'preflight-warm-up';

/** A passing answer of each provider's shape for the warm-up's requests; `{}` for anything else. */
export function standInBody(url: string, nowS: number): string {
  const u = new URL(url, 'http://stand-in');
  if (u.pathname.includes('/simple/')) {
    const vs = u.searchParams.get('vs_currencies') ?? 'usd';
    const ids = (u.searchParams.get('ids') ?? u.searchParams.get('contract_addresses') ?? WARM_ID).split(',');
    return JSON.stringify(Object.fromEntries(ids.map((id) => [id, { [vs]: 1, last_updated_at: nowS }])));
  }
  if (u.pathname.includes('/latest/dex/pairs/')) {
    const [chain, pair] = u.pathname.split('/').slice(-2);
    return JSON.stringify({
      pairs: [
        {
          chainId: chain,
          dexId: 'warm-up',
          url: 'http://stand-in/pair',
          pairAddress: pair,
          baseToken: { symbol: 'WARM' },
          quoteToken: { symbol: 'USD' },
          priceNative: '1',
          priceUsd: '1.0',
          txns: { h24: { buys: 100, sells: 100 } },
          volume: { h24: 1_000_000 },
          liquidity: { usd: 10_000_000 },
          fdv: 100_000_000,
          marketCap: 100_000_000,
          pairCreatedAt: (nowS - 365 * 86_400) * 1000,
        },
      ],
    });
  }
  if (u.pathname.includes('/v2/contract/')) {
    const [chainId, address] = u.pathname.split('/').slice(-2);
    return JSON.stringify({
      match: 'exact_match',
      creationMatch: 'exact_match',
      runtimeMatch: 'exact_match',
      chainId,
      address,
    });
  }
  if (u.pathname.endsWith('/status.json'))
    return JSON.stringify({
      page: { id: 'warm-up', name: 'Warm-up', updated_at: new Date(nowS * 1000).toISOString() },
      status: { indicator: 'none', description: 'All Systems Operational' },
    });
  return '{}';
}

const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const word = (hex: string): string => hex.replace(/^0x/, '').toLowerCase().padStart(64, '0');

/** The stand-in node's answer to one JSON-RPC call: a chain at block 0x1234 on which every call succeeds. */
function standInRpcResult(method: string, params: unknown[], nowS: number): unknown {
  switch (method) {
    case 'eth_chainId':
      return '0x2105';
    case 'eth_blockNumber':
      return '0x1234';
    case 'eth_getBlockByNumber':
      return { number: '0x1234', timestamp: `0x${nowS.toString(16)}` };
    case 'eth_getCode':
      return '0x6080604052';
    case 'eth_call': {
      // decimals() is 6; anything else (symbol(), say) the ABI string "WARM".
      const data = String((params[0] as { data?: string; input?: string })?.data ?? '');
      if (data.startsWith('0x313ce567')) return `0x${word('6')}`;
      return `0x${word('20')}${word('4')}${Buffer.from('WARM').toString('hex').padEnd(64, '0')}`;
    }
    case 'eth_simulateV1': {
      // Each call succeeds; an ERC-20 transfer(to, amount) logs its Transfer from the sender.
      const blocks = (params[0] as { blockStateCalls?: Array<{ calls?: Array<Record<string, string>> }> })
        ?.blockStateCalls;
      return (blocks ?? []).map((block) => ({
        number: '0x1234',
        calls: (block.calls ?? []).map((call) => {
          const data = call.input ?? call.data ?? '0x';
          if (!data.startsWith('0xa9059cbb') || data.length < 138)
            return { status: '0x1', returnData: '0x', gasUsed: '0x5208', logs: [] };
          const topics = [TRANSFER_TOPIC, `0x${word(call.from ?? '0x')}`, `0x${data.slice(10, 74)}`];
          return {
            status: '0x1',
            returnData: `0x${word('1')}`,
            gasUsed: '0xb411',
            logs: [{ address: call.to, topics, data: `0x${data.slice(74, 138)}` }],
          };
        }),
      }));
    }
    default:
      return null;
  }
}

/** The stand-in node's answer to a JSON-RPC body, one call or a batch. */
export function standInRpc(body: string, nowS: number): string {
  const answer = (c: { id?: unknown; method?: unknown; params?: unknown }) => ({
    jsonrpc: '2.0',
    id: c.id ?? null,
    result: standInRpcResult(String(c.method), Array.isArray(c.params) ? c.params : [], nowS),
  });
  try {
    const parsed = JSON.parse(body) as unknown;
    return JSON.stringify(Array.isArray(parsed) ? parsed.map(answer) : answer(parsed as object));
  } catch {
    return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
  }
}

/** The checks the warm-up runs, against `base`. */
export function warmUpItems(base: string): ExecItem[] {
  const address = `0x${'00'.repeat(19)}01`;
  const checks: Array<Record<string, unknown>> = [
    // With the defaults the request schemas fill in (schemas/checks), as real checks arrive.
    { type: 'price', source: 'price_provider', asset_id: WARM_ID, quote: 'usd', min_price: 0.5 },
    { type: 'dex_price', chain: 'base', pair_address: address, min_liquidity_usd: 1 },
    { type: 'contract_verified', chain: 'base', contract_address: address },
    {
      type: 'stablecoin_depeg',
      asset_id: WARM_ID,
      quote: 'usd',
      warn_deviation_pct: 0.005,
      block_deviation_pct: 0.02,
    },
    { type: 'bridge_exploit_monitor', status_url: `${base}/api/v2/status.json`, expect_status: 200 },
  ];
  return checks.map((check, id) => ({ id, type: check.type as string, check }));
}

/**
 * Runs `fn` with a stand-in upstream on loopback in this thread and a configuration whose providers
 * all point at it; closes the stand-in and reads its connections' ends before returning.
 */
export async function withStandIn<T>(
  config: Readonly<Config>,
  fn: (local: Readonly<Config>, base: string) => Promise<T>,
): Promise<T> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const nowS = Math.floor(Date.now() / 1000);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        req.method === 'POST'
          ? standInRpc(Buffer.concat(chunks).toString('utf8'), nowS)
          : standInBody(req.url ?? '/', nowS),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const local: Readonly<Config> = {
      ...config,
      priceApiUrl: base,
      dexApiUrl: base,
      sourcifyUrl: base,
      etherscanApiUrl: base,
      priceApiKey: null,
      etherscanApiKey: null,
      rpcUrls: { ...config.rpcUrls, base },
      allowPrivateTargets: true,
    };
    return await fn(local, base);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    // The client's side of those connections ends on a later turn: read it here, not in the first
    // real task (a pool thread waits between tasks without running its event loop).
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The longest a thread waits for its connections opened ahead before it says it is ready. */
export const AHEAD_WAIT_MS = 1000;

/**
 * The providers a check thread calls under this configuration: the price, DEX and verification
 * providers, Etherscan when there is a key for it (it is asked only then), and each configured RPC node.
 */
export function providerUrls(config: Readonly<Config>): string[] {
  const urls = [config.priceApiUrl, config.dexApiUrl, config.sourcifyUrl];
  if (config.etherscanApiKey) urls.push(config.etherscanApiUrl);
  urls.push(...Object.values(config.rpcUrls));
  return urls;
}

/**
 * A check thread's warm-up: WARM_ROUNDS rounds of the warm-up checks and of `more` (check bodies
 * the service adds, with no URL of their own: they reach the node through the configured RPC URL)
 * against the stand-in, then CONNECT_AHEAD connections opened to each provider (src/net/ahead.ts),
 * waited for up to AHEAD_WAIT_MS; a provider that does not answer does not hold the thread back.
 * Returns the last round's results, which the thread's readiness task sends back the way a real
 * task's results go (workers/check-worker.ts).
 */
export async function warmUp(
  config: Readonly<Config>,
  more: ReadonlyArray<Record<string, unknown>> = [],
): Promise<ExecResult[]> {
  let last: ExecResult[] = [];
  await withStandIn(config, async (local, base) => {
    // A planned check carries the node's URL it was planned with (or null): here, the stand-in's.
    const moreItems = more.map((check, i) => ({
      id: 100 + i,
      type: String(check.type),
      check: 'rpc_url' in check ? { ...check, rpc_url: base } : check,
    }));
    const items = [...warmUpItems(base), ...moreItems];
    for (let round = 0; round < WARM_ROUNDS; round++)
      last = await Promise.all(items.map((item) => runTimedCheck(item, local, WARM_TIMEOUT_MS)));
  });
  if (config.connectAhead > 0) await openAhead(providerUrls(config), config.connectAhead, AHEAD_WAIT_MS);
  return last;
}
