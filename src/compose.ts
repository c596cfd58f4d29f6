/**
 * The composition root: from a config to every running part and the app's dependencies.
 * The server, the tests and the bench all build the service through here, so what they
 * exercise is the production wiring.
 */
import { warmEventLoop } from './http/warm-up.js';
import { guardWarmChecks, warmGuards } from './guard/warm-up.js';
import { accountQuotaHeaders } from './billing/account-quota.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createExecutor } from './engine/worker-pool.js';
import { createEngine, LOCK_MARGIN_MS, type Engine } from './engine/runner.js';
import { createSharedCache } from './engine/shared-cache.js';
import { openStore } from './store/index.js';
import type { Store } from './store/types.js';
import { createBillingGate } from './billing/gate.js';
import type { X402, X402Deps } from './billing/x402/index.js';
import { paymentsOff } from './billing/x402/off.js';
import { signupHandler } from './http/routes/signup.js';
import { metricsHandler } from './http/routes/metrics.js';
import { guardHandler } from './guard/handler.js';
import { stablecoinHandler } from './agents/stablecoin.js';
import { bridgeRiskHandler } from './agents/bridge-risk.js';
import { yieldRoutingHandler } from './agents/yield-routing.js';
import { mcpHandler } from './mcp/http.js';
import type { AppDeps } from './app.js';
import { closeDispatchers } from './net/dispatchers.js';
import { CIRCUIT_LABELS, watchCircuits } from './net/breaker.js';
import { createAttester, DECIDE_CHAIN_ID, type Attester } from './attest/index.js';
import { Screening } from './screening/service.js';
import { screenHandler } from './guard/screen-handler.js';
import { KeyResolver } from './billing/keys.js';
import { createIdempotency } from './http/idempotency.js';
import { verdictsHandler } from './http/routes/verdicts.js';
import { VerdictLog } from './verdicts/log.js';
import { PolicyService } from './policy/service.js';
import { startRelease } from './policy/release.js';
import { accountHandlers } from './http/routes/account.js';

export interface Service {
  deps: AppDeps;
  engine: Engine;
  metrics: Metrics;
  store: Store;
  payments: X402;
  /**
   * Resolves once every thread the answers need is up and warm: each check thread has loaded the
   * check modules and the signing thread listens (docs/api-reference.md, "Health and readiness").
   */
  ready(): Promise<void>;
  policies: PolicyService;
  /** Stops the settler, the pool, the main thread's connection pools and the store, in that order. */
  close(): Promise<void>;
}

/** How long start-up waits for the fleet cache's first connection before starting without it. */
const STARTUP_WAIT_MS = 1000;

export interface ComposeOptions {
  /** Settlement retry tuning and chain polling, for tests. */
  x402?: Pick<X402Deps, 'retry' | 'receiptPollMs'>;
  isDraining?: () => boolean;
}

export async function compose(config: Readonly<Config>, logger: Logger, opts: ComposeOptions = {}): Promise<Service> {
  const metrics = createMetrics();
  // Breakers live in the threads that run checks; their state changes reach the gauge from here.
  for (const label of CIRCUIT_LABELS) metrics.circuitState(label, 'closed');
  const stopWatching = watchCircuits((upstream, state) => {
    metrics.circuitState(upstream, state);
    logger.warn({ upstream, state }, 'circuit breaker');
  });
  // Each check thread warms the checks the guards plan too (src/guard/warm-up.ts).
  const executor = createExecutor(config, guardWarmChecks(config));
  metrics.setPoolSource(() => executor.stats());
  const shared =
    config.redisUrl === null
      ? null
      : createSharedCache({
          url: config.redisUrl,
          timeoutMs: config.redisTimeoutMs,
          lockMs: config.checkHardTimeoutMs + LOCK_MARGIN_MS,
          onEvent: (op, outcome) => metrics.sharedCache(op, outcome),
          onState: (state) =>
            state === 'ok'
              ? logger.info({ redis: 'ok' }, 'fleet cache connected')
              : logger.warn({ redis: 'degraded' }, 'fleet cache unavailable; answering from this instance alone'),
        });
  metrics.setSharedCacheSource(() => shared?.state() ?? null);
  // Share from the first request when Redis is there; never wait long for it (it is an accelerator).
  await shared?.ready(STARTUP_WAIT_MS);
  const engine = createEngine({ config, metrics, executor, shared });
  let store: Store;
  try {
    store = await openStore(config, { logger });
  } catch (err) {
    stopWatching();
    await engine.close();
    throw err;
  }
  // The signing and chain code loads only when payments are on: it is most of start-up time.
  const payments =
    config.x402PayTo === null
      ? paymentsOff()
      : (await import('./billing/x402/index.js')).createX402({ config, store, logger, metrics, ...opts.x402 });
  metrics.setLedgerSource(() => store.countPaymentsByState());
  // One key cache for the billing gate and the management calls, so a revocation drops from both.
  const keys = new KeyResolver(store);
  const idempotency = createIdempotency({ store, logger, metrics, maxDeadlineMs: config.maxDeadlineMs });
  const billing = config.billing
    ? createBillingGate({ config, store, logger, payments, metrics, keys, idempotency })
    : null;
  const policies = new PolicyService(store, { logger });
  const verdicts = new VerdictLog(store, logger, { retentionDays: config.verdictLogDays, metrics });
  let attester: Attester | null;
  try {
    attester = await createAttester(config, store);
  } catch (err) {
    stopWatching();
    await engine.close();
    await store.close();
    throw err;
  }
  // The screening lists: the fleet's versions from the database at once, then refreshed (docs/screening.md).
  const screening = new Screening({
    config: config.screening,
    store,
    events: {
      refresh: (list, outcome) => metrics.screeningRefresh(list, outcome),
      malformed: (list, n) => metrics.screeningMalformed(list, n),
      log: (level, fields, msg) => logger[level](fields, msg),
    },
  });
  await screening.start();
  metrics.setScreeningSource(() =>
    screening.lists().map((l) => ({ name: l.name, kind: l.kind, size: l.packed.size, ageS: screening.ageS(l) })),
  );
  // VERDICT_LOG=off (measurement only): answers go unlogged; GET /v1/verdicts still reads the log.
  const agentDeps = { config, engine, logger, metrics, attester, verdicts: config.verdictLog ? verdicts : null };
  const guardDeps = { ...agentDeps, policies, screening };
  const deps: AppDeps = {
    config,
    logger,
    metrics,
    engine,
    billing,
    attester,
    screening,
    verdicts: agentDeps.verdicts,
    handlers: {
      guard: guardHandler(guardDeps),
      screen: screenHandler({ ...agentDeps, screening }),
      stablecoin: stablecoinHandler(agentDeps),
      bridge: bridgeRiskHandler(agentDeps),
      yield: yieldRoutingHandler(agentDeps),
      signup: signupHandler({ config, store, logger }),
      mcp: mcpHandler({ config, store, logger, payments, keys }),
    },
    metricsHandler: metricsHandler({ config, metrics }),
    isDraining: opts.isDraining,
    policies,
    management: {
      keys,
      quota: accountQuotaHeaders(config, store),
      handlers: {
        ...accountHandlers({ config, store, keys, policies, guard: guardDeps }),
        verdicts: verdictsHandler({ store, log: verdicts }),
      },
    },
  };
  payments.start();
  verdicts.start();
  const release = startRelease({ config, store, logger });
  return {
    deps,
    engine,
    metrics,
    store,
    payments,
    async ready() {
      // The event loop warms while the threads do; what it could not do is logged, never fatal.
      const warmLoop = async (): Promise<string[]> => [
        ...(await warmEventLoop(config, store)),
        ...(await warmGuards(config, screening).catch((err: Error) => [`the guards' warm-up failed: ${err.message}`])),
      ];
      const [problems] = await Promise.all([warmLoop(), executor.ready(), attester?.ready()]);
      if (problems.length > 0) logger.warn({ problems }, 'the event loop warm-up was incomplete');
      // One answer signed and thrown away: the signing path's first run is not a caller's.
      await attester?.attest(
        { verdict: 'wait', risk: 'high', confidence: 0, expires_in: 0 },
        { answerId: 'warm-up', body: Buffer.from('{}'), chainId: DECIDE_CHAIN_ID },
      );
    },
    policies,
    async close() {
      await release.stop();
      await payments.stop();
      await screening.stop();
      await verdicts.close();
      await engine.close();
      await attester?.close();
      stopWatching();
      await closeDispatchers();
      await store.close();
    },
  };
}
