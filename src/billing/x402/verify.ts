/**
 * Checks a decoded payment against our offer, with no I/O: scheme, network, the v2 `accepted`
 * offer, recipient, exact amount, validity window, and the EIP-712 signature over our own domain.
 * The order puts the cheap field checks first so a tampered field is named for what it is, before
 * the signature (which any tampering also breaks) is even recovered.
 */
import { TypedDataEncoder, keccak256, toUtf8Bytes } from 'ethers';
import { keccak256 as keccak } from '../../crypto/keccak.js';
import {
  EIP712_DOMAIN,
  MIN_VALIDITY_SECONDS,
  NETWORK_V1,
  NETWORK_V2,
  PRICE_ATOMIC,
  SCHEME,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
  CLOCK_SKEW_SECONDS,
} from './constants.js';
import type { Authorization, DecodedPayment, Offers, Rejection, RequirementsV2 } from './types.js';
import { recoverSigner } from './secp.js';
import { hexWord, uintWord } from './chain.js';

/** secp256k1 n / 2: the token rejects signatures with a higher s (EIP-2), so we do too. */
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

const DOMAIN_SEPARATOR = TypedDataEncoder.hashDomain(EIP712_DOMAIN);
/** 0x1901 ‖ domain separator: the digest's first 34 bytes. */
const DIGEST_PREFIX = Buffer.concat([Buffer.from([0x19, 0x01]), Buffer.from(DOMAIN_SEPARATOR.slice(2), 'hex')]);
const TYPE_HASH = keccak256(
  toUtf8Bytes(TypedDataEncoder.from(TRANSFER_WITH_AUTHORIZATION_TYPES).encodeType('TransferWithAuthorization')),
);

/**
 * The EIP-712 digest of a TransferWithAuthorization on our domain, encoded by hand for this one
 * fixed struct (ethers' generic encoder costs ten times as much); test/billing/x402 checks it
 * against TypedDataEncoder. Fields are as the header parser let them through: addresses and the
 * nonce are hex of the right length, amounts decimal.
 */
export function transferDigest(a: Authorization): string {
  const struct = keccak(
    Buffer.from(
      `${TYPE_HASH.slice(2)}${hexWord(a.from)}${hexWord(a.to)}${uintWord(a.value)}${uintWord(a.validAfter)}${uintWord(a.validBefore)}${hexWord(a.nonce)}`,
      'hex',
    ),
  );
  const message = Buffer.allocUnsafe(66);
  message.set(DIGEST_PREFIX, 0);
  message.set(struct, 34);
  return `0x${keccak(message).toString('hex')}`;
}

/**
 * Whether the payment can buy an answer now. `settleBeforeAnswer` (X402_SETTLE_BEFORE_RESPONSE)
 * refuses a validAfter still in the future, since that transfer cannot land before the answer;
 * otherwise one up to CLOCK_SKEW_SECONDS ahead is accepted and settled once it is valid.
 */
export function checkPayment(
  p: DecodedPayment,
  offers: Offers,
  nowSeconds: number,
  settleBeforeAnswer = false,
): Rejection | null {
  const a = p.payload.authorization;
  const reject = (reason: Rejection['reason'], detail: string): Rejection => ({ reason, detail, payer: a.from });

  if (p.scheme !== SCHEME)
    return reject('invalid_scheme', `Only the "exact" scheme is accepted, got ${JSON.stringify(p.scheme)}.`);
  const network = p.version === 2 ? NETWORK_V2 : NETWORK_V1;
  if (p.network !== network)
    return reject('invalid_network', `Payments are taken on ${network}, got ${JSON.stringify(p.network)}.`);
  if (p.version === 2) {
    const mismatch = acceptedMismatch(p.accepted, offers.v2);
    if (mismatch !== null) return reject(mismatch.reason, mismatch.detail);
  }
  if (a.to.toLowerCase() !== offers.v1.payTo.toLowerCase()) {
    return reject(
      'invalid_exact_evm_payload_recipient_mismatch',
      'authorization.to is not the payTo address of the offer.',
    );
  }
  if (BigInt(a.value) !== BigInt(PRICE_ATOMIC)) {
    return reject(
      'invalid_exact_evm_payload_authorization_value',
      `authorization.value must be exactly ${PRICE_ATOMIC} (0.01 USDC), got ${a.value}.`,
    );
  }
  const now = BigInt(nowSeconds);
  const skew = BigInt(CLOCK_SKEW_SECONDS);
  if (BigInt(a.validAfter) > (settleBeforeAnswer ? now : now + skew)) {
    return reject(
      'invalid_exact_evm_payload_authorization_valid_after',
      settleBeforeAnswer
        ? 'The authorization is not valid yet (validAfter is in the future).'
        : `The authorization is not valid yet (validAfter is more than ${CLOCK_SKEW_SECONDS} s in the future).`,
    );
  }
  const validBefore = BigInt(a.validBefore);
  if (validBefore < now + BigInt(MIN_VALIDITY_SECONDS)) {
    return reject(
      'invalid_exact_evm_payload_authorization_valid_before',
      `The authorization has expired or expires within ${MIN_VALIDITY_SECONDS} s.`,
    );
  }
  if (validBefore > now + BigInt(offers.v1.maxTimeoutSeconds) + skew) {
    return reject(
      'invalid_exact_evm_payload_authorization_valid_before',
      `validBefore is more than maxTimeoutSeconds (${offers.v1.maxTimeoutSeconds}) + ${CLOCK_SKEW_SECONDS} s away.`,
    );
  }
  const problem = signatureProblem(p);
  return problem === null ? null : reject('invalid_exact_evm_payload_signature', problem);
}

/** Why the signature does not prove `authorization.from` signed this transfer on our domain. */
function signatureProblem(p: DecodedPayment): string | null {
  const { signature, authorization: a } = p.payload;
  if (signature.length !== 132) return 'The signature must be 65 bytes (an EOA signature).';
  // r ‖ s ‖ v, read from the hex: ethers refuses to even expose a high s, so check it here.
  const sValue = BigInt('0x' + signature.slice(66, 130));
  const v = signature.slice(130).toLowerCase();
  if (sValue > HALF_N || (v !== '1b' && v !== '1c')) {
    return 'The signature is not in the canonical form the token accepts (low s, v 27 or 28).';
  }
  let recovered: string;
  try {
    recovered = recoverSigner(transferDigest(a), signature);
  } catch {
    return 'The signature does not recover to an address.';
  }
  if (recovered.toLowerCase() !== a.from.toLowerCase()) {
    return 'The signature was not made by authorization.from over this transfer on the USD Coin (Base) EIP-712 domain.';
  }
  return null;
}

/** v2: `accepted` must be our offer, field for field (addresses compared case-insensitively). */
function acceptedMismatch(
  accepted: unknown,
  offer: RequirementsV2,
): { reason: Rejection['reason']; detail: string } | null {
  const acc = accepted as Record<string, unknown>;
  const same = (x: unknown, y: string) => typeof x === 'string' && x.toLowerCase() === y.toLowerCase();
  if (!same(acc.payTo, offer.payTo))
    return {
      reason: 'invalid_exact_evm_payload_recipient_mismatch',
      detail: 'accepted.payTo is not our payTo address.',
    };
  if (acc.amount !== offer.amount)
    return {
      reason: 'invalid_exact_evm_payload_authorization_value',
      detail: `accepted.amount must be ${offer.amount}.`,
    };
  if (!same(acc.asset, offer.asset))
    return { reason: 'invalid_payment_requirements', detail: 'accepted.asset is not USDC on Base.' };
  const normalized = { ...acc, payTo: offer.payTo, asset: offer.asset };
  if (canonical(normalized) !== canonical(offer)) {
    return {
      reason: 'invalid_payment_requirements',
      detail: '`accepted` is not one of the offers in PAYMENT-REQUIRED (maxTimeoutSeconds or extra differ).',
    };
  }
  return null;
}

/** JSON with object keys sorted, so two equal values give one string. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const entries = Object.entries(v)
      .filter(([, x]) => x !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}
