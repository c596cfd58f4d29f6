/**
 * URLs the operator configured (RPC_URLS, BRIDGE_STATUS_URLS) are the operator's and trusted
 * (docs/rules.md §7): the SSRF rules apply to URLs that only a caller supplied.
 */
import type { Config } from '../config.js';

export function isOperatorUrl(config: Pick<Config, 'rpcUrls' | 'bridgeStatusUrls'>, url: string): boolean {
  return Object.values(config.rpcUrls).includes(url) || config.bridgeStatusUrls.includes(url);
}
