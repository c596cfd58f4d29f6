/**
 * The signature scan of a signed order (docs/action-scan.md §7): the order read by its shape
 * (src/scan/orders.ts), each side valued through the one price path (tokens by contract address,
 * the native coin by its id, decimals from the chain's node; NFTs unpriced), judged by the order
 * rules (src/scan/order-rules.ts).
 */
import { isUnlimited } from '../scan/changes.js';
import { matchOrderRules, orderFacts, orderMessage, ownedBy, type ValuedItem } from '../scan/order-rules.js';
import { ORDER_VENUES, type OrderItem, type ReadOrder } from '../scan/orders.js';
import { isoTime } from '../scan/typed-data.js';
import { priceAssets, type TokenMeta, tokenMeta, usdValue } from '../scan/value.js';
import { rpcSource } from '../net/rpc.js';
import { checkError } from './outcome.js';
import { NATIVE_SYMBOLS } from './transaction_simulation.js';
import { isOperatorUrl } from './trust.js';
import type { CheckContext, CheckOutcome, SignatureScanCheck } from './types.js';

/** An order's result is kept as long as a price is. */
const ORDER_TTL_S = 30;

type Meta = Record<string, TokenMeta>;
type Prices = Record<string, number | null>;

/** The worst point for the signer: the most it gives and pays to others, the least it gets back. */
function valued(
  i: OrderItem,
  side: 'gives' | 'gets',
  own: (a: string | undefined) => boolean,
  meta: Meta,
  usd: Prices,
) {
  const amount = side === 'gets' && own(i.recipient) ? i.min : i.max;
  const info = i.standard === 'native' ? { decimals: 18, symbol: null } : meta[i.token];
  const price = i.standard === 'native' ? usd.native : i.standard === 'erc20' ? usd[i.token] : null;
  const out: ValuedItem = {
    token: i.token,
    standard: i.standard,
    amount: amount.toString(),
    ...(i.token_id !== undefined ? { token_id: i.token_id } : {}),
    ...(i.standard !== 'erc721' && i.standard !== 'erc1155' && info?.decimals !== null && info?.decimals !== undefined
      ? { decimals: info.decimals }
      : {}),
    ...(info?.symbol ? { symbol: info.symbol } : {}),
    usd:
      i.standard === 'erc721' || i.standard === 'erc1155' ? null : usdValue(amount.toString(), info?.decimals, price),
    ...(i.recipient !== undefined ? { recipient: i.recipient } : {}),
    ...(i.via_receiver ? { via_receiver: true } : {}),
  };
  return out;
}

/** From the read order, its prices and decimals and the clock to the result (pure). */
export function evaluateOrder(
  check: SignatureScanCheck,
  order: ReadOrder,
  meta: Meta,
  prices: Prices,
  nowS: number,
  source: string | null,
  priceError: string | null = null,
): CheckOutcome {
  const domainChainId = order.domain_chain_id;
  const base = {
    kind: order.kind,
    primary_type: check.typed_data.primaryType,
    protocol: order.protocol,
    signer: order.signer,
    signer_source: order.signer_source,
    ...(check.signer ? { request_signer: check.signer.toLowerCase() } : {}),
  };
  if (order.signer === null)
    return checkError(
      'signer_unknown',
      `${order.kind === 'cow_order' ? 'A CoW Protocol order does not name its owner' : 'The order names no signer'} and the request gives no signer: whose assets it moves is unknown.`,
      null,
      { observed: base, expected: { signer: 'the signing address (GuardRequest.signer)' }, ttl_s: ORDER_TTL_S },
    );
  const signer = order.signer;
  const knownSafe = new Set(check.known_safe_addresses.map((a) => a.toLowerCase()));
  const own = ownedBy(signer, knownSafe);
  const f = orderFacts({
    kind: order.kind,
    domainChainId,
    chainId: check.chain_id,
    signer,
    knownSafe,
    gives: order.gives.map((i) => valued(i, 'gives', own, meta, prices)),
    gets: order.gets.map((i) => valued(i, 'gets', own, meta, prices)),
    amountUsd: check.amount_usd,
    validUntil: order.valid_until,
    nowS,
    venueKnown: order.venue_known,
    permit: order.permit ? { unlimited: isUnlimited(order.permit.amount), spender: order.permit.spender } : null,
  });
  const v = matchOrderRules(f);
  let until: bigint | null = null;
  for (const t of order.valid_until) if (until === null || t > until) until = t;
  const recipients = [...new Set(f.gets.map((g) => g.recipient).filter((r): r is string => r !== undefined))];
  const venues = ORDER_VENUES.filter(
    (x) =>
      x.protocol === order.protocol && x.chains.includes(check.chain) && (!x.kinds || x.kinds.includes(order.kind)),
  ).map((x) => x.address);
  const p = order.permit;
  const observed = {
    ...base,
    gives: f.gives,
    gets: f.gets,
    to_others: f.others,
    recipients,
    third_parties: recipients.filter((r) => r !== signer),
    gives_usd: f.givesUsd,
    back_usd: f.backUsd,
    order_usd: f.orderUsd,
    venue: order.venue,
    venue_known: order.venue_known,
    valid_until: until === null ? null : isoTime(until),
    domain_chain_id: domainChainId === null ? null : Number(domainChainId),
    // UniswapX: its Permit2 side, as §4 reports a signature transfer.
    ...(p
      ? {
          tokens: [p.token],
          spender: p.spender,
          amounts: [p.amount.toString()],
          unlimited: [isUnlimited(p.amount)],
          permit2_domain: p.permit2_domain,
        }
      : {}),
    signals: v.signals.map((s) => s.reason),
    ...(priceError ? { price_error: priceError } : {}),
  };
  const expected = {
    chain_id: check.chain_id,
    amount_usd: check.amount_usd,
    max_usd_out: check.amount_usd === null ? null : Math.round((check.amount_usd * 1.05 + 1) * 1e4) / 1e4,
    max_valid_days: 30,
    min_back_share: 0.9,
    venues,
    known_safe_addresses: check.known_safe_addresses,
  };
  return {
    status: v.status,
    reason: v.reason,
    message: orderMessage(f, v, {
      native: NATIVE_SYMBOLS[check.chain] ?? 'ETH',
      until: until === null ? null : isoTime(until),
      chain: check.chain,
      venue: order.venue,
    }),
    observed,
    expected,
    source,
    ttl_s: ORDER_TTL_S,
  };
}

/** Prices and decimals of the order's fungible items, asked side by side, then the judgement. */
export async function scanOrder(check: SignatureScanCheck, order: ReadOrder, ctx: CheckContext): Promise<CheckOutcome> {
  const items = [...order.gives, ...order.gets];
  const tokens = [...new Set(items.filter((i) => i.standard === 'erc20').map((i) => i.token))];
  const native = items.some((i) => i.standard === 'native');
  const url = check.rpc_url;
  const pricing = order.signer !== null && (tokens.length > 0 || native);
  const [priced, meta] = await Promise.all([
    pricing ? priceAssets(ctx.config, check.chain, tokens, native, ctx.signal) : null,
    pricing && tokens.length > 0 && url
      ? tokenMeta(url, check.chain, tokens, {
          signal: ctx.signal,
          safe: !isOperatorUrl(ctx.config, url),
          allowPrivate: ctx.config.allowPrivateTargets,
          source: rpcSource(url),
        })
      : Promise.resolve({} as Meta),
  ]);
  const source = priced?.calls ? 'price_provider' : null;
  return evaluateOrder(
    check,
    order,
    meta,
    priced?.usd ?? {},
    Math.floor(Date.now() / 1000),
    source,
    priced?.error ?? null,
  );
}
