/** Wire shapes of x402 v1 and v2 (exact scheme, EVM) as this service sends and accepts them. */

/** EIP-3009 authorization; every number is a decimal string, the nonce 32 bytes of hex. */
export interface Authorization {
  from: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: string;
}

export interface ExactEvmPayload {
  signature: string;
  authorization: Authorization;
}

export interface Eip712Extra {
  name: string;
  version: string;
}

/** v1 PaymentRequirements: one entry of the 402 body's `accepts`. */
export interface RequirementsV1 {
  scheme: string;
  network: string;
  maxAmountRequired: string;
  resource: string;
  description: string;
  mimeType: string;
  payTo: string;
  maxTimeoutSeconds: number;
  asset: string;
  extra: Eip712Extra;
}

/** v2 PaymentRequirements: one entry of `accepts`; a paying client echoes it as `accepted`. */
export interface RequirementsV2 {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Eip712Extra;
}

export interface ResourceInfo {
  url: string;
  description: string;
  mimeType: string;
}

export interface PaymentRequiredV1 {
  x402Version: 1;
  error: string;
  accepts: RequirementsV1[];
}

export interface PaymentRequiredV2 {
  x402Version: 2;
  error: string;
  resource: ResourceInfo;
  accepts: RequirementsV2[];
  /** payment-identifier and bazaar (docs/x402.md §9, §10). */
  extensions?: Record<string, unknown>;
}

/** The offers for one request: the same price stated in both protocol versions. */
export interface Offers {
  v1: RequirementsV1;
  v2: RequirementsV2;
  resource: ResourceInfo;
  /** The v2 challenge's extensions for this endpoint. */
  extensions: Record<string, unknown>;
}

/** Error reasons, named as in the x402 specification's error codes. */
export type ErrorReason =
  | 'insufficient_funds'
  | 'invalid_exact_evm_payload_authorization_valid_after'
  | 'invalid_exact_evm_payload_authorization_valid_before'
  | 'invalid_exact_evm_payload_authorization_value'
  | 'invalid_exact_evm_payload_signature'
  | 'invalid_exact_evm_payload_recipient_mismatch'
  | 'invalid_network'
  | 'invalid_payload'
  | 'invalid_payment_requirements'
  | 'invalid_scheme'
  | 'invalid_x402_version'
  | 'invalid_transaction_state'
  | 'duplicate_settlement'
  | 'unexpected_verify_error'
  | 'unexpected_settle_error';

/** Why a payment was refused; `payer` is `authorization.from` when the header got that far. */
export interface Rejection {
  reason: ErrorReason;
  detail: string;
  payer: string;
}

/** A payment header decoded and shaped, not yet checked against our offer. */
export interface DecodedPayment {
  version: 1 | 2;
  /** The decoded JSON as sent; forwarded untouched to a facilitator. */
  raw: Record<string, unknown>;
  scheme: string;
  network: string;
  /** v2 only: the requirements the client says it accepted. */
  accepted: unknown;
  payload: ExactEvmPayload;
}

/** What the ledger keeps of a payment (PaymentRecord.payload, as JSON): enough to settle it later. */
export interface StoredPayment {
  x402Version: 1 | 2;
  /** The payment header's JSON as received, for a facilitator. */
  paymentPayload: Record<string, unknown>;
  /** The offer it paid, in the version's own shape. */
  paymentRequirements: RequirementsV1 | RequirementsV2;
  /** The validated EIP-3009 payload. */
  payload: ExactEvmPayload;
}
