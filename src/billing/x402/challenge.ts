/**
 * The 402 answer, readable by both protocol versions at once: the v2 PaymentRequired in the
 * `PAYMENT-REQUIRED` header and the v1 one as the JSON body. Receipts go in the header matching the
 * version the client paid with.
 */
import type { ServerResponse } from 'node:http';
import { requestOrigin, requestPath, type ApiRequest } from '../../http/api.js';
import { sendJson } from '../../http/errors.js';
import type { Config } from '../../config.js';
import {
  API_KEY_SIGNUP_PATH,
  CHALLENGE_V2,
  EIP712_DOMAIN,
  MIME_TYPE,
  NETWORK_V1,
  NETWORK_V2,
  PRICE_ATOMIC,
  RECEIPT_V1,
  RECEIPT_V2,
  SCHEME,
  USDC_BASE,
} from './constants.js';
import { BAZAAR, PAYMENT_IDENTIFIER, bazaarDeclaration, paymentIdentifierDeclaration } from './extensions.js';
import type { ErrorReason, Offers, PaymentRequiredV1, PaymentRequiredV2 } from './types.js';

/** The full URL of the request, on the operator's public base URL when one is configured. */
export function resourceUrl(config: Pick<Config, 'publicBaseUrl' | 'trustProxy'>, req: ApiRequest): string {
  const base = config.publicBaseUrl ?? requestOrigin(req, config.trustProxy);
  return base + (req.originalUrl ?? req.url ?? '/');
}

export function buildOffers(
  config: Pick<Config, 'publicBaseUrl' | 'trustProxy' | 'x402PayTo' | 'x402MaxTimeoutSeconds'>,
  req: ApiRequest,
): Offers {
  if (config.x402PayTo === null) throw new Error('x402 offers need X402_PAY_TO');
  const url = resourceUrl(config, req);
  const description = `One paid call to ${req.method} ${requestPath(req)}: 0.01 USDC on Base per answer.`;
  const extra = { name: EIP712_DOMAIN.name, version: EIP712_DOMAIN.version };
  const extensions: Record<string, unknown> = { [PAYMENT_IDENTIFIER]: paymentIdentifierDeclaration() };
  const bazaar = req.method === 'POST' ? bazaarDeclaration(requestPath(req)) : null;
  if (bazaar !== null) extensions[BAZAAR] = bazaar;
  return {
    extensions,
    resource: { url, description, mimeType: MIME_TYPE },
    v1: {
      scheme: SCHEME,
      network: NETWORK_V1,
      maxAmountRequired: PRICE_ATOMIC,
      resource: url,
      description,
      mimeType: MIME_TYPE,
      payTo: config.x402PayTo,
      maxTimeoutSeconds: config.x402MaxTimeoutSeconds,
      asset: USDC_BASE,
      extra: { ...extra },
    },
    v2: {
      scheme: SCHEME,
      network: NETWORK_V2,
      amount: PRICE_ATOMIC,
      asset: USDC_BASE,
      payTo: config.x402PayTo,
      maxTimeoutSeconds: config.x402MaxTimeoutSeconds,
      extra: { ...extra },
    },
  };
}

export function encodeHeaderJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

export interface Receipt {
  success: boolean;
  errorReason?: ErrorReason;
  transaction: string;
  network: string;
  payer: string;
}

/** Sets `PAYMENT-RESPONSE` (v2) or `X-PAYMENT-RESPONSE` (v1), whichever the client paid with. */
export function setReceipt(res: ServerResponse, version: 1 | 2, r: Omit<Receipt, 'network'>): void {
  const receipt: Receipt = { ...r, network: version === 2 ? NETWORK_V2 : NETWORK_V1 };
  res.setHeader(version === 2 ? RECEIPT_V2 : RECEIPT_V1, encodeHeaderJson(receipt));
  res.setHeader('Access-Control-Expose-Headers', `${CHALLENGE_V2}, ${RECEIPT_V2}, ${RECEIPT_V1}`);
}

export interface ChallengeOptions {
  /** Machine-readable: a reason code after a refused payment. */
  error?: string;
  /** One human sentence on what went wrong. */
  detail?: string;
  /** One extra sentence, e.g. that an API key is the other way in. */
  note?: string;
}

export function sendChallenge(res: ServerResponse, offers: Offers, opts: ChallengeOptions = {}): void {
  const v2: PaymentRequiredV2 = {
    x402Version: 2,
    error: opts.error ?? 'PAYMENT-SIGNATURE header is required',
    resource: offers.resource,
    accepts: [offers.v2],
    extensions: offers.extensions,
  };
  const v1: PaymentRequiredV1 & Record<string, unknown> = {
    x402Version: 1,
    error: opts.error ?? 'X-PAYMENT header is required',
    accepts: [offers.v1],
  };
  if (opts.detail !== undefined) v1.detail = opts.detail;
  if (opts.note !== undefined) {
    v1.note = opts.note;
    v1.api_key_signup = API_KEY_SIGNUP_PATH;
  }
  res.setHeader(CHALLENGE_V2, encodeHeaderJson(v2));
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Access-Control-Expose-Headers', `${CHALLENGE_V2}, ${RECEIPT_V2}, ${RECEIPT_V1}`);
  sendJson(res, 402, v1);
}
