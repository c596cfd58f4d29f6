/**
 * A cached decide answer as the service sends it for the bench's CACHED_DECIDE body (four checks
 * passed, signed), captured once from the service (its attestation since re-signed, by a key of
 * its own, in the domain version 2 shape with `policyHash`): the yardsticks (bench/floor.ts,
 * bench/reference.ts) send these bytes and these headers, so they put the same size and shape on
 * the wire as the service's answer and the ratio compares the work, not the length of the answer.
 */
const answer = {
  verdict: 'proceed',
  confidence: 1,
  risk: 'low',
  expires_in: 30,
  decision: {
    verdict: 'proceed',
    summary: 'Proceed: of 4 checks, 4 passed, 0 warned, 0 failed, 0 could not be evaluated.',
    counts: { pass: 4, warn: 0, fail: 0, error: 0, skipped: 0 },
    request_id: '1ca7cad4-c3a5-4634-8da9-b201b4d52cb2',
    evaluated_at: '2026-11-25T08:55:03.222Z',
    deadline_ms: 250,
    goal: 'Swap 1 ETH for USDC on Base if the market is sane',
  },
  evidence: [
    {
      name: 'price',
      type: 'price',
      status: 'pass',
      reason: null,
      message: 'ethereum/usd at 3120.55 is within bounds (>= 1000 and <= 10000), updated 7 s ago.',
      observed: { price: 3120.55, quote: 'usd', last_updated_at: 1795596896, age_s: 7 },
      expected: { min_price: 1000, max_price: 10000, max_age_s: 600 },
      source: 'price_provider',
      latency_ms: 74,
      cached: true,
      age_s: 0,
      ttl_s: 30,
    },
    {
      name: 'dex_price',
      type: 'dex_price',
      status: 'pass',
      reason: null,
      message: 'WETH/USDC at $3120.55 with $12,500,000 liquidity is within 1 bound(s).',
      observed: {
        price_usd: 3120.55,
        liquidity_usd: 12500000,
        volume_h24_usd: 4200000,
        pair: 'WETH/USDC',
        url: 'https://dexscreener.com/base/0x88a43bbdf9d098eec7bceda4e2494615dfd9bb9c',
      },
      expected: { min_price_usd: null, max_price_usd: null, min_liquidity_usd: 100000, min_volume_h24_usd: null },
      source: 'dex_provider',
      latency_ms: 174,
      cached: true,
      age_s: 0,
      ttl_s: 30,
    },
    {
      name: 'contract_verified',
      type: 'contract_verified',
      status: 'pass',
      reason: null,
      message: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913 on base (8453) is verified on Sourcify (exact_match).',
      observed: { chain_id: 8453, has_code: true, sourcify: 'exact_match' },
      expected: { verified: true },
      source: 'sourcify',
      latency_ms: 228,
      cached: true,
      age_s: 0,
      ttl_s: 3600,
    },
    {
      name: 'stablecoin_depeg',
      type: 'stablecoin_depeg',
      status: 'pass',
      reason: null,
      message: 'usd-coin at 0.9999 usd is 0.01% off peg; warn limit 0.5%.',
      observed: { price: 0.9999, deviation_pct: 0.0001, quote: 'usd', last_updated_at: 1795596896 },
      expected: { peg: 1, warn_deviation_pct: 0.005, block_deviation_pct: 0.02 },
      source: 'price_provider',
      latency_ms: 280,
      cached: true,
      age_s: 0,
      ttl_s: 30,
    },
  ],
  failure_modes: [],
  attestation: {
    signer: '0x288810ab32C0915a06049F96aBa57355Da8e1Ad9',
    signature:
      '0x6d69e05783a8c3a4be3d2158ef3fcca7747680779c35a163c891acbf595271f47de8b53f9acc5caf645432086574a304f8f530c5584164a221e6987c344efaf51b',
    typed_data: {
      domain: { name: 'Preflight', version: '2', chainId: 8453 },
      types: {
        Verdict: [
          { name: 'id', type: 'bytes32' },
          { name: 'verdict', type: 'uint8' },
          { name: 'risk', type: 'uint8' },
          { name: 'confidenceBps', type: 'uint16' },
          { name: 'requestHash', type: 'bytes32' },
          { name: 'actionHash', type: 'bytes32' },
          { name: 'policyHash', type: 'bytes32' },
          { name: 'issuedAt', type: 'uint64' },
          { name: 'expiresAt', type: 'uint64' },
        ],
      },
      primaryType: 'Verdict',
      message: {
        id: '0xc1cc324c4179dc2f507fad3a6582b551560dce294fa8885eab13a3ea97bede19',
        verdict: '0',
        risk: '0',
        confidenceBps: '10000',
        requestHash: '0xe81304a7d17a0c9d6c4160bff7bed4ccaaaa5c8417fdb6e92e024d6354d1a26b',
        actionHash: '0x0000000000000000000000000000000000000000000000000000000000000000',
        policyHash: '0x0000000000000000000000000000000000000000000000000000000000000000',
        issuedAt: '1795596903',
        expiresAt: '1795596933',
      },
    },
  },
};

export const CACHED_ANSWER = Buffer.from(JSON.stringify(answer));

/** The headers the service sends with it, besides content-type and content-length. */
export const CACHED_ANSWER_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'ratelimit-limit': '1000000000',
  'ratelimit-remaining': '999999998',
  'ratelimit-reset': '486298',
  'x-request-id': '1ca7cad4-c3a5-4634-8da9-b201b4d52cb2',
});
