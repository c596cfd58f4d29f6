/**
 * Signed orders (docs/action-scan.md §7): what a Seaport, CoW Protocol, UniswapX or 1inch order
 * gives, what it gets, and to whom. An order is recognised by the shape of its types (field names
 * and types, struct names free, as the permits of §4 are), never by the domain's name; the domain
 * is then compared with the venue table below. Pure: no I/O, no clock, no prices.
 *
 * The shapes are those the protocols publish for signing:
 * - Seaport 1.1–1.6 `OrderComponents`, `OfferItem`, `ConsiderationItem`: ProjectOpenSea/seaport-js,
 *   src/constants.ts (`EIP_712_ORDER_TYPE`), the same in ProjectOpenSea/seaport
 *   contracts/lib/ConsiderationConstants.sol (the type strings the contract hashes);
 * - CoW Protocol `Order`: cowprotocol/contracts, src/ts/order.ts (`ORDER_TYPE_FIELDS`) and
 *   src/contracts/libraries/GPv2Order.sol (`TYPE_HASH`);
 * - UniswapX witnesses inside Permit2's `PermitWitnessTransferFrom`: Uniswap/UniswapX src/lib
 *   (DutchOrderLib.sol, ExclusiveDutchOrderLib.sol, V2DutchOrderLib.sol, V3DutchOrderLib.sol,
 *   PriorityOrderLib.sol, OrderInfoLib.sol) as the SDK signs them, Uniswap/sdks
 *   sdks/uniswapx-sdk/src/order/{DutchOrder,V2DutchOrder,V3DutchOrder,PriorityOrder}.ts;
 * - 1inch Limit Order Protocol v4 `Order`: 1inch/limit-order-protocol contracts/OrderLib.sol
 *   (`_LIMIT_ORDER_TYPEHASH`), makerTraits bits from contracts/libraries/MakerTraitsLib.sol.
 */
import { CHAIN_IDS } from '../config.js';
import type { ValidationDetail } from '../wire.js';
import { PERMIT2, type Standard } from './changes.js';
import { toBigInt, type TypedDataInput } from './typed-data-shape.js';

export type OrderProtocol = 'seaport' | 'cow' | 'uniswapx' | 'oneinch';
export type OrderKind =
  | 'seaport_order'
  | 'cow_order'
  | 'uniswapx_dutch_order'
  | 'uniswapx_exclusive_dutch_order'
  | 'uniswapx_v2_dutch_order'
  | 'uniswapx_v3_dutch_order'
  | 'uniswapx_priority_order'
  | 'oneinch_order';

// ---------------------------------------------------------------------------------------------
// Shapes

/** A field: a primitive type name, or a struct (by its shape), possibly an array of it. */
type FieldSpec = string | { struct: Shape; array?: true };
export type Shape = Readonly<Record<string, FieldSpec>>;
type Types = TypedDataInput['types'];

/** `types[name]` has exactly the fields of `shape` (order free), nested structs included. */
function fits(types: Types, name: string, shape: Shape, depth = 0): boolean {
  const fields = Object.hasOwn(types, name) ? types[name] : undefined;
  if (!fields || depth > 4 || fields.length !== Object.keys(shape).length) return false;
  return fields.every((f) => {
    const spec = Object.hasOwn(shape, f.name) ? shape[f.name] : undefined;
    if (spec === undefined) return false;
    if (typeof spec === 'string') return f.type === spec;
    const array = f.type.endsWith('[]');
    if (array !== (spec.array === true)) return false;
    return fits(types, array ? f.type.slice(0, -2) : f.type, spec.struct, depth + 1);
  });
}

const ITEM = {
  itemType: 'uint8',
  token: 'address',
  identifierOrCriteria: 'uint256',
  startAmount: 'uint256',
  endAmount: 'uint256',
} as const;
const SEAPORT_ORDER: Shape = {
  offerer: 'address',
  zone: 'address',
  offer: { struct: ITEM, array: true },
  consideration: { struct: { ...ITEM, recipient: 'address' }, array: true },
  orderType: 'uint8',
  startTime: 'uint256',
  endTime: 'uint256',
  zoneHash: 'bytes32',
  salt: 'uint256',
  conduitKey: 'bytes32',
  counter: 'uint256',
};
/** A CoW Protocol order's fields, in the order of its EIP-712 type. */
export const COW_ORDER: Shape = {
  sellToken: 'address',
  buyToken: 'address',
  receiver: 'address',
  sellAmount: 'uint256',
  buyAmount: 'uint256',
  validTo: 'uint32',
  appData: 'bytes32',
  feeAmount: 'uint256',
  kind: 'string',
  partiallyFillable: 'bool',
  sellTokenBalance: 'string',
  buyTokenBalance: 'string',
};
const ONEINCH_ORDER: Shape = {
  salt: 'uint256',
  maker: 'address',
  receiver: 'address',
  makerAsset: 'address',
  takerAsset: 'address',
  makingAmount: 'uint256',
  takingAmount: 'uint256',
  makerTraits: 'uint256',
};
const ORDER_INFO: Shape = {
  reactor: 'address',
  swapper: 'address',
  nonce: 'uint256',
  deadline: 'uint256',
  additionalValidationContract: 'address',
  additionalValidationData: 'bytes',
};
const DUTCH_OUTPUT: Shape = { token: 'address', startAmount: 'uint256', endAmount: 'uint256', recipient: 'address' };
const DECAY: Shape = { relativeBlocks: 'uint256', relativeAmounts: 'int256[]' };
const DUTCH: Shape = {
  info: { struct: ORDER_INFO },
  decayStartTime: 'uint256',
  decayEndTime: 'uint256',
  inputToken: 'address',
  inputStartAmount: 'uint256',
  inputEndAmount: 'uint256',
  outputs: { struct: DUTCH_OUTPUT, array: true },
};
/** The UniswapX witnesses, by kind: the struct the `witness` field of the Permit2 message has. */
const UNISWAPX_WITNESSES: ReadonlyArray<[OrderKind, Shape]> = [
  ['uniswapx_dutch_order', DUTCH],
  ['uniswapx_exclusive_dutch_order', { ...DUTCH, exclusiveFiller: 'address', exclusivityOverrideBps: 'uint256' }],
  [
    'uniswapx_v2_dutch_order',
    {
      info: { struct: ORDER_INFO },
      cosigner: 'address',
      baseInputToken: 'address',
      baseInputStartAmount: 'uint256',
      baseInputEndAmount: 'uint256',
      baseOutputs: { struct: DUTCH_OUTPUT, array: true },
    },
  ],
  [
    'uniswapx_v3_dutch_order',
    {
      info: { struct: ORDER_INFO },
      cosigner: 'address',
      startingBaseFee: 'uint256',
      baseInput: {
        struct: {
          token: 'address',
          startAmount: 'uint256',
          curve: { struct: DECAY },
          maxAmount: 'uint256',
          adjustmentPerGweiBaseFee: 'uint256',
        },
      },
      baseOutputs: {
        struct: {
          token: 'address',
          startAmount: 'uint256',
          curve: { struct: DECAY },
          recipient: 'address',
          minAmount: 'uint256',
          adjustmentPerGweiBaseFee: 'uint256',
        },
        array: true,
      },
    },
  ],
  [
    'uniswapx_priority_order',
    {
      info: { struct: ORDER_INFO },
      cosigner: 'address',
      auctionStartBlock: 'uint256',
      baselinePriorityFeeWei: 'uint256',
      input: { struct: { token: 'address', amount: 'uint256', mpsPerPriorityFeeWei: 'uint256' } },
      outputs: {
        struct: { token: 'address', amount: 'uint256', mpsPerPriorityFeeWei: 'uint256', recipient: 'address' },
        array: true,
      },
    },
  ],
];
/** Permit2's signature transfer with one witness field (its type checked per kind above). */
const PERMIT_WITNESS_BASE = {
  permitted: { struct: { token: 'address', amount: 'uint256' } },
  spender: 'address',
  nonce: 'uint256',
  deadline: 'uint256',
} as const;

/** The order kind of `primaryType`, by its shape; null when it is no order we read. */
export function orderKindOf(td: Pick<TypedDataInput, 'types' | 'primaryType'>): OrderKind | null {
  const { types, primaryType: p } = td;
  if (fits(types, p, SEAPORT_ORDER)) return 'seaport_order';
  if (fits(types, p, COW_ORDER)) return 'cow_order';
  if (fits(types, p, ONEINCH_ORDER)) return 'oneinch_order';
  const witness = (types[p] ?? []).find((f) => f.name === 'witness');
  if (!witness) return null;
  for (const [kind, shape] of UNISWAPX_WITNESSES)
    if (fits(types, p, { ...PERMIT_WITNESS_BASE, witness: { struct: shape } })) return kind;
  return null;
}

export const protocolOf = (kind: OrderKind): OrderProtocol =>
  kind === 'seaport_order'
    ? 'seaport'
    : kind === 'cow_order'
      ? 'cow'
      : kind === 'oneinch_order'
        ? 'oneinch'
        : 'uniswapx';

// ---------------------------------------------------------------------------------------------
// Venues

interface Venue {
  protocol: OrderProtocol;
  /** UniswapX: the order kinds the reactor settles. */
  kinds?: readonly OrderKind[];
  address: string;
  chains: readonly string[];
  /** The EIP-712 domain's name and version the contract signs with (null: none checked). */
  name: string | null;
  version: string | null;
  source: string;
}

const MAINNETS = ['ethereum', 'base', 'optimism', 'arbitrum', 'polygon', 'bsc', 'avalanche'] as const;
const SEAPORT_SOURCE = 'ProjectOpenSea/seaport README.md, Deployments (canonical cross-chain addresses)';
const seaport = (version: string, address: string, chains: readonly string[]): Venue => ({
  protocol: 'seaport',
  address,
  chains,
  name: 'Seaport',
  version,
  source: SEAPORT_SOURCE,
});
const EARLY_SEAPORT_CHAINS = ['ethereum', 'optimism', 'arbitrum', 'polygon'] as const;
const UNISWAPX_SOURCE = 'Uniswap/sdks sdks/uniswapx-sdk/src/constants.ts (REACTOR_ADDRESS_MAPPING)';

/**
 * Where each protocol's orders are settled, per chain, with the source of each address. An
 * address missing here is not proof of fraud (a new deployment), so it warns, never blocks.
 */
export const ORDER_VENUES: readonly Venue[] = Object.freeze([
  seaport('1.1', '0x00000000006c3852cbef3e08e8df289169ede581', EARLY_SEAPORT_CHAINS),
  seaport('1.2', '0x00000000000006c7676171937c444f6bde3d6282', EARLY_SEAPORT_CHAINS),
  seaport('1.3', '0x0000000000000ad24e80fd803c6ac37206a45f15', EARLY_SEAPORT_CHAINS),
  seaport('1.4', '0x00000000000001ad428e4906ae43d8f9852d0dd6', EARLY_SEAPORT_CHAINS),
  seaport('1.5', '0x00000000000000adc04c56bf30ac9d3c0aaf14dc', MAINNETS),
  seaport('1.6', '0x0000000000000068f116a894984e2db1123eb395', MAINNETS),
  {
    protocol: 'cow',
    address: '0x9008d19f58aabd9ed0d60971565aa8510560ab41',
    chains: ['ethereum', 'arbitrum', 'base', 'sepolia'],
    name: 'Gnosis Protocol',
    version: 'v2',
    source:
      'cowprotocol/contracts networks.json and src/ts/deploy.ts (GPv2Settlement: one CREATE2 address wherever deployed; the chains as cowprotocol/cow-sdk supports them); the domain from src/ts/index.ts domain()',
  },
  {
    protocol: 'uniswapx',
    kinds: ['uniswapx_exclusive_dutch_order'],
    address: '0x6000da47483062a0d734ba3dc7576ce6a0b645c4',
    chains: ['ethereum', 'polygon'],
    name: null,
    version: null,
    source: UNISWAPX_SOURCE,
  },
  {
    protocol: 'uniswapx',
    kinds: ['uniswapx_v2_dutch_order'],
    address: '0x00000011f84b9aa48e5f8aa8b9897600006289be',
    chains: ['ethereum'],
    name: null,
    version: null,
    source: UNISWAPX_SOURCE,
  },
  {
    protocol: 'uniswapx',
    kinds: ['uniswapx_v2_dutch_order'],
    address: '0x1bd1aadc9e230626c44a139d7e70d842749351eb',
    chains: ['arbitrum'],
    name: null,
    version: null,
    source: UNISWAPX_SOURCE,
  },
  {
    protocol: 'uniswapx',
    kinds: ['uniswapx_v3_dutch_order'],
    address: '0xb274d5f4b833b61b340b654d600a864fb604a87c',
    chains: ['arbitrum'],
    name: null,
    version: null,
    source: UNISWAPX_SOURCE,
  },
  {
    protocol: 'uniswapx',
    kinds: ['uniswapx_priority_order'],
    address: '0x000000001ec5656dcdb24d90dfa42742738de729',
    chains: ['base'],
    name: null,
    version: null,
    source: UNISWAPX_SOURCE,
  },
  {
    protocol: 'oneinch',
    address: '0x111111125421ca6dc452d289314280a0f8842a65',
    chains: MAINNETS,
    name: '1inch Aggregation Router',
    version: '6',
    source:
      '1inch/limit-order-sdk src/limit-order/eip712 (the domain of v4 orders: the Aggregation Router v6, one address on every chain but zkSync)',
  },
]);

/** The chain name of an EVM chain id among the service's chains; null when none. */
const chainName = (id: number | null): string | null =>
  id === null ? null : (Object.entries(CHAIN_IDS).find(([, v]) => v === id)?.[0] ?? null);

// ---------------------------------------------------------------------------------------------
// Reading

/** One thing the order moves. Amounts are the range the order allows (Dutch decay, curves). */
export interface OrderItem {
  /** Lower-case token address, or "native". */
  token: string;
  standard: Standard;
  /** The least and the most the order may move of it, atomic units. */
  min: bigint;
  max: bigint;
  /** NFTs: the token id; null for a criteria item (any token of the collection). */
  token_id?: string | null;
  /** What the order pays out: to whom (lower case). */
  recipient?: string;
  /** Set by a `receiver` field or a UniswapX output (the receiver rule), not a Seaport consideration. */
  via_receiver?: boolean;
}

export interface ReadOrder {
  kind: OrderKind;
  protocol: OrderProtocol;
  /** Whose assets move: the message's party when it names one, else the request's `signer`. */
  signer: string | null;
  signer_source: 'message' | 'request' | null;
  /** What the signer gives (leaves its account) and what the order pays out, to whom. */
  gives: OrderItem[];
  gets: OrderItem[];
  /** Unix seconds the order (and, for UniswapX, its permit) lasts to. */
  valid_until: bigint[];
  /** The settlement contract the order names: the domain's, or the UniswapX reactor. */
  venue: string | null;
  venue_known: boolean;
  /** The domain's chain id, when given. */
  domain_chain_id: bigint | null;
  /** UniswapX: the Permit2 side, read as §4 reads a signature transfer. */
  permit: { token: string; amount: bigint; spender: string | null; permit2_domain: boolean } | null;
}

const ZERO = '0x0000000000000000000000000000000000000000';
/** The buy token CoW uses for the chain's native coin. */
const COW_NATIVE = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee';
const MAX_UINT256 = (1n << 256n) - 1n;
const addr = (v: unknown): string => (typeof v === 'string' ? v.toLowerCase() : ZERO);
const int = (v: unknown): bigint => toBigInt(v) ?? 0n;
const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const list = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? v.map(obj) : []);
const range = (a: bigint, b: bigint) => ({ min: a < b ? a : b, max: a > b ? a : b });
const fungible = (token: string): Pick<OrderItem, 'token' | 'standard'> =>
  token === ZERO || token === COW_NATIVE ? { token: 'native', standard: 'native' } : { token, standard: 'erc20' };

/** Seaport's ItemType: NATIVE, ERC20, ERC721, ERC1155, ERC721_WITH_CRITERIA, ERC1155_WITH_CRITERIA. */
const SEAPORT_STANDARDS: readonly Standard[] = ['native', 'erc20', 'erc721', 'erc1155', 'erc721', 'erc1155'];

function seaportItem(i: Record<string, unknown>): OrderItem {
  const type = Number(int(i.itemType));
  const standard = SEAPORT_STANDARDS[type] ?? 'erc20';
  const nft = standard === 'erc721' || standard === 'erc1155';
  return {
    token: standard === 'native' ? 'native' : addr(i.token),
    standard,
    ...range(int(i.startAmount), int(i.endAmount)),
    ...(nft ? { token_id: type >= 4 ? null : int(i.identifierOrCriteria).toString() } : {}),
    ...(i.recipient !== undefined ? { recipient: addr(i.recipient) } : {}),
  };
}

/** makerTraits bits 80–119: the expiration (0: none), MakerTraitsLib. */
const oneinchExpiration = (traits: bigint): bigint => {
  const e = (traits >> 80n) & ((1n << 40n) - 1n);
  return e === 0n ? MAX_UINT256 : e;
};

/** V3 curves subtract `relativeAmounts` from the start amount: its range, floored at `minAmount`. */
function v3Range(start: bigint, curve: Record<string, unknown>, floor: bigint | null) {
  const rel = (Array.isArray(curve.relativeAmounts) ? curve.relativeAmounts : []).map(int);
  let lo = start;
  let hi = start;
  for (const r of rel) {
    if (start - r < lo) lo = start - r;
    if (start - r > hi) hi = start - r;
  }
  if (floor !== null && lo < floor) lo = floor;
  return { min: lo < 0n ? 0n : lo, max: hi };
}

function uniswapxOutputs(kind: OrderKind, w: Record<string, unknown>): OrderItem[] {
  const outputs = list(w.outputs ?? w.baseOutputs);
  return outputs.map((o) => {
    const amounts =
      kind === 'uniswapx_v3_dutch_order'
        ? v3Range(int(o.startAmount), obj(o.curve), int(o.minAmount))
        : kind === 'uniswapx_priority_order'
          ? // Priority fees only add to an output: the signed amount is its least.
            { min: int(o.amount), max: int(o.amount) }
          : range(int(o.startAmount), int(o.endAmount));
    return { ...fungible(addr(o.token)), ...amounts, recipient: addr(o.recipient), via_receiver: true };
  });
}

/** Whether the domain (or the UniswapX reactor) is the protocol's venue on the request's chain. */
function venueKnown(td: TypedDataInput, kind: OrderKind, venue: string | null, chainId: number | null): boolean {
  const chain = chainName(chainId);
  if (chain === null || venue === null) return false;
  const protocol = protocolOf(kind);
  const d = td.domain;
  return ORDER_VENUES.some(
    (v) =>
      v.protocol === protocol &&
      v.address === venue &&
      v.chains.includes(chain) &&
      (v.kinds === undefined || v.kinds.includes(kind)) &&
      (v.name === null || d.name === v.name) &&
      (v.version === null || d.version === v.version),
  );
}

/**
 * The order read by its kind; null when `typed_data` is no order. `requestSigner` is the guard
 * request's `signer`; `chainId` the request chain's id (for the venue table). Assumes the message
 * matched its types (guardRequestProblems).
 */
export function readOrder(td: TypedDataInput, requestSigner: string | null, chainId: number | null): ReadOrder | null {
  const kind = orderKindOf(td);
  if (kind === null) return null;
  const m = td.message;
  const domainContract = typeof td.domain.verifyingContract === 'string' ? addr(td.domain.verifyingContract) : null;
  let party: string | null = null;
  let gives: OrderItem[] = [];
  let gets: OrderItem[] = [];
  let validUntil: bigint[] = [];
  let venue = domainContract;
  let permit: ReadOrder['permit'] = null;
  const signerOr = (p: string | null) => p ?? requestSigner?.toLowerCase() ?? null;
  switch (kind) {
    case 'seaport_order':
      party = addr(m.offerer);
      gives = list(m.offer).map(seaportItem);
      gets = list(m.consideration).map(seaportItem);
      validUntil = [int(m.endTime)];
      break;
    case 'cow_order': {
      // A CoW order does not name its owner: the signature does (the request's `signer`).
      const owner = signerOr(null);
      const receiver = addr(m.receiver);
      const sell = int(m.sellAmount) + int(m.feeAmount);
      gives = [{ ...fungible(addr(m.sellToken)), min: sell, max: sell }];
      gets = [
        {
          ...fungible(addr(m.buyToken)),
          min: int(m.buyAmount),
          max: int(m.buyAmount),
          // Zero is the owner; with the owner unknown so is the recipient (the scan answers signer_unknown).
          ...(receiver !== ZERO ? { recipient: receiver } : owner !== null ? { recipient: owner } : {}),
          via_receiver: true,
        },
      ];
      validUntil = [int(m.validTo)];
      break;
    }
    case 'oneinch_order': {
      party = addr(m.maker);
      const receiver = addr(m.receiver);
      gives = [{ ...fungible(addr(m.makerAsset)), min: int(m.makingAmount), max: int(m.makingAmount) }];
      gets = [
        {
          ...fungible(addr(m.takerAsset)),
          min: int(m.takingAmount),
          max: int(m.takingAmount),
          recipient: receiver === ZERO ? party : receiver,
          via_receiver: true,
        },
      ];
      validUntil = [oneinchExpiration(int(m.makerTraits))];
      break;
    }
    default: {
      const w = obj(m.witness);
      const info = obj(w.info);
      const permitted = obj(m.permitted);
      party = addr(info.swapper);
      venue = addr(info.reactor);
      const spender = addr(m.spender);
      // Permit2 lets the spender pull at most `permitted.amount`: the most the order can take.
      const amount = int(permitted.amount);
      gives = [{ token: addr(permitted.token), standard: 'erc20', min: amount, max: amount }];
      gets = uniswapxOutputs(kind, w);
      validUntil = [int(info.deadline), int(m.deadline)];
      permit = { token: addr(permitted.token), amount, spender, permit2_domain: domainContract === PERMIT2 };
      break;
    }
  }
  const signer = signerOr(party);
  let known = venueKnown(td, kind, venue, chainId);
  // UniswapX: the domain must be Permit2's and the permit's spender the reactor that settles it.
  if (permit) known = known && permit.permit2_domain && permit.spender === venue && td.domain.name === 'Permit2';
  return {
    kind,
    protocol: protocolOf(kind),
    signer,
    signer_source: party !== null ? 'message' : signer !== null ? 'request' : null,
    gives,
    gets,
    valid_until: validUntil,
    venue,
    venue_known: known,
    domain_chain_id: td.domain.chainId === undefined ? null : toBigInt(td.domain.chainId),
    permit,
  };
}

/**
 * Who an order pays, for the policy's `recipients` and for screening (docs/action-scan.md §7):
 * `recipients` every address the order pays anything to (its proceeds and every fee or
 * third-party item), `third_parties` those of them that are not the signer. Lower case, in order,
 * each once. Null when `typed_data` is no order we read.
 */
export function orderParties(
  td: TypedDataInput,
  requestSigner: string | null = null,
): { signer: string | null; recipients: string[]; third_parties: string[] } | null {
  const o = readOrder(td, requestSigner, null);
  if (!o) return null;
  const recipients = [...new Set(o.gets.map((g) => g.recipient).filter((r): r is string => r !== undefined))];
  return { signer: o.signer, recipients, third_parties: recipients.filter((r) => r !== o.signer) };
}

// ---------------------------------------------------------------------------------------------
// What a JSON schema and the EIP-712 types cannot say

const COW_KINDS = ['sell', 'buy'];
const COW_SELL_BALANCES = ['erc20', 'external', 'internal'];
const COW_BUY_BALANCES = ['erc20', 'internal'];

/**
 * Values an order's types admit but its protocol does not: a Seaport item type beyond 5, a CoW
 * kind or balance that is not one of its strings. Each a 422 detail at the field.
 */
export function orderProblems(td: TypedDataInput, base: Array<string | number>): ValidationDetail[] {
  const kind = orderKindOf(td);
  const m = td.message;
  const out: ValidationDetail[] = [];
  const at = (...loc: Array<string | number>) => [...base, 'message', ...loc];
  if (kind === 'seaport_order')
    for (const side of ['offer', 'consideration'] as const)
      list(m[side]).forEach((item, i) => {
        if (int(item.itemType) > 5n)
          out.push({
            loc: at(side, i, 'itemType'),
            msg: 'Seaport item types are 0 (native) to 5 (ERC-1155 with criteria)',
            type: 'enum',
          });
      });
  if (kind === 'cow_order') {
    const oneOf = (field: string, allowed: string[]) => {
      if (!allowed.includes(String(m[field])))
        out.push({ loc: at(field), msg: `Input should be ${allowed.map((a) => `'${a}'`).join(' or ')}`, type: 'enum' });
    };
    oneOf('kind', COW_KINDS);
    oneOf('sellTokenBalance', COW_SELL_BALANCES);
    oneOf('buyTokenBalance', COW_BUY_BALANCES);
  }
  return out;
}
