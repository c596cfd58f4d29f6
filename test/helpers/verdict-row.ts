/** A verdict-log row as the service writes one for a proceed on /v1/guard, for the store's tests. */
import { randomBytes } from 'node:crypto';
import type { VerdictRecord } from '../../src/store/types.js';

export function verdictRow(
  accountId: string,
  at: number = Date.now(),
  over: Partial<VerdictRecord> = {},
): VerdictRecord {
  return {
    id: `0x${randomBytes(32).toString('hex')}`,
    accountId,
    at,
    keyId: accountId,
    keyName: 'owner',
    endpoint: '/v1/guard',
    verdict: 'proceed',
    risk: 'low',
    failureModes: [],
    policy: null,
    reservedUsd: null,
    ...over,
  };
}
