/**
 * The two outbound dispatchers; every call this service makes to the network goes through one.
 *
 *   operator = breaker ∘ body cap ∘ retry-once-on-reset ∘ userinfo→Basic auth ∘ pool
 *   caller   = redirects ∘ breaker ∘ body cap ∘ retry-once-on-reset ∘ userinfo→Basic auth ∘ SSRF guard ∘ pool
 *
 * `operator` carries the URLs the operator configured (RPC_URLS, X402_RPC_URL, the facilitator,
 * price/DEX/verification providers): trusted, so no address rules. `caller` carries URLs that came
 * in a request (http check, rpc_url, bridge status_url): the redirect wrapper sits outside
 * everything so that each hop meets its own breaker and a fresh SSRF check, and the guard sits
 * innermost so that the connection goes to the address it checked. Written outermost first; the
 * order and the reasons are in docs/outbound.md. Both share nothing but code: separate pools, and
 * breakers keyed by scope so a caller's URL never shares one with a provider.
 */
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { AheadConnections } from './ahead.js';
import { bodyCap } from './interceptors/body-cap.js';
import { circuitBreaker } from './interceptors/breaker.js';
import { followRedirects } from './interceptors/redirect.js';
import { retryOnReset } from './interceptors/retry-reset.js';
import { ssrfGuard } from './interceptors/ssrf.js';
import { userinfoAuth } from './interceptors/userinfo.js';

export type { CircuitOptions, NetDispatchOptions, Trail } from './interceptors/types.js';

/** The operator's wrappers over any pool (compose applies the last one outermost). */
export function operatorOver(base: Dispatcher): Dispatcher {
  return base.compose(userinfoAuth(), retryOnReset(), bodyCap(), circuitBreaker());
}

/** The caller's wrappers over any pool (tests pass a loopback "internet" or a TLS agent). */
export function callerOver(base: Dispatcher): Dispatcher {
  return base.compose(ssrfGuard(), userinfoAuth(), retryOnReset(), bodyCap(), circuitBreaker(), followRedirects());
}

/** How long the operator's pool keeps an idle connection (and one opened ahead waits for its first request). */
const OPERATOR_KEEP_ALIVE_MS = 10_000;

let pools: {
  operator: Agent;
  caller: Agent;
  operatorD: Dispatcher;
  callerD: Dispatcher;
  ahead: AheadConnections;
} | null = null;
function built(): NonNullable<typeof pools> {
  if (pools === null) {
    // Keep-alive pools: the paid path's chain reads and the checks' RPC calls reuse connections.
    // The operator's opens its connections through `ahead`, which hands out those opened early.
    const ahead = new AheadConnections(buildConnector({ timeout: 5_000 }));
    const operator = new Agent({
      keepAliveTimeout: OPERATOR_KEEP_ALIVE_MS,
      keepAliveMaxTimeout: 60_000,
      connections: 128,
      connect: ahead.connector,
    });
    const caller = new Agent({
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 30_000,
      connections: 128,
      connect: { timeout: 5_000 },
    });
    pools = { operator, caller, operatorD: operatorOver(operator), callerD: callerOver(caller), ahead };
  }
  return pools;
}

/** For URLs the operator configured. */
export function operatorDispatcher(): Dispatcher {
  return built().operatorD;
}

/** For URLs that came in a request. */
export function callerDispatcher(): Dispatcher {
  return built().callerD;
}

/**
 * Opens `perOrigin` connections ahead to each origin of `urls` (operator URLs only) for the
 * operator's pool, each kept as long as an idle connection of that pool; resolves with how many
 * connected, after `waitMs` at the most (src/net/ahead.ts).
 */
export function openAhead(urls: readonly string[], perOrigin: number, waitMs: number): Promise<number> {
  return built().ahead.open(urls, perOrigin, OPERATOR_KEEP_ALIVE_MS, waitMs);
}

/** Connections opened ahead that still wait for their first request. */
export function aheadWaiting(): number {
  return pools?.ahead.size ?? 0;
}

/** Close both pools (graceful shutdown; tests); the next call opens new ones. */
export async function closeDispatchers(): Promise<void> {
  const p = pools;
  pools = null;
  p?.ahead.close();
  await Promise.all([p?.operator.close(), p?.caller.close()]);
}
