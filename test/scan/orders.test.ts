/**
 * Signed orders through /v1/guard (docs/action-scan.md §7): Seaport, CoW Protocol, UniswapX and
 * 1inch orders built from the protocols' published EIP-712 types (test/helpers/order-types.ts),
 * signed by a wallet with ethers and with viem on anvil's chain id (8453; both signatures must be
 * the same and recover to the signer, checked by viem), then guarded by the real app: prices from
 * the price-provider emulator, token decimals from anvil (Circle's USDC, the project's test
 * token), NFTs from the project's test collection.
 */
import { Wallet } from 'ethers';
import t from 'tap';
import { hashTypedData, recoverTypedDataAddress } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { DecideResponse as validateResponse } from '../../src/generated/validators.js';
import { PERMIT2 } from '../../src/scan/changes.js';
import { orderKindOf, orderParties, readOrder } from '../../src/scan/orders.js';
import { forgetValues } from '../../src/scan/value.js';
import { type CoinGeckoEmulator, startCoinGecko } from '../emulators/coingecko.js';
import { post, type TestApp } from '../helpers/app.js';
import {
  COW_SETTLEMENT,
  COW_TYPES,
  ONEINCH_ROUTER,
  ONEINCH_TYPES,
  SEAPORT_16,
  SEAPORT_TYPES,
  UNISWAPX_DUTCH_TYPES,
  UNISWAPX_EXCLUSIVE_DUTCH_TYPES,
  UNISWAPX_PRIORITY_REACTOR_BASE,
  UNISWAPX_PRIORITY_TYPES,
  UNISWAPX_V2_DUTCH_TYPES,
  UNISWAPX_V3_DUTCH_TYPES,
} from '../helpers/order-types.js';
import { type ScanChain, startScanChain } from '../helpers/scan-chain.js';
import { startGuardApp } from '../guard/harness.js';

let chain: ScanChain;
let cg: CoinGeckoEmulator;
let app: TestApp;
let usdc: string;
let tst: string;
let nft: string;

const signer = new Wallet('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
const me = signer.address;
const viemAccount = privateKeyToAccount(signer.privateKey as `0x${string}`);
const STRANGER = '0x000000000000000000000000000000000000dead';
const FEE_TAKER = '0x0000a26b00c1f0df003000390027140000faa719';
const ZERO = '0x0000000000000000000000000000000000000000';
const NOW = Math.floor(Date.now() / 1000);
const HOUR = BigInt(NOW + 3600);
const E18 = 10n ** 18n;

t.before(async () => {
  [chain, cg] = await Promise.all([startScanChain(), startCoinGecko()]);
  usdc = (await chain.usdc.getAddress()).toLowerCase();
  tst = chain.tokenAddress.toLowerCase();
  nft = (await chain.nft.getAddress()).toLowerCase();
  // ETH at 3,000 USD, USDC at 1, the test token at 2.
  cg.setPrice('ethereum', 'usd', 3000);
  cg.setTokenPrice('base', usdc, 1).setTokenPrice('base', tst, 2);
  app = await startGuardApp({
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    REQUEST_DEADLINE_MS: '5000',
  });
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([chain?.close(), cg?.close()]);
});

interface Typed {
  domain: Record<string, unknown>;
  types: Record<string, Array<{ name: string; type: string }>>;
  primaryType: string;
  message: Record<string, unknown>;
}

/** bigints as decimal strings, as a JSON body carries them. */
const json = (v: unknown): unknown =>
  typeof v === 'bigint'
    ? v.toString()
    : Array.isArray(v)
      ? v.map(json)
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, json(x)]))
        : v;

/** Signs with ethers and with viem: the same signature, recovered to the signer by viem. */
async function signBoth(td: Typed): Promise<void> {
  const byEthers = await signer.signTypedData(td.domain, td.types, td.message);
  const byViem = await viemAccount.signTypedData(td as never);
  if (byEthers !== byViem) throw new Error(`ethers and viem signed ${td.primaryType} differently`);
  const recovered = await recoverTypedDataAddress({ ...td, signature: byViem } as never);
  if (recovered.toLowerCase() !== me.toLowerCase()) throw new Error('the signature does not recover to the signer');
}

const guard = async (td: Typed, extra: Record<string, unknown> = {}) => {
  await signBoth(td);
  forgetValues();
  const res = await post(`${app.url}/v1/guard`, { action: 'contract_call', typed_data: json(td), ...extra });
  if (res.status !== 200) throw new Error(`guard answered ${res.status}: ${JSON.stringify(res.body)}`);
  if (!validateResponse(res.body)) throw new Error('not a DecideResponse');
  const sig = (res.body.evidence as Array<any>).find((e) => e.name === 'signature_scan');
  return { verdict: res.body.verdict as string, sig };
};

// ----- Seaport

const seaportDomain = (verifyingContract = SEAPORT_16) => ({
  name: 'Seaport',
  version: '1.6',
  chainId: 8453,
  verifyingContract,
});
const nftItem = (id: bigint) => ({
  itemType: 2,
  token: nft,
  identifierOrCriteria: id,
  startAmount: 1n,
  endAmount: 1n,
});
const eth = (wei: bigint, recipient: string) => ({
  itemType: 0,
  token: ZERO,
  identifierOrCriteria: 0n,
  startAmount: wei,
  endAmount: wei,
  recipient,
});
const seaport = (offer: unknown[], consideration: unknown[], over: Record<string, unknown> = {}): Typed => ({
  domain: seaportDomain(),
  types: SEAPORT_TYPES,
  primaryType: 'OrderComponents',
  message: {
    offerer: me,
    zone: ZERO,
    offer,
    consideration,
    orderType: 0,
    startTime: BigInt(NOW),
    endTime: BigInt(NOW + 7 * 86_400),
    zoneHash: `0x${'00'.repeat(32)}`,
    salt: 7n,
    conduitKey: `0x${'00'.repeat(32)}`,
    counter: 0n,
    ...over,
  },
});

t.test('Seaport: a listing for 1 wei to the offerer gives the NFT away', async (t) => {
  const { verdict, sig } = await guard(seaport([nftItem(7n)], [eth(1n, me)]));
  t.equal(sig.observed.kind, 'seaport_order');
  t.equal(sig.status, 'fail', sig.message);
  t.equal(sig.reason, 'order_gives_away');
  t.equal(verdict, 'block');
  t.same(sig.observed.gives, [{ token: nft, standard: 'erc721', amount: '1', token_id: '7', usd: null }]);
  t.equal(sig.observed.gets[0].to_signer, true);
  t.equal(sig.observed.signer, me.toLowerCase());
  t.equal(sig.observed.signer_source, 'message');
  t.match(sig.message, /gives away/);
});

t.test('Seaport: a listing whose proceeds half go to a stranger pays a third party', async (t) => {
  const { verdict, sig } = await guard(seaport([nftItem(8n)], [eth(E18 / 2n, me), eth(E18 / 2n, STRANGER)]));
  t.equal(sig.reason, 'order_pays_third_party', sig.message);
  t.equal(verdict, 'block');
  t.same(sig.observed.third_parties, [STRANGER]);
  t.equal(sig.observed.to_others[0].usd, 1500);
  t.equal(sig.observed.to_others[0].fee, false);
});

t.test('Seaport: a bid that delivers one of the NFTs bought to a stranger pays a third party', async (t) => {
  const bid = seaport(
    [{ itemType: 1, token: usdc, identifierOrCriteria: 0n, startAmount: 3_000_000_000n, endAmount: 3_000_000_000n }],
    [
      { ...nftItem(9n), recipient: me },
      { ...nftItem(10n), recipient: STRANGER },
    ],
  );
  const { verdict, sig } = await guard(bid);
  t.equal(sig.reason, 'order_pays_third_party', sig.message);
  t.equal(verdict, 'block');
  t.equal(sig.observed.gives_usd, 3000);
  t.same(sig.observed.recipients, [me.toLowerCase(), STRANGER]);
});

t.test('Seaport: a fair listing with a 2.5% marketplace fee is not blocked; the NFT is unpriced', async (t) => {
  const listing = seaport([nftItem(11n)], [eth((E18 * 975n) / 1000n, me), eth((E18 * 25n) / 1000n, FEE_TAKER)]);
  const { verdict, sig } = await guard(listing);
  t.equal(sig.status, 'warn', sig.message);
  t.equal(sig.reason, 'order_unpriced');
  t.equal(verdict, 'wait');
  t.same(sig.observed.signals, ['order_unpriced']);
  const fee = sig.observed.gets.find((g: any) => g.recipient === FEE_TAKER);
  t.same([fee.usd, fee.fee, fee.to_signer], [75, true, false]);
  t.equal(sig.observed.order_usd, 3000, 'valued by its priced side');
  t.equal(sig.observed.venue_known, true);
  t.match(
    sig.message,
    /gives 1 0x\w{4}…\w{4} #11 \(NFT, unpriced\) and pays 0\.975 ETH \(\$2,925(\.00)?\) to the signer, 0\.025 ETH \(\$75(\.00)?\) to 0x0000…a719 \(fee\)/,
  );
});

t.test('Seaport: a Dutch listing is valued where it ends worst for the offerer', async (t) => {
  const falling = eth(E18, me);
  falling.endAmount = 1n;
  const { sig } = await guard(seaport([nftItem(12n)], [falling]));
  t.equal(sig.reason, 'order_gives_away', sig.message);
  t.equal(sig.observed.gets[0].amount, '1');
});

t.test('Seaport venues: each version at its address, on the chains it is deployed on', async (t) => {
  const at = (version: string, address: string, chainId: number) => {
    const td = json(seaport([nftItem(1n)], [eth(E18, me)])) as Typed;
    td.domain = { name: 'Seaport', version, chainId, verifyingContract: address };
    return readOrder(td as never, null, chainId)?.venue_known;
  };
  t.equal(at('1.6', SEAPORT_16, 8453), true);
  t.equal(at('1.5', '0x00000000000000ADc04C56Bf30aC9d3c0aAF14dC', 8453), true);
  t.equal(at('1.5', SEAPORT_16, 8453), false, 'the version must be the address’s');
  t.equal(at('1.1', '0x00000000006c3852cbEf3e08E8dF289169EdE581', 1), true);
  t.equal(at('1.1', '0x00000000006c3852cbEf3e08E8dF289169EdE581', 8453), false, 'not listed on Base');
  t.equal(at('1.6', SEAPORT_16, 84532), false, 'no venue on a testnet we do not list');
});

t.test('the message names the signer: a different request signer is reported, not used', async (t) => {
  const { sig } = await guard(seaport([nftItem(13n)], [eth(1n, me)]), { signer: STRANGER });
  t.equal(sig.observed.signer, me.toLowerCase());
  t.equal(sig.observed.request_signer, STRANGER);
  t.equal(sig.reason, 'order_gives_away');
});

// ----- CoW Protocol

const cowDomain = { name: 'Gnosis Protocol', version: 'v2', chainId: 8453, verifyingContract: COW_SETTLEMENT };
/** 100 USDC for `buy` TST (2 USD each): 50 TST is the market. */
const cow = (buy: bigint, over: Record<string, unknown> = {}): Typed => ({
  domain: cowDomain,
  types: COW_TYPES,
  primaryType: 'Order',
  message: {
    sellToken: usdc,
    buyToken: tst,
    receiver: ZERO,
    sellAmount: 100_000_000n,
    buyAmount: buy,
    validTo: NOW + 1800,
    appData: `0x${'00'.repeat(32)}`,
    feeAmount: 0n,
    kind: 'sell',
    partiallyFillable: false,
    sellTokenBalance: 'erc20',
    buyTokenBalance: 'erc20',
    ...over,
  },
});

t.test('CoW: a foreign receiver blocks; zero or the signer at market passes', async (t) => {
  const foreign = await guard(cow(50n * E18, { receiver: STRANGER }), { signer: me });
  t.equal(foreign.sig.reason, 'order_receiver_not_signer', foreign.sig.message);
  t.equal(foreign.verdict, 'block');
  t.same(foreign.sig.observed.recipients, [STRANGER]);
  for (const receiver of [ZERO, me]) {
    const fair = await guard(cow(50n * E18, { receiver }), { signer: me });
    t.equal(fair.sig.status, 'pass', fair.sig.message);
    t.equal(fair.verdict, 'proceed');
    t.equal(fair.sig.observed.signer_source, 'request');
    t.same([fair.sig.observed.gives_usd, fair.sig.observed.back_usd], [100, 100]);
    t.match(fair.sig.message, /gives 100 USDC \(\$100(\.00)?\) and pays 50 TST \(\$100(\.00)?\) to the signer until/);
  }
});

t.test('CoW: 85% of market blocks, 95% warns, and the fee is part of what goes', async (t) => {
  const low = await guard(cow(425n * 10n ** 17n), { signer: me });
  t.equal(low.sig.status, 'fail', low.sig.message);
  t.equal(low.sig.reason, 'order_below_market');
  const near = await guard(cow(475n * 10n ** 17n), { signer: me });
  t.equal(near.sig.status, 'warn', near.sig.message);
  t.equal(near.sig.reason, 'order_below_market');
  t.equal(near.verdict, 'wait');
  // 90 USDC plus a 10 USDC fee for 45 TST: 100 goes, 90 comes back.
  const fee = await guard(cow(45n * E18, { sellAmount: 90_000_000n, feeAmount: 10_000_000n }), { signer: me });
  t.equal(fee.sig.observed.gives[0].amount, '100000000');
  t.equal(fee.sig.reason, 'order_below_market');
  t.equal(fee.sig.status, 'warn');
});

t.test('CoW: without a signer the owner is unknown: error signer_unknown, never a pass', async (t) => {
  const { verdict, sig } = await guard(cow(50n * E18));
  t.equal(sig.status, 'error');
  t.equal(sig.reason, 'signer_unknown');
  t.equal(verdict, 'wait');
});

t.test('CoW: a known-safe receiver counts as the signer', async (t) => {
  const { sig } = await guard(cow(50n * E18, { receiver: STRANGER }), {
    signer: me,
    known_safe_addresses: [STRANGER],
  });
  t.equal(sig.status, 'pass', sig.message);
});

t.test('CoW: an order above the declared amount blocks', async (t) => {
  const { sig } = await guard(cow(50n * E18), { signer: me, amount_usd: 50 });
  t.equal(sig.reason, 'outflow_exceeds_declared', sig.message);
});

// ----- UniswapX

const permit2Domain = { name: 'Permit2', chainId: 8453, verifyingContract: PERMIT2 };
const info = (reactor: string) => ({
  reactor,
  swapper: me,
  nonce: 1n,
  deadline: HOUR,
  additionalValidationContract: ZERO,
  additionalValidationData: '0x',
});
/** 100 USDC in through Permit2; the outputs as given. */
const priority = (outputs: unknown[], amountIn = 100_000_000n, reactor = UNISWAPX_PRIORITY_REACTOR_BASE): Typed => ({
  domain: permit2Domain,
  types: UNISWAPX_PRIORITY_TYPES,
  primaryType: 'PermitWitnessTransferFrom',
  message: {
    permitted: { token: usdc, amount: amountIn },
    spender: reactor,
    nonce: 1n,
    deadline: HOUR,
    witness: {
      info: info(reactor),
      cosigner: ZERO,
      auctionStartBlock: 1n,
      baselinePriorityFeeWei: 0n,
      input: { token: usdc, amount: amountIn, mpsPerPriorityFeeWei: 0n },
      outputs,
    },
  },
});
const pout = (amount: bigint, recipient: string) => ({ token: tst, amount, mpsPerPriorityFeeWei: 0n, recipient });

t.test('UniswapX: outputs back to the swapper at market pass; the Permit2 side is read as before', async (t) => {
  const { verdict, sig } = await guard(priority([pout(50n * E18, me)]));
  t.equal(sig.observed.kind, 'uniswapx_priority_order');
  t.equal(sig.status, 'pass', sig.message);
  t.equal(verdict, 'proceed');
  t.same(sig.observed.tokens, [usdc]);
  t.equal(sig.observed.spender, UNISWAPX_PRIORITY_REACTOR_BASE.toLowerCase());
  t.same(sig.observed.amounts, ['100000000']);
  t.same(sig.observed.unlimited, [false]);
  t.equal(sig.observed.permit2_domain, true);
  t.equal(sig.observed.venue_known, true);
});

t.test('UniswapX: an output to another recipient blocks; a small fee output does not', async (t) => {
  const stolen = await guard(priority([pout(50n * E18, STRANGER)]));
  t.equal(stolen.sig.reason, 'order_receiver_not_signer', stolen.sig.message);
  t.equal(stolen.verdict, 'block');
  const withFee = await guard(
    priority([pout((50n * E18 * 9975n) / 10000n, me), pout((50n * E18 * 25n) / 10000n, FEE_TAKER)]),
  );
  t.equal(withFee.sig.status, 'pass', withFee.sig.message);
  t.same(
    withFee.sig.observed.gets.map((g: any) => [g.to_signer, g.fee]),
    [
      [true, false],
      [false, true],
    ],
    'a 0.25% output to another address is a fee',
  );
});

t.test('UniswapX: an unlimited Permit2 input still blocks as a permit', async (t) => {
  const { sig } = await guard(priority([pout(50n * E18, me)], (1n << 256n) - 1n));
  t.equal(sig.reason, 'unlimited_permit', sig.message);
  t.same(sig.observed.unlimited, [true]);
});

t.test('UniswapX: every witness kind is recognised; a reactor not deployed here warns', async (t) => {
  const dutchOut = (start: bigint, end: bigint) => ({ token: tst, startAmount: start, endAmount: end, recipient: me });
  const reactor = '0x00000011F84B9aa48e5f8aA8B9897600006289Be';
  const common = { permitted: { token: usdc, amount: 100_000_000n }, spender: reactor, nonce: 2n, deadline: HOUR };
  const dutch = {
    info: info(reactor),
    decayStartTime: BigInt(NOW),
    decayEndTime: HOUR,
    inputToken: usdc,
    inputStartAmount: 100_000_000n,
    inputEndAmount: 100_000_000n,
    outputs: [dutchOut(51n * E18, 50n * E18)],
  };
  const cases: Array<[string, Typed]> = [
    [
      'uniswapx_dutch_order',
      {
        domain: permit2Domain,
        types: UNISWAPX_DUTCH_TYPES,
        primaryType: 'PermitWitnessTransferFrom',
        message: { ...common, witness: dutch },
      },
    ],
    [
      'uniswapx_exclusive_dutch_order',
      {
        domain: permit2Domain,
        types: UNISWAPX_EXCLUSIVE_DUTCH_TYPES,
        primaryType: 'PermitWitnessTransferFrom',
        message: { ...common, witness: { ...dutch, exclusiveFiller: ZERO, exclusivityOverrideBps: 0n } },
      },
    ],
    [
      'uniswapx_v2_dutch_order',
      {
        domain: permit2Domain,
        types: UNISWAPX_V2_DUTCH_TYPES,
        primaryType: 'PermitWitnessTransferFrom',
        message: {
          ...common,
          witness: {
            info: info(reactor),
            cosigner: ZERO,
            baseInputToken: usdc,
            baseInputStartAmount: 100_000_000n,
            baseInputEndAmount: 100_000_000n,
            baseOutputs: [dutchOut(51n * E18, 50n * E18)],
          },
        },
      },
    ],
  ];
  for (const [kind, td] of cases) {
    const { sig } = await guard(td);
    t.equal(sig.observed.kind, kind);
    t.equal(sig.observed.gets[0].amount, String(50n * E18), `${kind}: valued at the end of its decay`);
    t.equal(sig.status, 'warn', `${kind}: ${sig.message}`);
    t.equal(sig.reason, 'unknown_order_venue', 'that reactor settles on Ethereum, not on Base');
  }
});

t.test('UniswapX V3: a curve that decays to 80% of market blocks at its floor', async (t) => {
  const reactor = '0xB274d5F4b833b61B340b654d600A864fB604a87c';
  const curve = { relativeBlocks: 5n, relativeAmounts: [10n * E18] };
  const td: Typed = {
    domain: permit2Domain,
    types: UNISWAPX_V3_DUTCH_TYPES,
    primaryType: 'PermitWitnessTransferFrom',
    message: {
      permitted: { token: usdc, amount: 100_000_000n },
      spender: reactor,
      nonce: 3n,
      deadline: HOUR,
      witness: {
        info: info(reactor),
        cosigner: ZERO,
        startingBaseFee: 0n,
        baseInput: {
          token: usdc,
          startAmount: 100_000_000n,
          curve: { relativeBlocks: 0n, relativeAmounts: [] },
          maxAmount: 100_000_000n,
          adjustmentPerGweiBaseFee: 0n,
        },
        baseOutputs: [
          { token: tst, startAmount: 50n * E18, curve, recipient: me, minAmount: 0n, adjustmentPerGweiBaseFee: 0n },
        ],
      },
    },
  };
  const { sig } = await guard(td);
  t.equal(sig.observed.kind, 'uniswapx_v3_dutch_order');
  t.equal(sig.observed.gets[0].amount, String(40n * E18));
  t.equal(sig.reason, 'order_below_market', sig.message);
  t.equal(sig.status, 'fail');
});

// ----- 1inch

const oneinchDomain = (verifyingContract = ONEINCH_ROUTER) => ({
  name: '1inch Aggregation Router',
  version: '6',
  chainId: 8453,
  verifyingContract,
});
/** makerTraits with an expiration (bits 80–119). */
const traits = (expiration: bigint) => expiration << 80n;
const oneinch = (over: Record<string, unknown> = {}, domain = oneinchDomain()): Typed => ({
  domain,
  types: ONEINCH_TYPES,
  primaryType: 'Order',
  message: {
    salt: 1n,
    maker: me,
    receiver: ZERO,
    makerAsset: usdc,
    takerAsset: tst,
    makingAmount: 100_000_000n,
    takingAmount: 50n * E18,
    makerTraits: traits(HOUR),
    ...over,
  },
});

t.test('1inch: a foreign receiver blocks; a fair order passes', async (t) => {
  const foreign = await guard(oneinch({ receiver: STRANGER }));
  t.equal(foreign.sig.observed.kind, 'oneinch_order');
  t.equal(foreign.sig.reason, 'order_receiver_not_signer', foreign.sig.message);
  t.equal(foreign.verdict, 'block');
  const fair = await guard(oneinch());
  t.equal(fair.sig.status, 'pass', fair.sig.message);
  t.equal(fair.verdict, 'proceed');
  t.match(fair.sig.observed.valid_until, /^\d{4}-/);
});

t.test('1inch: no expiration in makerTraits is a long-lived order', async (t) => {
  const { sig } = await guard(oneinch({ makerTraits: 0n }));
  t.equal(sig.reason, 'long_lived_order', sig.message);
  t.equal(sig.observed.valid_until, null);
});

t.test('an order whose venue is not the protocol contract warns', async (t) => {
  const { sig, verdict } = await guard(oneinch({}, oneinchDomain('0x1111111254EEB25477B68fb85Ed929f73A960582')));
  t.equal(sig.status, 'warn', sig.message);
  t.equal(sig.reason, 'unknown_order_venue');
  t.equal(verdict, 'wait');
  t.same(sig.observed.signals, ['unknown_order_venue']);
  const renamed = await guard(oneinch({}, { ...oneinchDomain(), name: 'Totally 1inch' }));
  t.equal(renamed.sig.reason, 'unknown_order_venue', 'the domain name must be the venue’s');
  t.equal(renamed.sig.observed.kind, 'oneinch_order', 'recognised by its shape, whatever the name');
});

t.test('an unpriced side is never a pass on a price rule', async (t) => {
  // A maker asset with no code: no decimals, no price.
  const unknown = '0x00000000000000000000000000000000000c0ffe';
  const { sig, verdict } = await guard(oneinch({ makerAsset: unknown }));
  t.equal(sig.observed.gives[0].usd, null);
  t.equal(sig.status, 'warn', sig.message);
  t.equal(sig.reason, 'order_unpriced');
  t.equal(verdict, 'wait');
  const declared = await guard(oneinch({ makerAsset: unknown }), { amount_usd: 100 });
  t.equal(declared.sig.reason, 'order_unpriced', 'a declared amount cannot be held to an unpriced give');
});

t.test('a domain on another chain blocks an order', async (t) => {
  const { sig } = await guard({ ...oneinch(), domain: { ...oneinchDomain(), chainId: 1 } });
  t.equal(sig.reason, 'chain_mismatch', sig.message);
});

// ----- shapes, parties, 422s

t.test('orderParties lists whom an order pays, for the policy and screening', async (t) => {
  const listing = json(
    seaport([nftItem(1n)], [eth(E18 / 2n, me), eth(E18 / 2n, STRANGER), eth(1000n, FEE_TAKER)]),
  ) as Typed;
  t.same(orderParties(listing as never), {
    signer: me.toLowerCase(),
    recipients: [me.toLowerCase(), STRANGER, FEE_TAKER],
    third_parties: [STRANGER, FEE_TAKER],
  });
  t.same(orderParties(json(cow(1n)) as never, me)?.recipients, [me.toLowerCase()], 'CoW: zero is the owner');
  t.same(
    orderParties(json(cow(1n)) as never),
    { signer: null, recipients: [], third_parties: [] },
    'no owner, no recipient',
  );
  t.equal(
    orderParties({
      domain: {},
      types: { Mail: [{ name: 'a', type: 'string' }] },
      primaryType: 'Mail',
      message: { a: '' },
    }),
    null,
  );
});

t.test('a shape with one field more or less is no order', async (t) => {
  const extra = { ...ONEINCH_TYPES, Order: [...ONEINCH_TYPES.Order, { name: 'memo', type: 'string' }] };
  t.equal(orderKindOf({ types: extra, primaryType: 'Order' }), null);
  t.equal(orderKindOf({ types: { Anything: COW_TYPES.Order }, primaryType: 'Anything' }), 'cow_order');
  const hashed = hashTypedData(json(seaport([nftItem(1n)], [eth(1n, me)])) as never);
  t.match(hashed, /^0x[0-9a-f]{64}$/, 'viem hashes the JSON body as sent');
});

t.test('malformed orders are 422s with the exact loc', async (t) => {
  const cases: Array<[string, unknown, Array<string | number>, string]> = [
    [
      'a Seaport item type beyond 5',
      { ...seaport([{ ...nftItem(1n), itemType: 9 }], [eth(1n, me)]) },
      ['body', 'typed_data', 'message', 'offer', 0, 'itemType'],
      'enum',
    ],
    [
      'a consideration recipient that is no address',
      seaport([nftItem(1n)], [eth(1n, me), eth(1n, '0x1234')]),
      ['body', 'typed_data', 'message', 'consideration', 1, 'recipient'],
      'address_invalid',
    ],
    [
      'a CoW kind that is neither sell nor buy',
      cow(1n, { kind: 'steal' }),
      ['body', 'typed_data', 'message', 'kind'],
      'enum',
    ],
    [
      'a CoW buy balance of external',
      cow(1n, { buyTokenBalance: 'external' }),
      ['body', 'typed_data', 'message', 'buyTokenBalance'],
      'enum',
    ],
    [
      'a UniswapX output amount below zero',
      priority([pout(-1n, me)]),
      ['body', 'typed_data', 'message', 'witness', 'outputs', 0, 'amount'],
      'int_range',
    ],
    [
      'a 1inch takingAmount that is no integer',
      oneinch({ takingAmount: 'lots' }),
      ['body', 'typed_data', 'message', 'takingAmount'],
      'int_parsing',
    ],
  ];
  for (const [name, td, loc, type] of cases) {
    const res = await post(`${app.url}/v1/guard`, { action: 'contract_call', typed_data: json(td) });
    t.equal(res.status, 422, name);
    t.same(res.body.detail?.[0]?.loc, loc, `${name}: loc`);
    t.equal(res.body.detail?.[0]?.type, type, `${name}: type`);
  }
  const badSigner = await post(`${app.url}/v1/guard`, {
    action: 'contract_call',
    signer: '0x12',
    typed_data: json(cow(1n)),
  });
  t.equal(badSigner.status, 422);
  t.same(badSigner.body.detail[0].loc, ['body', 'signer']);
});

t.test('in the worker pool, as production runs checks', async (t) => {
  const pooled = await startGuardApp({
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    POOL_THREADS: '1',
    REQUEST_DEADLINE_MS: '5000',
  });
  t.teardown(() => pooled.close());
  forgetValues();
  const res = await post(`${pooled.url}/v1/guard`, {
    action: 'contract_call',
    signer: me,
    typed_data: json(cow(50n * E18, { receiver: STRANGER })),
  });
  t.equal(res.status, 200);
  t.ok(res.body.failure_modes.includes('signature_scan:order_receiver_not_signer'), res.body.failure_modes.join());
  t.equal(res.body.verdict, 'block');
});
