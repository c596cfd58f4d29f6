/**
 * A thread's warm-up before it takes its first real check (docs/api-reference.md, "Health and
 * readiness"): one check of each kind a decide and a bridge-risk call run, sent to a stand-in
 * upstream on loopback inside this thread that answers every request with `{}`. By the end the
 * thread has loaded and compiled the outbound path (the dispatchers and their wrappers, undici's
 * HTTP/1 client, the body reader, JSON parsing and each check's failure path), which the first
 * real check would otherwise pay for on a caller's time. Nothing leaves the machine, no cache or
 * breaker of a real upstream is touched (breakers are per host and port), and the outcomes are
 * dropped.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config.js';
import { runTimedCheck, type ExecItem } from './timed-check.js';

const WARM_TIMEOUT_MS = 5000;

/** The checks the warm-up runs, against `base`. */
export function warmUpItems(base: string): ExecItem[] {
  const address = `0x${'00'.repeat(19)}01`;
  const checks: Array<Record<string, unknown>> = [
    { type: 'price', asset_id: 'preflight-warm-up', quote: 'usd', min_price: 1 },
    { type: 'dex_price', chain: 'base', pair_address: address, min_liquidity_usd: 1 },
    { type: 'contract_verified', chain: 'base', contract_address: address },
    { type: 'stablecoin_depeg', asset_id: 'preflight-warm-up', quote: 'usd' },
    { type: 'bridge_exploit_monitor', status_url: `${base}/api/v2/status.json`, expect_status: 200 },
  ];
  return checks.map((check, id) => ({ id, type: check.type as string, check }));
}

export async function warmUp(config: Readonly<Config>): Promise<void> {
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
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
    await Promise.all(warmUpItems(base).map((item) => runTimedCheck(item, local, WARM_TIMEOUT_MS)));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
