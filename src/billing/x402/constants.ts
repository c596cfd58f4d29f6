/**
 * The one payment this service takes: 0.01 USDC on Base, exact scheme, EIP-3009. The EIP-712
 * domain is ours, never the client's: a signature made for any other domain recovers to some
 * other address and is rejected.
 */
import { CHAIN_IDS } from '../../config.js';
import { NETWORK_V1, NETWORK_V2, PRICE_ATOMIC, USDC_BASE } from '../../pricing.js';

/** 0.01 USD in USDC atomic units (6 decimals). Integers only: money never touches a float. */
export { NETWORK_V1, NETWORK_V2, PRICE_ATOMIC, USDC_BASE };
export const CHAIN_ID = CHAIN_IDS.base;
export const SCHEME = 'exact';
export const MIME_TYPE = 'application/json';
export { SIGNUP_PATH as API_KEY_SIGNUP_PATH } from '../../http/endpoints.js';

export const EIP712_DOMAIN = Object.freeze({
  name: 'USD Coin',
  version: '2',
  chainId: CHAIN_ID,
  verifyingContract: USDC_BASE,
});

export const TRANSFER_WITH_AUTHORIZATION_TYPES = Object.freeze({
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
});

/** An authorization must stay valid this long after we accept it, so settlement can still land. */
export const MIN_VALIDITY_SECONDS = 6;
/**
 * Clock skew tolerated between a payer and us, on both ends of the window (docs/x402.md): a
 * validAfter up to this far in our future is accepted (settlement waits for it), and a validBefore
 * may lie this far beyond maxTimeoutSeconds. Windows further out are refused as absurd.
 */
export const CLOCK_SKEW_SECONDS = 300;

export const HEADER_V1 = 'x-payment';
export const HEADER_V2 = 'payment-signature';
export const RECEIPT_V1 = 'X-PAYMENT-RESPONSE';
export const RECEIPT_V2 = 'PAYMENT-RESPONSE';
export const CHALLENGE_V2 = 'PAYMENT-REQUIRED';
