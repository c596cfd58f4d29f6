/**
 * The EIP-712 types the order protocols publish for signing, copied as published (the service
 * recognises them by shape with its own description in src/scan/orders.ts; these are the
 * protocols' own, so a test signs what a wallet would be asked to sign). Domains and addresses as
 * the protocols deploy them.
 */

type Fields = Array<{ name: string; type: string }>;

/** ProjectOpenSea/seaport-js src/constants.ts, EIP_712_ORDER_TYPE (Seaport 1.1–1.6). */
export const SEAPORT_TYPES: Record<string, Fields> = {
  OrderComponents: [
    { name: 'offerer', type: 'address' },
    { name: 'zone', type: 'address' },
    { name: 'offer', type: 'OfferItem[]' },
    { name: 'consideration', type: 'ConsiderationItem[]' },
    { name: 'orderType', type: 'uint8' },
    { name: 'startTime', type: 'uint256' },
    { name: 'endTime', type: 'uint256' },
    { name: 'zoneHash', type: 'bytes32' },
    { name: 'salt', type: 'uint256' },
    { name: 'conduitKey', type: 'bytes32' },
    { name: 'counter', type: 'uint256' },
  ],
  OfferItem: [
    { name: 'itemType', type: 'uint8' },
    { name: 'token', type: 'address' },
    { name: 'identifierOrCriteria', type: 'uint256' },
    { name: 'startAmount', type: 'uint256' },
    { name: 'endAmount', type: 'uint256' },
  ],
  ConsiderationItem: [
    { name: 'itemType', type: 'uint8' },
    { name: 'token', type: 'address' },
    { name: 'identifierOrCriteria', type: 'uint256' },
    { name: 'startAmount', type: 'uint256' },
    { name: 'endAmount', type: 'uint256' },
    { name: 'recipient', type: 'address' },
  ],
};
/** Seaport 1.6, its canonical cross-chain address (ProjectOpenSea/seaport README.md). */
export const SEAPORT_16 = '0x0000000000000068F116a894984e2DB1123eB395';

/** cowprotocol/contracts src/ts/order.ts, ORDER_TYPE_FIELDS. */
export const COW_TYPES: Record<string, Fields> = {
  Order: [
    { name: 'sellToken', type: 'address' },
    { name: 'buyToken', type: 'address' },
    { name: 'receiver', type: 'address' },
    { name: 'sellAmount', type: 'uint256' },
    { name: 'buyAmount', type: 'uint256' },
    { name: 'validTo', type: 'uint32' },
    { name: 'appData', type: 'bytes32' },
    { name: 'feeAmount', type: 'uint256' },
    { name: 'kind', type: 'string' },
    { name: 'partiallyFillable', type: 'bool' },
    { name: 'sellTokenBalance', type: 'string' },
    { name: 'buyTokenBalance', type: 'string' },
  ],
};
/** GPv2Settlement (cowprotocol/contracts networks.json), domain "Gnosis Protocol" v2. */
export const COW_SETTLEMENT = '0x9008D19f58AAbD9eD0D60971565AA8510560ab41';

/** 1inch/limit-order-protocol contracts/OrderLib.sol, _LIMIT_ORDER_TYPEHASH (v4). */
export const ONEINCH_TYPES: Record<string, Fields> = {
  Order: [
    { name: 'salt', type: 'uint256' },
    { name: 'maker', type: 'address' },
    { name: 'receiver', type: 'address' },
    { name: 'makerAsset', type: 'address' },
    { name: 'takerAsset', type: 'address' },
    { name: 'makingAmount', type: 'uint256' },
    { name: 'takingAmount', type: 'uint256' },
    { name: 'makerTraits', type: 'uint256' },
  ],
};
/** Aggregation Router v6, which carries the limit order protocol v4; domain "1inch Aggregation Router" 6. */
export const ONEINCH_ROUTER = '0x111111125421cA6dc452d289314280a0f8842A65';

/** Permit2's PermitWitnessTransferFrom with the witness type `witness` (Uniswap/permit2-sdk). */
const permitWitness = (witness: string): Record<string, Fields> => ({
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: witness },
  ],
  TokenPermissions: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ],
});
/** Uniswap/sdks sdks/uniswapx-sdk/src/order/*.ts (OrderInfo in each). */
const ORDER_INFO: Fields = [
  { name: 'reactor', type: 'address' },
  { name: 'swapper', type: 'address' },
  { name: 'nonce', type: 'uint256' },
  { name: 'deadline', type: 'uint256' },
  { name: 'additionalValidationContract', type: 'address' },
  { name: 'additionalValidationData', type: 'bytes' },
];
const DUTCH_OUTPUT: Fields = [
  { name: 'token', type: 'address' },
  { name: 'startAmount', type: 'uint256' },
  { name: 'endAmount', type: 'uint256' },
  { name: 'recipient', type: 'address' },
];

/** uniswapx-sdk src/order/DutchOrder.ts, DUTCH_ORDER_TYPES. */
export const UNISWAPX_EXCLUSIVE_DUTCH_TYPES: Record<string, Fields> = {
  ...permitWitness('ExclusiveDutchOrder'),
  ExclusiveDutchOrder: [
    { name: 'info', type: 'OrderInfo' },
    { name: 'decayStartTime', type: 'uint256' },
    { name: 'decayEndTime', type: 'uint256' },
    { name: 'exclusiveFiller', type: 'address' },
    { name: 'exclusivityOverrideBps', type: 'uint256' },
    { name: 'inputToken', type: 'address' },
    { name: 'inputStartAmount', type: 'uint256' },
    { name: 'inputEndAmount', type: 'uint256' },
    { name: 'outputs', type: 'DutchOutput[]' },
  ],
  OrderInfo: ORDER_INFO,
  DutchOutput: DUTCH_OUTPUT,
};

/** Uniswap/UniswapX src/lib/DutchOrderLib.sol, DUTCH_LIMIT_ORDER_TYPE (the first reactor's). */
export const UNISWAPX_DUTCH_TYPES: Record<string, Fields> = {
  ...permitWitness('DutchOrder'),
  DutchOrder: [
    { name: 'info', type: 'OrderInfo' },
    { name: 'decayStartTime', type: 'uint256' },
    { name: 'decayEndTime', type: 'uint256' },
    { name: 'inputToken', type: 'address' },
    { name: 'inputStartAmount', type: 'uint256' },
    { name: 'inputEndAmount', type: 'uint256' },
    { name: 'outputs', type: 'DutchOutput[]' },
  ],
  OrderInfo: ORDER_INFO,
  DutchOutput: DUTCH_OUTPUT,
};

/** uniswapx-sdk src/order/V2DutchOrder.ts, V2_DUTCH_ORDER_TYPES. */
export const UNISWAPX_V2_DUTCH_TYPES: Record<string, Fields> = {
  ...permitWitness('V2DutchOrder'),
  V2DutchOrder: [
    { name: 'info', type: 'OrderInfo' },
    { name: 'cosigner', type: 'address' },
    { name: 'baseInputToken', type: 'address' },
    { name: 'baseInputStartAmount', type: 'uint256' },
    { name: 'baseInputEndAmount', type: 'uint256' },
    { name: 'baseOutputs', type: 'DutchOutput[]' },
  ],
  OrderInfo: ORDER_INFO,
  DutchOutput: DUTCH_OUTPUT,
};

/** uniswapx-sdk src/order/V3DutchOrder.ts, V3_DUTCH_ORDER_TYPES. */
export const UNISWAPX_V3_DUTCH_TYPES: Record<string, Fields> = {
  ...permitWitness('V3DutchOrder'),
  V3DutchOrder: [
    { name: 'info', type: 'OrderInfo' },
    { name: 'cosigner', type: 'address' },
    { name: 'startingBaseFee', type: 'uint256' },
    { name: 'baseInput', type: 'V3DutchInput' },
    { name: 'baseOutputs', type: 'V3DutchOutput[]' },
  ],
  OrderInfo: ORDER_INFO,
  V3DutchInput: [
    { name: 'token', type: 'address' },
    { name: 'startAmount', type: 'uint256' },
    { name: 'curve', type: 'NonlinearDutchDecay' },
    { name: 'maxAmount', type: 'uint256' },
    { name: 'adjustmentPerGweiBaseFee', type: 'uint256' },
  ],
  V3DutchOutput: [
    { name: 'token', type: 'address' },
    { name: 'startAmount', type: 'uint256' },
    { name: 'curve', type: 'NonlinearDutchDecay' },
    { name: 'recipient', type: 'address' },
    { name: 'minAmount', type: 'uint256' },
    { name: 'adjustmentPerGweiBaseFee', type: 'uint256' },
  ],
  NonlinearDutchDecay: [
    { name: 'relativeBlocks', type: 'uint256' },
    { name: 'relativeAmounts', type: 'int256[]' },
  ],
};

/** uniswapx-sdk src/order/PriorityOrder.ts, PRIORITY_ORDER_TYPES. */
export const UNISWAPX_PRIORITY_TYPES: Record<string, Fields> = {
  ...permitWitness('PriorityOrder'),
  PriorityOrder: [
    { name: 'info', type: 'OrderInfo' },
    { name: 'cosigner', type: 'address' },
    { name: 'auctionStartBlock', type: 'uint256' },
    { name: 'baselinePriorityFeeWei', type: 'uint256' },
    { name: 'input', type: 'PriorityInput' },
    { name: 'outputs', type: 'PriorityOutput[]' },
  ],
  OrderInfo: ORDER_INFO,
  PriorityInput: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
    { name: 'mpsPerPriorityFeeWei', type: 'uint256' },
  ],
  PriorityOutput: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
    { name: 'mpsPerPriorityFeeWei', type: 'uint256' },
    { name: 'recipient', type: 'address' },
  ],
};
/** The priority reactor on Base (uniswapx-sdk src/constants.ts, REACTOR_ADDRESS_MAPPING[8453]). */
export const UNISWAPX_PRIORITY_REACTOR_BASE = '0x000000001Ec5656dcdB24D90DFa42742738De729';
