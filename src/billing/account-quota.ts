/**
 * The account's monthly quota on the answers of the management calls, which do not count against
 * it (docs/console.md §3): the same `RateLimit-*` headers a counted call carries, read from the
 * store without counting, so the console can show what is used and left and when it resets. A
 * store that cannot answer leaves them off: they describe the quota, they admit nothing.
 */
import type { Config } from '../config.js';
import type { ApiHandler } from '../http/api.js';
import type { Plan, Store } from '../store/types.js';
import { planLimit, quotaView, setQuotaHeaders, usagePeriod } from './quota.js';

export function accountQuotaHeaders(
  config: Pick<Config, 'freeTierMonthlyLimit' | 'planLimits'>,
  store: Pick<Store, 'getUsage'>,
): ApiHandler {
  return async (_req, res, next) => {
    const b = res.locals.billing;
    if (b?.kind === 'key' && b.accountId !== undefined && b.plan !== undefined) {
      const now = new Date();
      try {
        const used = await store.getUsage(b.accountId, usagePeriod(now));
        setQuotaHeaders(res, quotaView(planLimit(config, b.plan as Plan), used, now));
      } catch {
        // the answer goes out without them
      }
    }
    next();
  };
}
