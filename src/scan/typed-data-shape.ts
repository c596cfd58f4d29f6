/**
 * What a JSON schema cannot say about an EIP-712 message (docs/action-scan.md §1): every type a
 * struct names exists, the primary type is one of them, and each message value fits its declared
 * type (an address is 20 bytes, a uint fits its width, a bytesN has N bytes). Each problem is a
 * 422 detail whose `loc` points at the offending field, so a caller fixes the right thing.
 */
import { TypedDataEncoder, type TypedDataDomain } from 'ethers';
// ethers' hashes in this thread through the WebAssembly keccak (src/crypto/ethers-keccak.ts).
import '../crypto/ethers-keccak.js';
import { OldestFirst } from '../oldest-first.js';
import type { ValidationDetail } from '../wire.js';

type Loc = Array<string | number>;
type Field = { name: string; type: string };
export interface TypedDataInput {
  domain: Record<string, unknown>;
  types: Record<string, Field[]>;
  primaryType: string;
  message: Record<string, unknown>;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEX = /^0x([0-9a-fA-F]{2})*$/;
const DEC = /^-?[0-9]{1,80}$/;
const HEXINT = /^-?0x[0-9a-fA-F]{1,80}$/;
const INT = /^(u?)int([0-9]{0,3})$/;
const BYTES_N = /^bytes([0-9]{1,2})$/;
const ARRAY = /^(.+)\[([0-9]*)\]$/;
/** The domain's own fields and their types (EIP-712); a domain type in `types` must use these. */
export const DOMAIN_FIELDS: Readonly<Record<string, string>> = {
  name: 'string',
  version: 'string',
  chainId: 'uint256',
  verifyingContract: 'address',
  salt: 'bytes32',
};

/** A primitive EIP-712 type's name is valid (uint8..uint256 in steps of 8, bytes1..bytes32, ...). */
function primitive(type: string): boolean {
  if (type === 'address' || type === 'bool' || type === 'string' || type === 'bytes') return true;
  const i = INT.exec(type);
  if (i) {
    const bits = i[2] === '' ? 256 : Number(i[2]);
    return bits >= 8 && bits <= 256 && bits % 8 === 0;
  }
  const b = BYTES_N.exec(type);
  return b !== null && Number(b[1]) >= 1 && Number(b[1]) <= 32;
}

function typeKnown(type: string, types: Record<string, Field[]>): boolean {
  const a = ARRAY.exec(type);
  if (a) return typeKnown(a[1], types);
  return primitive(type) || Object.hasOwn(types, type);
}

/** An integer from a JSON number, a decimal or a 0x hex string; null when it is none of them. */
export function toBigInt(v: unknown): bigint | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : null;
  if (typeof v === 'bigint') return v;
  if (typeof v !== 'string') return null;
  if (DEC.test(v)) return BigInt(v);
  if (HEXINT.test(v)) return v.startsWith('-') ? -BigInt(v.slice(1)) : BigInt(v);
  return null;
}

function valueProblem(
  type: string,
  v: unknown,
  types: Record<string, Field[]>,
  loc: Loc,
  out: ValidationDetail[],
): void {
  if (out.length >= 16) return;
  const a = ARRAY.exec(type);
  if (a) {
    if (!Array.isArray(v)) {
      out.push({ loc, msg: `Input should be a list of ${a[1]}`, type: 'list_type' });
      return;
    }
    if (a[2] !== '' && v.length !== Number(a[2])) {
      out.push({ loc, msg: `List should have exactly ${a[2]} items (${type})`, type: 'list_length' });
      return;
    }
    for (let i = 0; i < v.length; i++) valueProblem(a[1], v[i], types, [...loc, i], out);
    return;
  }
  if (Object.hasOwn(types, type)) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      out.push({ loc, msg: `Input should be an object of type ${type}`, type: 'dict_type' });
      return;
    }
    structProblems(type, v as Record<string, unknown>, types, loc, out);
    return;
  }
  const i = INT.exec(type);
  if (i) {
    const n = toBigInt(v);
    const bits = BigInt(i[2] === '' ? 256 : Number(i[2]));
    const [lo, hi] = i[1] === 'u' ? [0n, (1n << bits) - 1n] : [-(1n << (bits - 1n)), (1n << (bits - 1n)) - 1n];
    if (n === null)
      out.push({
        loc,
        msg: `Input should be an integer (${type}): a number, a decimal or a 0x hex string`,
        type: 'int_parsing',
      });
    else if (n < lo || n > hi) out.push({ loc, msg: `Input should fit ${type} (${lo} to ${hi})`, type: 'int_range' });
    return;
  }
  if (type === 'address') {
    if (typeof v !== 'string' || !ADDRESS.test(v))
      out.push({ loc, msg: 'Input should be a 0x-prefixed 20-byte hex address', type: 'address_invalid' });
    return;
  }
  if (type === 'bool') {
    if (typeof v !== 'boolean') out.push({ loc, msg: 'Input should be a valid boolean', type: 'bool_type' });
    return;
  }
  if (type === 'string') {
    if (typeof v !== 'string') out.push({ loc, msg: 'Input should be a valid string', type: 'string_type' });
    return;
  }
  if (type === 'bytes') {
    if (typeof v !== 'string' || !HEX.test(v))
      out.push({ loc, msg: 'Input should be 0x-prefixed hex bytes (an even number of digits)', type: 'hex_invalid' });
    return;
  }
  const b = BYTES_N.exec(type);
  if (b && (typeof v !== 'string' || !HEX.test(v) || (v.length - 2) / 2 !== Number(b[1])))
    out.push({ loc, msg: `Input should be 0x-prefixed hex of exactly ${b[1]} bytes (${type})`, type: 'hex_invalid' });
}

function structProblems(
  type: string,
  value: Record<string, unknown>,
  types: Record<string, Field[]>,
  loc: Loc,
  out: ValidationDetail[],
): void {
  for (const f of types[type]) {
    if (!Object.hasOwn(value, f.name) || value[f.name] === undefined) {
      out.push({ loc: [...loc, f.name], msg: `Field required (${type}.${f.name}: ${f.type})`, type: 'missing' });
      continue;
    }
    valueProblem(f.type, value[f.name], types, [...loc, f.name], out);
  }
}

/** Every problem of a schema-valid `typed_data`, with `loc` from `base` (e.g. body.typed_data). */
export function typedDataProblems(td: TypedDataInput, base: Loc): ValidationDetail[] {
  const out: ValidationDetail[] = [];
  for (const [name, fields] of Object.entries(td.types)) {
    const seen = new Set<string>();
    fields.forEach((f, i) => {
      if (seen.has(f.name))
        out.push({
          loc: [...base, 'types', name, i, 'name'],
          msg: `Field ${f.name} is declared twice in ${name}`,
          type: 'value_error',
        });
      seen.add(f.name);
      if (!typeKnown(f.type, td.types))
        out.push({
          loc: [...base, 'types', name, i, 'type'],
          msg: `Type ${f.type} is neither an EIP-712 primitive nor a struct in types`,
          type: 'value_error',
        });
      else if (name === 'EIP712Domain' && DOMAIN_FIELDS[f.name] !== f.type)
        out.push({
          loc: [...base, 'types', name, i],
          msg: `EIP712Domain allows name string, version string, chainId uint256, verifyingContract address, salt bytes32`,
          type: 'value_error',
        });
    });
  }
  if (!Object.hasOwn(td.types, td.primaryType)) {
    out.push({
      loc: [...base, 'primaryType'],
      msg: `primaryType ${td.primaryType} is not one of the structs in types`,
      type: 'value_error',
    });
    return out;
  }
  if (out.length > 0) return out;
  structProblems(td.primaryType, td.message, td.types, [...base, 'message'], out);
  return out;
}

const UINT256_MAX = (1n << 256n) - 1n;

/**
 * The guard request's checks beyond its schema: `transaction.value` fits a uint256 and
 * `typed_data` is a well-formed EIP-712 message that ethers can hash. Empty when all is well.
 */
export function guardRequestProblems(body: {
  transaction?: { value?: string } | null;
  typed_data?: TypedDataInput | null;
}): ValidationDetail[] {
  const out: ValidationDetail[] = [];
  const value = body.transaction?.value;
  if (typeof value === 'string') {
    const n = toBigInt(value);
    if (n === null || n > UINT256_MAX)
      out.push({
        loc: ['body', 'transaction', 'value'],
        msg: 'Input should be a wei amount that fits a uint256',
        type: 'int_range',
      });
  }
  const td = body.typed_data;
  if (td) {
    const problems = typedDataProblems(td, ['body', 'typed_data']);
    out.push(...problems);
    if (problems.length === 0) {
      const chainId = td.domain.chainId;
      if (chainId !== undefined && toBigInt(chainId) === null)
        out.push({
          loc: ['body', 'typed_data', 'domain', 'chainId'],
          msg: 'Input should be an integer chain id',
          type: 'int_parsing',
        });
      else {
        const hashError = typedDataHashError(td);
        if (hashError)
          out.push({
            loc: ['body', 'typed_data'],
            msg: `Typed data cannot be hashed: ${hashError}`,
            type: 'value_error',
          });
      }
    }
  }
  return out;
}

const errorText = (err: unknown): string => (err as Error).message.split(' (')[0];

/**
 * What ethers made of a domain or a set of types, kept: a fleet's agents sign the same few domains
 * and order types again and again, and building them was half of the check's time (0.36 ms for a
 * CoW order on a slow host, 0.12 ms with them kept; bench/README.md "Twenty-eighth pass"). Keyed
 * by their JSON text, up to MEMO_KEY characters (longer ones are judged afresh), and MEMO_MAX
 * entries each, the oldest dropped first.
 */
const MEMO_MAX = 256;
const MEMO_KEY = 4096;
const DOMAINS = new OldestFirst(new Map<string, string | null>());
const ENCODERS = new OldestFirst(new Map<string, TypedDataEncoder | string>());

const remembered = <V>(memo: OldestFirst<string, V>, key: string, make: () => V): V =>
  key.length > MEMO_KEY ? make() : memo.remember(key, MEMO_MAX, make);

/**
 * An independent last word: ethers must hash what we accept (cyclic types, for one). The steps of
 * TypedDataEncoder.hash, in its order: the domain, the types, then the message's encoding (its
 * hash cannot fail once the encoding has not), so the first error is the one it would throw.
 */
function typedDataHashError(td: TypedDataInput): string | null {
  const domainError = remembered(DOMAINS, JSON.stringify(td.domain), () => {
    try {
      TypedDataEncoder.hashDomain(td.domain as TypedDataDomain);
      return null;
    } catch (err) {
      return errorText(err);
    }
  });
  if (domainError !== null) return domainError;
  const types = { ...td.types };
  delete types.EIP712Domain;
  const encoder = remembered(ENCODERS, JSON.stringify(types), () => {
    try {
      return TypedDataEncoder.from(types);
    } catch (err) {
      return errorText(err);
    }
  });
  if (typeof encoder === 'string') return encoder;
  try {
    encoder.encodeData(encoder.primaryType, td.message);
    return null;
  } catch (err) {
    return errorText(err);
  }
}
