/**
 * The chain steps of a `management` row (docs/endpoints.md, docs/policies.md §1): the path
 * parameters checked (422 with `loc: ["path", name]`), then the key: required (401), the
 * account's owner key unless the row admits an agent key bound to the policy it names (403), and
 * a store that cannot look the key up is a 503 with Retry-After. Nothing is billed here.
 */
import type { ApiHandler, ApiRequest, ApiResponse } from '../http/api.js';
import { HttpError } from '../http/errors.js';
import type { ManagementEndpoint } from '../http/endpoints.js';
import { SIGNUP_PATH } from '../http/endpoints.js';
import type { ValidationDetail } from '../wire.js';
import { type KeyResolver, presentedKey } from './keys.js';
import type { ApiKeyRecord } from '../store/types.js';

/** The request of a management route: express has filled `params` from the path. */
export interface ManagementRequest extends ApiRequest {
  params: Record<string, string>;
}

export const STORE_RETRY_S = 5;

/** The 503 every management call gives while the store does not answer. */
export function storeUnavailable(): HttpError {
  return new HttpError(
    503,
    'The account store is unavailable right now; nothing was changed. Retry shortly.',
    {},
    { 'Retry-After': String(STORE_RETRY_S) },
  );
}

/** Awaits a store call; any failure of it is the 503. */
export async function fromStore<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch {
    throw storeUnavailable();
  }
}

/** 422 for path parameters that do not match their pattern; integers are parsed in place. */
export function checkParams(e: ManagementEndpoint): ApiHandler {
  const params = e.params ?? [];
  const patterns = params.map((p) => (p.schema.type === 'string' ? new RegExp(p.schema.pattern) : null));
  return (req, _res, next) => {
    const values = (req as ManagementRequest).params;
    const problems: ValidationDetail[] = [];
    params.forEach((p, i) => {
      const v = values[p.name] ?? '';
      const re = patterns[i];
      if (re !== null) {
        if (!re.test(v))
          problems.push({
            loc: ['path', p.name],
            msg: `String should match pattern '${(p.schema as { pattern: string }).pattern}'`,
            type: 'string_pattern_mismatch',
          });
        return;
      }
      const s = p.schema as { minimum: number; maximum: number };
      const n = /^[0-9]{1,10}$/.test(v) ? Number(v) : Number.NaN;
      if (!Number.isInteger(n))
        problems.push({
          loc: ['path', p.name],
          msg: 'Input should be a valid integer, unable to parse string as an integer',
          type: 'int_parsing',
        });
      else if (n < s.minimum || n > s.maximum)
        problems.push({
          loc: ['path', p.name],
          msg: `Input should be ${n < s.minimum ? 'greater' : 'less'} than or equal to ${n < s.minimum ? s.minimum : s.maximum}`,
          type: n < s.minimum ? 'greater_than_equal' : 'less_than_equal',
        });
    });
    if (problems.length > 0) throw new HttpError(422, problems);
    next();
  };
}

const BEARER_REALM = 'Bearer realm="preflight"';

/** The key of a management call, once checked: the gate's `billing` locals carry it on. */
export function managementAuth(e: ManagementEndpoint, keys: KeyResolver): ApiHandler {
  return async (req, res, next) => {
    const raw = presentedKey(req);
    if (raw === null)
      throw new HttpError(
        401,
        `This call needs your account's API key (x-api-key or Authorization: Bearer); x402 payments cannot pay for it. Get a key with POST ${SIGNUP_PATH}.`,
        { signup: SIGNUP_PATH },
        { 'WWW-Authenticate': BEARER_REALM },
      );
    let record: ApiKeyRecord | null;
    try {
      record = await keys.resolve(raw);
    } catch {
      throw storeUnavailable();
    }
    if (!record || record.revokedAt !== null)
      throw new HttpError(
        401,
        'Unknown or revoked API key.',
        {},
        { 'WWW-Authenticate': `${BEARER_REALM}, error="invalid_token"` },
      );
    if (record.role !== 'owner') {
      const named = (req as ManagementRequest).params.name;
      if (e.agent !== 'bound' || named === undefined || record.policy !== named)
        throw new HttpError(
          403,
          e.agent === 'bound'
            ? `This agent key may only read and dry-run its own policy (${record.policy ?? 'none'}); anything else of the account needs its owner key.`
            : "This call needs the account's owner key: an agent key may not manage keys or policies (it may read its own policy, its usage and run a dry run under it).",
        );
    }
    (res as ApiResponse).locals.billing = {
      kind: 'key',
      keyId: record.id,
      plan: record.plan,
      accountId: record.accountId,
      role: record.role,
      policy: record.policy,
    };
    next();
  };
}
