/**
 * The order rule table (docs/action-scan.md §7), pure: each row at its bounds (10 USD, 1 USD,
 * 1 %, the 10 % fee share, 90 % and 97 % of market, the declared amount's tolerance, 30 days),
 * fail rows before warn rows, and an unpriced side never passing a rule that needs a price.
 */
import t from 'tap';
import { matchOrderRules, orderFacts, type OrderFactsInput, type ValuedItem } from '../../src/scan/order-rules.js';

const ME = '0x00000000000000000000000000000000000a11ce';
const OTHER = '0x000000000000000000000000000000000000dead';
const NOW = 1_800_000_000;

const usd = (v: number | null, recipient?: string, via_receiver = false): ValuedItem => ({
  token: '0x00000000000000000000000000000000000000aa',
  standard: 'erc20',
  amount: '1',
  usd: v,
  ...(recipient ? { recipient } : {}),
  ...(via_receiver ? { via_receiver } : {}),
});
const nftItem = (recipient?: string): ValuedItem => ({
  token: '0x00000000000000000000000000000000000000bb',
  standard: 'erc721',
  amount: '1',
  token_id: '7',
  usd: null,
  ...(recipient ? { recipient } : {}),
});

const facts = (over: Partial<OrderFactsInput>): OrderFactsInput => ({
  kind: 'seaport_order',
  domainChainId: 8453n,
  chainId: 8453,
  signer: ME,
  knownSafe: new Set(),
  gives: [usd(100)],
  gets: [usd(100, ME)],
  amountUsd: null,
  validUntil: [BigInt(NOW + 3600)],
  nowS: NOW,
  venueKnown: true,
  permit: null,
  ...over,
});

const cases: Array<[string, Partial<OrderFactsInput>, string, string | null]> = [
  ['a fair swap passes', {}, 'pass', null],
  ['an NFT for nothing at all', { gives: [nftItem()], gets: [] }, 'fail', 'order_gives_away'],
  ['an NFT for 0.99 USD', { gives: [nftItem()], gets: [usd(0.99, ME)] }, 'fail', 'order_gives_away'],
  [
    'an NFT for 1 USD is not given away (the unpriced NFT warns)',
    { gives: [nftItem()], gets: [usd(1, ME)] },
    'warn',
    'order_unpriced',
  ],
  ['1,000 USD for 9.99 USD: under 1 %', { gives: [usd(1000)], gets: [usd(9.99, ME)] }, 'fail', 'order_gives_away'],
  [
    '1,000 USD for 10 USD is below market, not given away',
    { gives: [usd(1000)], gets: [usd(10, ME)] },
    'fail',
    'order_below_market',
  ],
  [
    '10 USD for nothing is no give-away (below market)',
    { gives: [usd(10)], gets: [usd(0, ME)] },
    'fail',
    'order_below_market',
  ],
  ['10.01 USD for nothing is given away', { gives: [usd(10.01)], gets: [] }, 'fail', 'order_gives_away'],
  ['an unpriced token for nothing is given away', { gives: [usd(null)], gets: [] }, 'fail', 'order_gives_away'],
  [
    'a 10 % cut to another is a fee',
    { gives: [nftItem()], gets: [usd(90, ME), usd(10, OTHER)] },
    'warn',
    'order_unpriced',
  ],
  [
    'a 10.1 % cut to another is no fee',
    { gives: [nftItem()], gets: [usd(89.9, ME), usd(10.1, OTHER)] },
    'fail',
    'order_pays_third_party',
  ],
  [
    'an NFT to another is never a fee',
    { gives: [usd(100)], gets: [usd(100, ME), nftItem(OTHER)] },
    'fail',
    'order_pays_third_party',
  ],
  [
    'an unpriced item to another cannot be shown to be a fee',
    { gives: [usd(100)], gets: [usd(100, ME), usd(null, OTHER)] },
    'warn',
    'order_unpriced',
  ],
  [
    'a known-safe recipient is the signer’s own',
    { gives: [usd(100)], gets: [usd(50, ME), usd(50, OTHER)], knownSafe: new Set([OTHER]) },
    'pass',
    null,
  ],
  ['a foreign receiver', { gives: [usd(100)], gets: [usd(100, OTHER, true)] }, 'fail', 'order_receiver_not_signer'],
  [
    'a small output to another through a receiver is a fee',
    { gives: [usd(100)], gets: [usd(99, ME, true), usd(1, OTHER, true)] },
    'pass',
    null,
  ],
  [
    'an unpriced output to another cannot be a fee: it blocks',
    { gives: [usd(100)], gets: [usd(100, ME, true), usd(null, OTHER, true)] },
    'fail',
    'order_receiver_not_signer',
  ],
  ['89.99 % of market blocks', { gets: [usd(89.99, ME)] }, 'fail', 'order_below_market'],
  ['90 % of market warns', { gets: [usd(90, ME)] }, 'warn', 'order_below_market'],
  ['96.99 % of market warns', { gets: [usd(96.99, ME)] }, 'warn', 'order_below_market'],
  ['97 % of market passes', { gets: [usd(97, ME)] }, 'pass', null],
  ['100 USD against a declared 94 (limit 99.70)', { amountUsd: 94 }, 'fail', 'outflow_exceeds_declared'],
  ['100 USD against a declared 95 (limit 100.75)', { amountUsd: 95 }, 'pass', null],
  [
    'an unpriced give against a declared amount',
    { amountUsd: 95, gives: [usd(null)], gets: [usd(100, ME)] },
    'warn',
    'order_unpriced',
  ],
  ['31 days', { validUntil: [BigInt(NOW + 31 * 86_400)] }, 'warn', 'long_lived_order'],
  ['30 days', { validUntil: [BigInt(NOW + 30 * 86_400)] }, 'pass', null],
  ['an unknown venue', { venueKnown: false }, 'warn', 'unknown_order_venue'],
  ['a domain on another chain', { domainChainId: 1n }, 'fail', 'chain_mismatch'],
  ['an unlimited Permit2 side', { permit: { unlimited: true, spender: OTHER } }, 'fail', 'unlimited_permit'],
  [
    'an unlimited Permit2 side to a known-safe spender',
    { permit: { unlimited: true, spender: OTHER }, knownSafe: new Set([OTHER]) },
    'warn',
    'unlimited_permit',
  ],
  [
    'a fail after a warn row still decides',
    { venueKnown: false, gets: [usd(100, OTHER, true)] },
    'fail',
    'order_receiver_not_signer',
  ],
];

for (const [name, over, status, reason] of cases) {
  t.test(name, async (t) => {
    const v = matchOrderRules(orderFacts(facts(over)));
    t.equal(v.status, status, v.signals.map((s) => s.reason).join(', '));
    t.equal(v.reason, reason);
  });
}

t.test('every matching row is a signal, in table order', async (t) => {
  const v = matchOrderRules(
    orderFacts(facts({ venueKnown: false, gets: [usd(90, OTHER, true)], validUntil: [BigInt(NOW + 40 * 86_400)] })),
  );
  t.same(
    v.signals.map((s) => `${s.status} ${s.reason}`),
    ['fail order_receiver_not_signer', 'fail order_below_market', 'warn unknown_order_venue', 'warn long_lived_order'],
  );
});

t.test('orderFacts marks what comes back and what is a fee', async (t) => {
  const f = orderFacts(facts({ gives: [nftItem()], gets: [usd(97.5, ME), usd(2.5, OTHER)] }));
  t.same(
    f.gets.map((g) => [g.to_signer, g.fee]),
    [
      [true, false],
      [false, true],
    ],
  );
  t.same([f.givesUsd, f.backUsd, f.getsUsd, f.orderUsd], [null, 97.5, 100, 100]);
});
