/**
 * What an EIP-712 message allows, read from the shape of its `types` (docs/action-scan.md §4):
 * a struct is an EIP-2612 permit because its fields are a permit's, not because it is called
 * Permit. Permit2's allowance and signature-transfer messages (single and batch, witness variants
 * included) and EIP-3009 authorizations are recognised the same way. Pure.
 */
import { PERMIT2 } from './changes.js';
import type { TypedDataKind } from './rules.js';
import { type TypedDataInput, toBigInt } from './typed-data-shape.js';

type Fields = ReadonlyArray<{ name: string; type: string }>;

/** A struct's fields as "name type" strings. */
const sig = (fields: Fields | undefined): Set<string> => new Set((fields ?? []).map((f) => `${f.name} ${f.type}`));

/** `fields` has exactly `want` (order free), or at least `want` when `extra` is allowed. */
function shaped(fields: Fields | undefined, want: readonly string[], extra = false): boolean {
  const have = sig(fields);
  if (!want.every((w) => have.has(w))) return false;
  return extra || have.size === want.length;
}

const PERMIT = ['owner address', 'spender address', 'value uint256', 'nonce uint256', 'deadline uint256'];
const DAI_PERMIT = ['holder address', 'spender address', 'nonce uint256', 'expiry uint256', 'allowed bool'];
const PERMIT_DETAILS = ['token address', 'amount uint160', 'expiration uint48', 'nonce uint48'];
const TOKEN_PERMISSIONS = ['token address', 'amount uint256'];
const AUTHORIZATION = [
  'from address',
  'to address',
  'value uint256',
  'validAfter uint256',
  'validBefore uint256',
  'nonce bytes32',
];

/** The struct name a field of `fields` refers to (`details` → "PermitDetails"), array or not. */
function fieldType(fields: Fields, name: string): { struct: string; array: boolean } | null {
  const f = fields.find((x) => x.name === name);
  if (!f) return null;
  const array = f.type.endsWith('[]');
  return { struct: array ? f.type.slice(0, -2) : f.type, array };
}

/** The kind of `primaryType`, by its fields (and those of the structs it nests); null when none fits. */
export function kindOf(td: Pick<TypedDataInput, 'types' | 'primaryType'>): TypedDataKind | null {
  const fields = td.types[td.primaryType];
  if (!fields) return null;
  if (shaped(fields, PERMIT)) return 'eip2612_permit';
  if (shaped(fields, DAI_PERMIT)) return 'dai_permit';
  if (shaped(fields, AUTHORIZATION)) {
    // The two EIP-3009 structs differ only by name, which the type hash includes.
    if (td.primaryType === 'TransferWithAuthorization') return 'eip3009_transfer';
    if (td.primaryType === 'ReceiveWithAuthorization') return 'eip3009_receive';
    return null;
  }
  const details = fieldType(fields, 'details');
  if (details && shaped(fields, ['spender address', 'sigDeadline uint256'], true) && fields.length === 3) {
    if (!shaped(td.types[details.struct], PERMIT_DETAILS)) return null;
    return details.array ? 'permit2_batch' : 'permit2_single';
  }
  const permitted = fieldType(fields, 'permitted');
  // Witness variants add one field (the witness) after these; the typed hash covers it.
  if (permitted && shaped(fields, ['spender address', 'nonce uint256', 'deadline uint256'], true)) {
    if (!shaped(td.types[permitted.struct], TOKEN_PERMISSIONS)) return null;
    if (fields.length > 5) return null;
    return permitted.array ? 'permit2_batch_transfer' : 'permit2_transfer';
  }
  return null;
}

export interface ReadTypedData {
  kind: TypedDataKind | null;
  /** The domain's chain id, when given. */
  domainChainId: bigint | null;
  /** Lower case; null when the kind has none (or none is recognised). */
  owner: string | null;
  spender: string | null;
  /** What may move: token (lower case) and atomic amount. */
  grants: Array<{ token: string; amount: bigint }>;
  /** Unix seconds: deadline, expiration, sigDeadline, validBefore (whichever the kind has). */
  validUntil: bigint[];
  /** The domain's verifyingContract (lower case), when given. */
  verifyingContract: string | null;
  /** For Permit2 kinds: whether the domain names Permit2's own address. */
  permit2Domain: boolean | null;
}

const MAX_UINT256 = (1n << 256n) - 1n;
const addr = (v: unknown): string | null =>
  typeof v === 'string' && /^0x[0-9a-fA-F]{40}$/.test(v) ? v.toLowerCase() : null;
const int = (v: unknown): bigint => toBigInt(v) ?? 0n;
const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const list = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? v.map(obj) : [obj(v)]);

/** The message read by its kind. Assumes the message matched its types (guardRequestProblems). */
export function readTypedData(td: TypedDataInput): ReadTypedData {
  const kind = kindOf(td);
  const m = td.message;
  const verifyingContract = addr(td.domain.verifyingContract);
  const chainId = td.domain.chainId === undefined ? null : toBigInt(td.domain.chainId);
  const base = {
    kind,
    domainChainId: chainId,
    verifyingContract,
    permit2Domain: kind?.startsWith('permit2') ? verifyingContract === PERMIT2 : null,
  };
  const token = verifyingContract ?? '';
  switch (kind) {
    case 'eip2612_permit':
      return {
        ...base,
        owner: addr(m.owner),
        spender: addr(m.spender),
        grants: [{ token, amount: int(m.value) }],
        validUntil: [int(m.deadline)],
      };
    case 'dai_permit': {
      // DAI's permit grants all or nothing; an expiry of 0 never expires.
      const expiry = int(m.expiry);
      return {
        ...base,
        owner: addr(m.holder),
        spender: addr(m.spender),
        grants: m.allowed === true ? [{ token, amount: MAX_UINT256 }] : [],
        validUntil: [expiry === 0n ? MAX_UINT256 : expiry],
      };
    }
    case 'permit2_single':
    case 'permit2_batch': {
      const details = list(m.details);
      return {
        ...base,
        owner: null,
        spender: addr(m.spender),
        grants: details.map((d) => ({ token: addr(d.token) ?? '', amount: int(d.amount) })),
        validUntil: [...details.map((d) => int(d.expiration)), int(m.sigDeadline)],
      };
    }
    case 'permit2_transfer':
    case 'permit2_batch_transfer': {
      const permitted = list(m.permitted);
      return {
        ...base,
        owner: null,
        spender: addr(m.spender),
        grants: permitted.map((p) => ({ token: addr(p.token) ?? '', amount: int(p.amount) })),
        validUntil: [int(m.deadline)],
      };
    }
    case 'eip3009_transfer':
    case 'eip3009_receive':
      return {
        ...base,
        owner: addr(m.from),
        spender: addr(m.to),
        grants: [{ token, amount: int(m.value) }],
        validUntil: [int(m.validBefore)],
      };
    default:
      return { ...base, owner: null, spender: null, grants: [], validUntil: [] };
  }
}

/** Unix seconds as ISO 8601; null beyond year 9999 (a deadline of "never"). */
export function isoTime(s: bigint): string | null {
  if (s < 0n || s > 253_402_300_799n) return null;
  return new Date(Number(s) * 1000).toISOString();
}
