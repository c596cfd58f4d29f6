/**
 * Calls only an account's owner key may make (docs/policies.md §1): reading the verdict log, and
 * managing keys and policies. No key is a 401, an agent key a 403 that says an owner key is
 * needed, a store that cannot answer a 503. x402 cannot pay for these: they are free, and keyed.
 */
import type { ApiRequest } from '../http/api.js';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { ApiKeyRecord } from '../store/types.js';
import { noCredentials, unknownKey } from './gate.js';
import { type KeyResolver, presentedKey } from './keys.js';

export type OwnerCheck = (req: Pick<ApiRequest, 'headers'>) => Promise<ApiKeyRecord>;

export function ownerOnly(keys: KeyResolver, logger: Logger): OwnerCheck {
  const log = logger.child({ component: 'owner' });
  return async (req) => {
    const raw = presentedKey(req);
    if (raw === null) throw noCredentials();
    let record: ApiKeyRecord | null;
    try {
      record = await keys.resolve(raw);
    } catch (err) {
      log.error({ err }, 'key store unavailable');
      throw new HttpError(503, 'The key store is unavailable right now. Retry shortly.', {}, { 'Retry-After': '5' });
    }
    if (!record || record.revokedAt !== null) throw unknownKey();
    if (record.role !== 'owner')
      throw new HttpError(
        403,
        "This call needs the account's owner key (the key its signup issued); an agent key may not make it.",
      );
    return record;
  };
}
