/**
 * Upstreams a test did not point at an emulator: a closed loopback port, so a check that reaches
 * one fails at once with a refused connection, and no test ever resolves a public host name.
 */
export const OFFLINE_UPSTREAMS: Readonly<Record<string, string>> = {
  PRICE_API_URL: 'http://127.0.0.1:1/api/v3',
  DEX_API_URL: 'http://127.0.0.1:1',
  SOURCIFY_URL: 'http://127.0.0.1:1/server',
  ETHERSCAN_API_URL: 'http://127.0.0.1:1/v2/api',
  // The embedded sanctions snapshot only: no test reaches OFAC.
  SANCTIONS_LIST_URL: 'off',
};
