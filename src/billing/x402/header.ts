/**
 * Reads the payment header of a request: `PAYMENT-SIGNATURE` (x402 v2) or `X-PAYMENT` (v1), each
 * base64 of a JSON PaymentPayload. Three outcomes: no header; a header we cannot read at all
 * (bad base64 or JSON, answered 400); or a payload, possibly refused for its shape (answered 402).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { HEADER_V1, HEADER_V2 } from './constants.js';
import type { Authorization, DecodedPayment, ExactEvmPayload, Rejection } from './types.js';

export type HeaderResult =
  | { kind: 'none' }
  | { kind: 'malformed'; version: 1 | 2; detail: string }
  | { kind: 'rejected'; version: 1 | 2; rejection: Rejection }
  | { kind: 'payment'; payment: DecodedPayment };

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const UINT = /^[0-9]{1,78}$/;
const NONCE = /^0x[0-9a-fA-F]{64}$/;
const HEX = /^0x[0-9a-fA-F]*$/;

function headerValue(headers: IncomingHttpHeaders, name: string): string | null {
  const v = headers[name];
  const s = Array.isArray(v) ? v.join(',') : v;
  return s === undefined || s.trim() === '' ? null : s.trim();
}

export function hasPaymentHeader(headers: IncomingHttpHeaders): boolean {
  return headerValue(headers, HEADER_V2) !== null || headerValue(headers, HEADER_V1) !== null;
}

export function readPaymentHeader(headers: IncomingHttpHeaders): HeaderResult {
  const v2 = headerValue(headers, HEADER_V2);
  const v1 = headerValue(headers, HEADER_V1);
  if (v2 === null && v1 === null) return { kind: 'none' };
  if (v2 !== null && v1 !== null) {
    return {
      kind: 'malformed',
      version: 2,
      detail: 'Send one payment header: PAYMENT-SIGNATURE (x402 v2) or X-PAYMENT (x402 v1), not both.',
    };
  }
  const version: 1 | 2 = v2 !== null ? 2 : 1;
  const name = version === 2 ? 'PAYMENT-SIGNATURE' : 'X-PAYMENT';
  const text = (v2 ?? v1) as string;
  if (text.length % 4 !== 0 || !BASE64.test(text)) {
    return {
      kind: 'malformed',
      version,
      detail: `The ${name} header must be base64 (RFC 4648, with padding) of a JSON PaymentPayload.`,
    };
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(text, 'base64').toString('utf8'));
  } catch {
    return { kind: 'malformed', version, detail: `The ${name} header decodes from base64 but is not JSON.` };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return { kind: 'malformed', version, detail: `The ${name} header must hold a JSON object (a PaymentPayload).` };
  }
  return shape(version, name, json as Record<string, unknown>);
}

function shape(version: 1 | 2, name: string, raw: Record<string, unknown>): HeaderResult {
  const payloadPayer = payerOf(raw.payload);
  const reject = (reason: Rejection['reason'], detail: string): HeaderResult => ({
    kind: 'rejected',
    version,
    rejection: { reason, detail, payer: payloadPayer },
  });
  if (raw.x402Version !== version) {
    return reject(
      'invalid_x402_version',
      `${name} carries x402Version ${version}; got ${JSON.stringify(raw.x402Version ?? null)}.`,
    );
  }
  let scheme: unknown;
  let network: unknown;
  if (version === 2) {
    const acc = raw.accepted;
    if (typeof acc !== 'object' || acc === null)
      return reject('invalid_payload', 'A v2 PaymentPayload needs `accepted`: the offer being paid.');
    scheme = (acc as Record<string, unknown>).scheme;
    network = (acc as Record<string, unknown>).network;
  } else {
    scheme = raw.scheme;
    network = raw.network;
  }
  if (typeof scheme !== 'string' || typeof network !== 'string') {
    return reject('invalid_payload', 'The PaymentPayload needs a string `scheme` and `network`.');
  }
  const payload = exactPayload(raw.payload);
  if (typeof payload === 'string') return reject('invalid_payload', payload);
  return {
    kind: 'payment',
    payment: { version, raw, scheme, network, accepted: version === 2 ? raw.accepted : null, payload },
  };
}

function payerOf(payload: unknown): string {
  const from = (payload as { authorization?: { from?: unknown } } | null)?.authorization?.from;
  return typeof from === 'string' && ADDRESS.test(from) ? from : '';
}

/** The EIP-3009 payload, or a sentence saying what is wrong with it. */
function exactPayload(p: unknown): ExactEvmPayload | string {
  if (typeof p !== 'object' || p === null) return '`payload` must be an object with `signature` and `authorization`.';
  const { signature, authorization } = p as Record<string, unknown>;
  if (typeof signature !== 'string' || !HEX.test(signature)) return '`payload.signature` must be 0x-prefixed hex.';
  if (typeof authorization !== 'object' || authorization === null) return '`payload.authorization` must be an object.';
  const a = authorization as Record<string, unknown>;
  const fields: Array<[keyof Authorization, RegExp, string]> = [
    ['from', ADDRESS, 'an address'],
    ['to', ADDRESS, 'an address'],
    ['value', UINT, 'a decimal integer string'],
    ['validAfter', UINT, 'a decimal integer string'],
    ['validBefore', UINT, 'a decimal integer string'],
    ['nonce', NONCE, '32 bytes of 0x-prefixed hex'],
  ];
  for (const [field, re, what] of fields) {
    const v = a[field];
    if (typeof v !== 'string' || !re.test(v)) return `\`payload.authorization.${field}\` must be ${what}.`;
  }
  const auth = Object.fromEntries(fields.map(([f]) => [f, a[f] as string])) as unknown as Authorization;
  return { signature, authorization: auth };
}
