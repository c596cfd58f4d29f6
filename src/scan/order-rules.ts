/**
 * The judgement of a signed order (docs/action-scan.md §7), as a table like the signature and
 * simulation rules (./rules.ts): each row a condition and the status and reason it gives; the
 * first row that matches gives the reason, every row that matches is listed in the signals. Fail
 * rows come before warn rows, so a warning never hides a block. Pure.
 */
import { fmtUsd } from '../format.js';
import type { Standard } from './changes.js';
import type { OrderKind } from './orders.js';
import { decide, describeAsset, exceedsDeclared, LONG_LIVED_S, type Row, type RuleMatch } from './rules.js';

/** An order's item with its value: what the signer gives, or what the order pays and to whom. */
export interface ValuedItem {
  token: string;
  standard: Standard;
  /** Atomic units, decimal string: the worst point for the signer (Dutch decay, curves). */
  amount: string;
  token_id?: string | null;
  decimals?: number;
  symbol?: string;
  /** USD, null when unknown (an NFT, an unknown token, or no node for its decimals). */
  usd: number | null;
  recipient?: string;
  /** Paid through a `receiver` field or a UniswapX output (the receiver rule judges it). */
  via_receiver?: boolean;
  /** Filled in by orderFacts: paid to the signer (or a known-safe address), or a fee. */
  to_signer?: boolean;
  fee?: boolean;
}

/** Above this share of the order's value an item paid to someone else is no fee. */
export const FEE_SHARE = 0.1;
/** What the order asks in return is "nothing" under 1 USD, or under 1 % of a priced give. */
export const NOTHING_BACK = Object.freeze({ usd: 1, share: 0.01 });
/** A give of more than this (or an NFT) can be given away. */
export const GIVE_AWAY_MIN_USD = 10;
/** What comes back against what goes: below `fail` blocks, below `warn` warns. */
export const MARKET = Object.freeze({ fail: 0.9, warn: 0.97 });

export interface OrderFactsInput {
  kind: OrderKind;
  domainChainId: bigint | null;
  chainId: number | null;
  /** Lower case. */
  signer: string;
  knownSafe: ReadonlySet<string>;
  gives: ValuedItem[];
  gets: ValuedItem[];
  amountUsd: number | null;
  validUntil: readonly bigint[];
  nowS: number;
  venueKnown: boolean;
  /** UniswapX: the Permit2 side. */
  permit: { unlimited: boolean; spender: string | null } | null;
}

export interface OrderFacts extends OrderFactsInput {
  /** USD of what the signer gives; null when any of it is unpriced. */
  givesUsd: number | null;
  /** What comes back to the signer (or a known-safe address), and its USD (0 when nothing). */
  back: ValuedItem[];
  backUsd: number | null;
  /** Paid to anyone else. */
  others: ValuedItem[];
  /** USD of everything the order pays out, whoever receives it (0 when nothing). */
  getsUsd: number | null;
  /** The order's value by its priced side: what it gives, else everything it pays out. */
  orderUsd: number | null;
}

const nft = (i: ValuedItem) => i.standard === 'erc721' || i.standard === 'erc1155';
const sum = (items: readonly ValuedItem[]): number | null =>
  items.some((i) => i.usd === null) ? null : Math.round(items.reduce((s, i) => s + (i.usd ?? 0), 0) * 1e4) / 1e4;

/** Whether an address is the signer's own: the signer, or a known-safe address (§7). */
export const ownedBy =
  (signer: string, knownSafe: ReadonlySet<string>) =>
  (a: string | undefined): boolean =>
    a !== undefined && (a === signer || knownSafe.has(a));

/** The facts with their sums; marks each paid item `to_signer` and `fee`. */
export function orderFacts(f: OrderFactsInput): OrderFacts {
  const own = ownedBy(f.signer, f.knownSafe);
  const givesUsd = sum(f.gives);
  const orderUsd = givesUsd ?? sum(f.gets);
  for (const g of f.gets) {
    g.to_signer = own(g.recipient);
    g.fee = !g.to_signer && !nft(g) && g.usd !== null && orderUsd !== null && g.usd <= orderUsd * FEE_SHARE;
  }
  const back = f.gets.filter((g) => g.to_signer);
  return {
    ...f,
    givesUsd,
    back,
    backUsd: sum(back),
    others: f.gets.filter((g) => !g.to_signer),
    getsUsd: sum(f.gets),
    orderUsd,
  };
}

const givesValue = (f: OrderFacts) => f.gives.some(nft) || f.givesUsd === null || f.givesUsd > GIVE_AWAY_MIN_USD;
/**
 * The order asks (next to) nothing in return, whoever would receive it: an order that asks a fair
 * price but pays it to someone else is named for that by the receiver and third-party rows.
 */
const asksNothing = (f: OrderFacts) =>
  f.gets.length === 0 ||
  (f.getsUsd !== null &&
    (f.getsUsd < NOTHING_BACK.usd || (f.givesUsd !== null && f.getsUsd < f.givesUsd * NOTHING_BACK.share)));
/** Seaport-style items to someone else that are no fee: an NFT, or a priced share above 10 %. */
const thirdParty = (f: OrderFacts) => f.others.filter((g) => !g.via_receiver && !g.fee && (nft(g) || g.usd !== null));
/** Receivers and UniswapX output recipients that are not the signer (fees aside). */
const foreignReceivers = (f: OrderFacts) => f.others.filter((g) => g.via_receiver && !g.fee);
/** back / gives, when both are priced and something is given. */
const ratio = (f: OrderFacts): number | null =>
  f.givesUsd !== null && f.backUsd !== null && f.givesUsd > 0 ? f.backUsd / f.givesUsd : null;
const belowMarket = (f: OrderFacts, bound: number) => {
  const r = ratio(f);
  return r !== null && r < bound;
};

/** A rule that needs a price could not be judged: never a pass on it. */
function unpriced(f: OrderFacts): boolean {
  const giveAwayOpen = givesValue(f) && f.gets.length > 0 && f.getsUsd === null;
  const thirdPartyOpen = f.others.some((g) => !g.via_receiver && !nft(g) && (g.usd === null || f.orderUsd === null));
  const marketOpen = ratio(f) === null;
  const declaredOpen = f.amountUsd !== null && f.givesUsd === null;
  return giveAwayOpen || thirdPartyOpen || marketOpen || declaredOpen;
}

export const ORDER_RULES: readonly Row<OrderFacts>[] = [
  {
    status: 'fail',
    reason: 'chain_mismatch',
    when: (f) => f.domainChainId !== null && f.chainId !== null && f.domainChainId !== BigInt(f.chainId),
  },
  {
    status: 'fail',
    reason: 'unlimited_permit',
    when: (f) => f.permit?.unlimited === true && !(f.permit.spender !== null && f.knownSafe.has(f.permit.spender)),
  },
  { status: 'fail', reason: 'order_gives_away', when: (f) => givesValue(f) && asksNothing(f) },
  { status: 'fail', reason: 'order_pays_third_party', when: (f) => thirdParty(f).length > 0 },
  { status: 'fail', reason: 'order_receiver_not_signer', when: (f) => foreignReceivers(f).length > 0 },
  { status: 'fail', reason: 'order_below_market', when: (f) => belowMarket(f, MARKET.fail) },
  {
    status: 'fail',
    reason: 'outflow_exceeds_declared',
    when: (f) => f.amountUsd !== null && f.givesUsd !== null && exceedsDeclared(f.givesUsd, f.amountUsd),
  },
  {
    status: 'warn',
    reason: 'order_below_market',
    when: (f) => belowMarket(f, MARKET.warn) && !belowMarket(f, MARKET.fail),
  },
  { status: 'warn', reason: 'unknown_order_venue', when: (f) => !f.venueKnown },
  {
    status: 'warn',
    reason: 'unlimited_permit',
    when: (f) => f.permit?.unlimited === true && f.permit.spender !== null && f.knownSafe.has(f.permit.spender),
  },
  {
    status: 'warn',
    reason: 'long_lived_order',
    when: (f) => f.validUntil.some((t) => t > BigInt(f.nowS + LONG_LIVED_S)),
  },
  { status: 'warn', reason: 'order_unpriced', when: unpriced },
];

export const matchOrderRules = (f: OrderFacts): RuleMatch => decide(ORDER_RULES, f);

const short = (a: string): string => `${a.slice(0, 6)}…${a.slice(-4)}`;
const item = (i: ValuedItem, native: string) =>
  describeAsset(
    {
      asset: i.token,
      standard: i.standard,
      amount: i.amount,
      decimals: i.decimals,
      symbol: i.symbol,
      token_id: i.token_id ?? undefined,
      usd: i.usd,
    },
    native,
  ) + (nft(i) ? ' (NFT, unpriced)' : '');

export const ORDER_NAMES: Readonly<Record<OrderKind, string>> = {
  seaport_order: 'A Seaport order',
  cow_order: 'A CoW Protocol order',
  uniswapx_dutch_order: 'A UniswapX Dutch order',
  uniswapx_exclusive_dutch_order: 'A UniswapX exclusive Dutch order',
  uniswapx_v2_dutch_order: 'A UniswapX V2 Dutch order',
  uniswapx_v3_dutch_order: 'A UniswapX V3 Dutch order',
  uniswapx_priority_order: 'A UniswapX priority order',
  oneinch_order: 'A 1inch limit order',
};

/** The sentence: what decided, then what goes, what comes back, to whom, until when. */
export function orderMessage(
  f: OrderFacts,
  v: RuleMatch,
  ctx: { native: string; until: string | null; chain: string; venue: string | null },
): string {
  const pct = (r: number | null) => (r === null ? '' : ` (${(r * 100).toFixed(1)}% of what goes)`);
  const lead: Record<string, string> = {
    chain_mismatch: `The domain names chain ${String(f.domainChainId)}, not ${ctx.chain} (${f.chainId}). `,
    unlimited_permit:
      v.status === 'fail'
        ? 'Its Permit2 side grants an unlimited amount to a spender not known to be safe. '
        : 'Its Permit2 side grants an unlimited amount to a known-safe spender. ',
    order_gives_away: `It gives away what the signer offers: it asks ${f.gets.length === 0 ? 'nothing' : fmtUsd(f.getsUsd ?? 0)} in return. `,
    order_pays_third_party: `It pays ${thirdPartyList(f, ctx.native)}, which is no fee, to someone other than the signer. `,
    order_receiver_not_signer: `Its proceeds go to ${[...new Set(foreignReceivers(f).map((g) => short(g.recipient ?? '')))].join(', ')}, not to the signer. `,
    order_below_market:
      v.status === 'fail'
        ? `What comes back is worth under 90% of what goes${pct(ratio(f))}. `
        : `What comes back is worth under 97% of what goes${pct(ratio(f))}. `,
    outflow_exceeds_declared: `It gives ${fmtUsd(f.givesUsd ?? 0)}, more than the declared ${fmtUsd(f.amountUsd ?? 0)} (tolerance 5% + $1). `,
    unknown_order_venue: `${ctx.venue ? short(ctx.venue) : 'Its venue'} is not the protocol's contract on ${ctx.chain} that we know. `,
    long_lived_order: 'It stays valid for more than 30 days. ',
    order_unpriced: 'A side has no USD value, so the rules that need a price cannot pass it. ',
  };
  const gives = f.gives.map((g) => item(g, ctx.native)).join(', ') || 'nothing';
  const gets =
    f.gets
      .map(
        (g) =>
          `${item(g, ctx.native)} to ${g.to_signer ? 'the signer' : short(g.recipient ?? '')}${g.fee ? ' (fee)' : ''}`,
      )
      .join(', ') || 'nothing';
  const until = ctx.until === null ? ' with no end' : ` until ${ctx.until}`;
  return `${v.reason ? (lead[v.reason] ?? '') : ''}${ORDER_NAMES[f.kind]} by ${short(f.signer)} gives ${gives} and pays ${gets}${until}.`;
}

function thirdPartyList(f: OrderFacts, native: string): string {
  return thirdParty(f)
    .map((g) => `${item(g, native)} to ${short(g.recipient ?? '')}`)
    .join(', ');
}
