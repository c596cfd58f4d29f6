/**
 * POST /v1/screen (docs/screening.md §7): up to 100 addresses by the rules of counterparty_screen,
 * one result each in request order, against the lists in use and the known counterparties (the
 * request's known_addresses and, for a keyed call, the account's learned ones). No verdict and no
 * signature: a screen informs an agent, the guard decides.
 */
import { screenAll, type CounterpartyScreenCheck } from '../checks/counterparty_screen.js';
import type { Config } from '../config.js';
import type { ScreenRequest } from '../generated/types.js';
import type { ApiHandler } from '../http/api.js';
import { answer, answerMeta } from '../http/answer.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { deadline } from '../net/deadline.js';
import type { ScreeningView } from '../screening/view.js';
import { accountOf } from './handler.js';
import { countHits } from './screen.js';

export interface ScreenDeps {
  config: Readonly<Config>;
  logger: Logger;
  metrics?: Metrics;
  screening: ScreeningView;
}

export function screenHandler(deps: ScreenDeps): ApiHandler {
  const { config, screening } = deps;
  return answer<ScreenRequest>(deps, async (call) => {
    const { body, res, deadlineMs } = call;
    const chain = body.chain ?? 'base';
    const check: CounterpartyScreenCheck = {
      type: 'counterparty_screen',
      chain,
      rpc_url: Object.hasOwn(config.rpcUrls, chain) ? config.rpcUrls[chain] : null,
      // Each address once, with the role a screen gives it: a recipient (the sweeper rule reads it).
      addresses: [...new Set(body.addresses.map((a) => a.toLowerCase()))].map((address) => ({
        address,
        roles: ['recipient'],
      })),
      known_addresses: (body.known_addresses ?? []).map((a) => a.toLowerCase()),
      account: accountOf(res.locals.billing),
    };
    // A timer cleared with the answer (AbortSignal.timeout's would fire later, in another request's time).
    const limit = deadline(undefined, deadlineMs);
    const { results, sweeperSkipped } = await screenAll(check, { config, signal: limit.signal }, screening).finally(
      limit.done,
    );
    countHits(deps.metrics, { observed: { addresses: results } });
    const unavailable = new Set(screening.unavailable());
    const byAddress = new Map(results.map((r) => [r.address, r]));
    return {
      results: body.addresses.map((a) => {
        const r = byAddress.get(a.toLowerCase())!;
        // A blocklist not loaded yet cannot clear an address: error, never pass.
        const blocked = r.status === 'pass' && unavailable.size > 0;
        return {
          address: r.address,
          status: blocked ? 'error' : r.status,
          reasons: blocked ? ['screening_list_unavailable'] : r.reasons,
          lists: r.lists,
          message:
            r.message ||
            (blocked
              ? `Not cleared: ${[...unavailable].join(', ')} not loaded yet.`
              : `${r.address}: on no list, no lookalike of a known counterparty.`),
          sanctions: r.sanctions,
          blocklists: r.blocklists,
          lookalike_of: r.lookalike_of,
          ...(r.delegate ? { delegate: r.delegate } : {}),
        };
      }),
      lists: screening.lists().map((l) => ({
        name: l.name,
        kind: l.kind,
        date: l.date,
        size: l.packed.size,
        hash: l.packed.hash || null,
        status: l.status,
      })),
      sweeper_rule: sweeperSkipped ? `skipped: no RPC configured for chain ${chain}` : 'run',
      ...answerMeta(call),
    };
  });
}
