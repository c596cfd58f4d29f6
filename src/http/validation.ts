/**
 * Request validation with the precompiled validators, answering FastAPI-style 422 bodies:
 * one `detail` entry per problem, `loc` from "body" to the field, a sentence, a stable type code.
 */
import type { ApiHandler } from './api.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import * as validators from '../generated/validators.js';
import { HttpError } from './errors.js';
import type { ValidationDetail } from '../wire.js';
import { CHECK_TYPES } from '../schema-info.js';
import { orderProblems } from '../scan/orders.js';
import { guardRequestProblems } from '../scan/typed-data-shape.js';

export type SchemaId = keyof typeof validators;

const TYPE_CODES: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  integer: ['int_type', 'Input should be a valid integer'],
  number: ['float_type', 'Input should be a valid number'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  array: ['list_type', 'Input should be a valid list'],
  object: ['dict_type', 'Input should be a valid dictionary'],
};

/** Friendlier sentences for pattern-checked fields, by field name. */
const PATTERN_MESSAGES: Record<string, string> = {
  amount: 'Input should be a decimal integer string (e.g. "1000000") or a 0x-prefixed hex integer string',
  approval_amount: 'Input should be a decimal integer string (e.g. "1000000") or a 0x-prefixed hex integer string',
  tx_hash: 'Input should be a 0x-prefixed 32-byte hex transaction hash',
  contract_address: 'Input should be a 0x-prefixed 20-byte hex address',
  // GuardRequest.transaction and typed_data.domain (docs/action-scan.md §1)
  from: 'Input should be a 0x-prefixed 20-byte hex address',
  to: 'Input should be a 0x-prefixed 20-byte hex address',
  verifyingContract: 'Input should be a 0x-prefixed 20-byte hex address',
  value: 'Input should be a decimal integer string (e.g. "1000000") or a 0x-prefixed hex integer string',
  chainId: 'Input should be an integer, a decimal integer string or a 0x-prefixed hex integer string',
  data: 'Input should be 0x-prefixed hex bytes (an even number of digits)',
  salt: 'Input should be 0x-prefixed hex of exactly 32 bytes',
  // GuardRequest.authorization and transaction.authorization_list (docs/action-scan.md §6)
  authority: 'Input should be a 0x-prefixed 20-byte hex address',
  address: 'Input should be a 0x-prefixed 20-byte hex address',
  // Stored text: PostgreSQL cannot hold NUL in a text column.
  company: 'Input should not contain NUL (\\u0000) characters',
  full_name: 'Input should not contain NUL (\\u0000) characters',
  use_case: 'Input should not contain NUL (\\u0000) characters',
};

function quoteList(values: unknown[]): string {
  const q = values.filter((v) => v !== null).map((v) => `'${String(v)}'`);
  return q.length <= 1 ? q.join('') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

function pointerToLoc(pointer: string): Array<string | number> {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^(0|[1-9]\d*)$/.test(s) ? Number(s) : s));
}

function one(e: ErrorObject): ValidationDetail {
  const loc: Array<string | number> = ['body', ...pointerToLoc(e.instancePath)];
  const p = e.params as Record<string, any>;
  const field = loc[loc.length - 1];
  switch (e.keyword) {
    case 'required':
      return { loc: [...loc, p.missingProperty], msg: 'Field required', type: 'missing' };
    case 'type': {
      const first = String(p.type).split(',')[0];
      if (loc.length === 1)
        return {
          loc,
          msg: 'Input should be a valid dictionary or object to extract fields from',
          type: 'model_attributes_type',
        };
      const [type, msg] = TYPE_CODES[first] ?? ['type_error', `Input should be of type ${p.type}`];
      return { loc, msg, type };
    }
    case 'enum':
      return { loc, msg: `Input should be ${quoteList(p.allowedValues)}`, type: 'enum' };
    case 'const':
      return { loc, msg: `Input should be '${String(p.allowedValue)}'`, type: 'literal_error' };
    case 'format':
      if (p.format === 'uri')
        return {
          loc,
          msg: 'Input should be a valid absolute URL, such as https://example.com/status',
          type: 'url_parsing',
        };
      if (p.format === 'email') return { loc, msg: 'value is not a valid email address', type: 'value_error' };
      return { loc, msg: `Input should be a valid ${p.format}`, type: 'value_error' };
    case 'minLength':
      return {
        loc,
        msg: `String should have at least ${p.limit} character${p.limit === 1 ? '' : 's'}`,
        type: 'string_too_short',
      };
    case 'maxLength':
      return { loc, msg: `String should have at most ${p.limit} characters`, type: 'string_too_long' };
    case 'pattern':
      return {
        loc,
        msg: PATTERN_MESSAGES[String(field)] ?? `String should match pattern '${p.pattern}'`,
        type: 'string_pattern_mismatch',
      };
    case 'minItems':
      return { loc, msg: `List should have at least ${p.limit} item${p.limit === 1 ? '' : 's'}`, type: 'too_short' };
    case 'maxItems':
      return { loc, msg: `List should have at most ${p.limit} items`, type: 'too_long' };
    case 'maxProperties':
      return { loc, msg: `Object should have at most ${p.limit} entries`, type: 'too_long' };
    case 'minimum':
      return { loc, msg: `Input should be greater than or equal to ${p.limit}`, type: 'greater_than_equal' };
    case 'maximum':
      return { loc, msg: `Input should be less than or equal to ${p.limit}`, type: 'less_than_equal' };
    case 'discriminator': {
      const allowed = CHECK_TYPES.map((t) => `'${t}'`).join(', ');
      if (p.error === 'mapping') {
        return {
          loc,
          msg: `Input tag '${String(p.tagValue)}' found using 'type' does not match any of the expected tags: ${allowed}`,
          type: 'union_tag_invalid',
        };
      }
      return {
        loc,
        msg: `Unable to extract tag using discriminator 'type': it must be one of ${allowed}`,
        type: 'union_tag_not_found',
      };
    }
    default:
      return { loc, msg: e.message ?? 'Invalid value', type: e.keyword };
  }
}

export function toValidationDetail(errors: ErrorObject[]): ValidationDetail[] {
  const seen = new Set<string>();
  const out: ValidationDetail[] = [];
  for (const e of errors) {
    // A failed `oneOf` wrapper repeats what its branch already said.
    if (e.keyword === 'oneOf' || e.keyword === 'if') continue;
    const d = one(e);
    const key = JSON.stringify([d.loc, d.type]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(d);
  }
  return out;
}

export function validator(id: SchemaId): ValidateFunction {
  return validators[id] as unknown as ValidateFunction;
}

/**
 * Deepest nesting of objects and arrays a body may have (the body itself is level 1). Free-form
 * fields (`constraints`, `context`, rpc `params`) are echoed, hashed and serialised by recursive
 * code, which a body of a few hundred KiB nested thousands deep would overflow.
 */
export const MAX_DEPTH = 64;

// An unpaired UTF-16 surrogate: JSON can carry one as a \ud800 escape, but it is no Unicode text,
// and URL encoding, UTF-8 storage and upstream APIs all fail on it (I-JSON, RFC 7493 §2.1).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

interface Frame {
  value: unknown;
  depth: number;
  key: string | number;
  parent: Frame | null;
}

function locOf(f: Frame, key?: string): Array<string | number> {
  const loc: Array<string | number> = key === undefined ? [] : [key];
  for (let p: Frame | null = f; p; p = p.parent) loc.push(p.key);
  return loc.reverse();
}

/**
 * Rules no JSON schema can state, checked before the schema: nesting deeper than MAX_DEPTH and
 * strings or keys that are not well-formed Unicode. Iterative on purpose. The first problem, or null.
 */
export function bodyProblem(body: unknown): ValidationDetail | null {
  const stack: Frame[] = [{ value: body, depth: 1, key: 'body', parent: null }];
  while (stack.length > 0) {
    const f = stack.pop() as Frame;
    if (typeof f.value === 'string') {
      if (LONE_SURROGATE.test(f.value))
        return {
          loc: locOf(f),
          msg: 'Input should be valid Unicode text: it has an unpaired surrogate',
          type: 'string_unicode',
        };
      continue;
    }
    if (f.value === null || typeof f.value !== 'object') continue;
    if (f.depth > MAX_DEPTH)
      return {
        loc: locOf(f),
        msg: `Input is nested too deeply: at most ${MAX_DEPTH} levels of objects and arrays`,
        type: 'too_deep',
      };
    const obj = f.value as Record<string, unknown>;
    const keys: Array<string | number> = Array.isArray(obj) ? obj.map((_, i) => i) : Object.keys(obj);
    for (const key of keys) {
      if (typeof key === 'string' && LONE_SURROGATE.test(key))
        return {
          loc: locOf(f, key),
          msg: 'Keys should be valid Unicode text: this one has an unpaired surrogate',
          type: 'string_unicode',
        };
      stack.push({ value: obj[key as string], depth: f.depth + 1, key, parent: f });
    }
  }
  return null;
}

/**
 * Rules a schema cannot state, run on a body the schema accepted: a guard request's typed data
 * must match its own `types` and its transaction value fit a uint256 (docs/action-scan.md §1), and a
 * signed order hold values its protocol admits (§7).
 */
const AFTER_SCHEMA: Partial<Record<SchemaId, (body: any) => ValidationDetail[]>> = {
  GuardRequest: (body) => {
    const problems = guardRequestProblems(body);
    // A well-formed message that is an order: the values its protocol admits (§7).
    return problems.length === 0 && body.typed_data ? orderProblems(body.typed_data, ['body', 'typed_data']) : problems;
  },
};

/** Every problem `id`'s rules find in `body` (defaults applied in place); empty when it passes. */
export function bodyProblems(id: SchemaId, body: unknown): ValidationDetail[] {
  if (body === undefined) return [{ loc: ['body'], msg: 'Field required', type: 'missing' }];
  const problem = bodyProblem(body);
  if (problem) return [problem];
  const fn = validator(id);
  if (!fn(body)) return toValidationDetail(fn.errors ?? []);
  return AFTER_SCHEMA[id]?.(body) ?? [];
}

/** Validates `req.body` in place (defaults applied) or throws a 422. */
export function validateBody(id: SchemaId): ApiHandler {
  return (req, _res, next) => {
    const problems = bodyProblems(id, req.body);
    if (problems.length > 0) throw new HttpError(422, problems);
    next();
  };
}
