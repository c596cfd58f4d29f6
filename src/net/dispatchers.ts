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
import { Agent, type Dispatcher } from 'undici';
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

let pools: { operator: Agent; caller: Agent; operatorD: Dispatcher; callerD: Dispatcher } | null = null;
function built(): NonNullable<typeof pools> {
  if (pools === null) {
    // Keep-alive pools: the paid path's chain reads and the checks' RPC calls reuse connections.
    const operator = new Agent({
      keepAliveTimeout: 10_000,
      keepAliveMaxTimeout: 60_000,
      connections: 128,
      connect: { timeout: 5_000 },
    });
    const caller = new Agent({
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 30_000,
      connections: 128,
      connect: { timeout: 5_000 },
    });
    pools = { operator, caller, operatorD: operatorOver(operator), callerD: callerOver(caller) };
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

/** Close both pools (graceful shutdown; tests); the next call opens new ones. */
export async function closeDispatchers(): Promise<void> {
  const p = pools;
  pools = null;
  await Promise.all([p?.operator.close(), p?.caller.close()]);
}
