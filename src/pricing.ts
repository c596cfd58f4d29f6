/** What one paid call costs, in integer atomic units (USDC has 6 decimals): 0.01 USDC. */
export const PRICE_ATOMIC = '10000';
export const USDC_DECIMALS = 6;
export const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
export const NETWORK_V1 = 'base';
export const NETWORK_V2 = 'eip155:8453';
export const PRICE_DISPLAY = '0.01 USDC on base';
/** The largest accepted body; the same number goes into the JSON parser and the docs. */
export const MAX_REQUEST_BODY_BYTES = 256 * 1024;
