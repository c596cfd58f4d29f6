/**
 * signature_scan (guard-only: planned when a guard request carries `typed_data`): what an EIP-712
 * message lets someone do once signed (docs/action-scan.md §4), and what a signed order gives,
 * gets and to whom (§7, ./signature_order.ts). The message is read by the shape
 * of its types (src/scan/typed-data.ts), valued in USD (the price provider's token prices; the
 * tokens' decimals from the chain's node when one is known) and judged by src/scan/rules.ts.
 */
import { fmtUsd } from '../format.js';
import {
  matchSignatureRules,
  type SignatureFacts,
  type SignatureGrant,
  describeAsset,
  signatureUsd,
} from '../scan/rules.js';
import { isUnlimited } from '../scan/changes.js';
import { isoTime, readTypedData } from '../scan/typed-data.js';
import { priceAssets, tokenMeta, usdValue } from '../scan/value.js';
import { rpcSource } from '../net/rpc.js';
import { readOrder } from '../scan/orders.js';
import { neverThrow } from './outcome.js';
import { scanOrder } from './signature_order.js';
import { isOperatorUrl } from './trust.js';
import type { CheckModule, CheckOutcome, SignatureScanCheck } from './types.js';

/** Prices move; the message does not: kept as long as a price is. */
export const SIGNATURE_TTL_S = 30;

const KIND_NAMES: Readonly<Record<string, string>> = {
  eip2612_permit: 'An EIP-2612 permit',
  dai_permit: 'A DAI-style permit',
  permit2_single: 'A Permit2 allowance',
  permit2_batch: 'A Permit2 batch allowance',
  permit2_transfer: 'A Permit2 signature transfer',
  permit2_batch_transfer: 'A Permit2 batch signature transfer',
  eip3009_transfer: 'An EIP-3009 transfer authorization',
  eip3009_receive: 'An EIP-3009 receive authorization',
};

const short = (a: string | null): string => (a ? `${a.slice(0, 6)}…${a.slice(-4)}` : 'nobody');

/** From the read message, its USD values and the clock to the result (pure). */
export function evaluateSignature(
  check: SignatureScanCheck,
  read: ReturnType<typeof readTypedData>,
  grants: SignatureGrant[],
  meta: Record<string, { decimals: number | null; symbol: string | null }>,
  nowS: number,
  source: string | null,
): CheckOutcome {
  const facts: SignatureFacts = {
    kind: read.kind,
    domainChainId: read.domainChainId,
    chainId: check.chain_id,
    spender: read.spender,
    knownSafe: new Set(check.known_safe_addresses.map((a) => a.toLowerCase())),
    grants,
    amountUsd: check.amount_usd,
    validUntil: read.validUntil,
    nowS,
  };
  const v = matchSignatureRules(facts);
  let until: bigint | null = null;
  for (const t of read.validUntil) if (until === null || t > until) until = t;
  const usd = signatureUsd(grants);
  const observed = {
    kind: read.kind,
    primary_type: check.typed_data.primaryType,
    tokens: grants.map((g) => g.token),
    spender: read.spender,
    owner: read.owner,
    amounts: grants.map((g) => g.amount),
    unlimited: grants.map((g) => g.unlimited),
    usd,
    grants_usd: grants.map((g) => g.usd),
    valid_until: until === null ? null : isoTime(until),
    domain_chain_id: read.domainChainId === null ? null : Number(read.domainChainId),
    ...(read.permit2Domain === null ? {} : { permit2_domain: read.permit2Domain }),
    signals: v.signals.map((s) => s.reason),
  };
  const expected = {
    chain_id: check.chain_id,
    amount_usd: check.amount_usd,
    max_usd_out: check.amount_usd === null ? null : Math.round((check.amount_usd * 1.05 + 1) * 1e4) / 1e4,
    max_valid_days: 30,
    known_safe_addresses: check.known_safe_addresses,
  };
  const what = grants
    .map((g) =>
      g.unlimited
        ? `an unlimited amount of ${meta[g.token]?.symbol ?? short(g.token)}`
        : describeAsset({
            asset: g.token,
            standard: 'erc20',
            amount: g.amount,
            decimals: meta[g.token]?.decimals ?? undefined,
            symbol: meta[g.token]?.symbol ?? undefined,
            usd: g.usd,
          }),
    )
    .join(', ');
  const when = until === null ? '' : isoTime(until) ? ` until ${isoTime(until)}` : ' with no end';
  const summary = read.kind
    ? `${KIND_NAMES[read.kind]} lets ${short(read.spender)} move ${what || 'nothing'}${when}${usd === null ? '' : ` (${fmtUsd(usd)})`}.`
    : `primaryType ${check.typed_data.primaryType} is none of the permits and authorizations we read; what it allows is unknown.`;
  const lead: Record<string, string> = {
    chain_mismatch: `The domain names chain ${String(read.domainChainId)}, not ${check.chain} (${check.chain_id}). `,
    unlimited_permit:
      v.status === 'fail'
        ? 'It grants an unlimited amount to a spender not known to be safe. '
        : 'It grants an unlimited amount to a known-safe spender. ',
    outflow_exceeds_declared: `It allows ${fmtUsd(usd ?? 0)}, more than the declared ${fmtUsd(check.amount_usd ?? 0)} (tolerance 5% + $1). `,
    outflow_unpriced: 'Part of it has no known USD value, so it cannot be held to the declared amount. ',
    long_lived_permit: 'It stays valid for more than 30 days. ',
  };
  return {
    status: v.status,
    reason: v.reason,
    message: `${v.reason ? (lead[v.reason] ?? '') : ''}${summary}`,
    observed,
    expected,
    source,
    ttl_s: SIGNATURE_TTL_S,
  };
}

export const signatureScan: CheckModule<SignatureScanCheck> = {
  type: 'signature_scan',
  upstream: ['price_provider', 'rpc'],
  run: neverThrow(async (check, ctx) => {
    // A signed order is judged by what it gives and gets (§7); everything else as a permit (§4).
    const order = readOrder(check.typed_data, check.signer ?? null, check.chain_id);
    if (order) return scanOrder(check, order, ctx);
    const read = readTypedData(check.typed_data);
    const tokens = [...new Set(read.grants.map((g) => g.token).filter((t) => t !== ''))];
    const url = check.rpc_url;
    const [priced, meta] = await Promise.all([
      tokens.length > 0 ? priceAssets(ctx.config, check.chain, tokens, false, ctx.signal) : null,
      tokens.length > 0 && url
        ? tokenMeta(url, check.chain, tokens, {
            signal: ctx.signal,
            safe: !isOperatorUrl(ctx.config, url),
            allowPrivate: ctx.config.allowPrivateTargets,
            source: rpcSource(url),
          })
        : Promise.resolve({} as Record<string, { decimals: number | null; symbol: string | null }>),
    ]);
    const grants: SignatureGrant[] = read.grants.map((g) => {
      const unlimited = isUnlimited(g.amount);
      return {
        token: g.token,
        amount: g.amount.toString(),
        unlimited,
        usd: unlimited ? null : usdValue(g.amount.toString(), meta[g.token]?.decimals, priced?.usd[g.token]),
      };
    });
    const source = priced?.calls ? 'price_provider' : null;
    return evaluateSignature(check, read, grants, meta, Math.floor(Date.now() / 1000), source);
  }),
};
