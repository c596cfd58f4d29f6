/**
 * The real app with the guard and agent handlers mounted, on a loopback port. The handlers need
 * the app's engine, which exists only once the app is built, so they are bound on first use.
 */
import type { ApiHandler } from '../../src/http/api.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { guardHandler } from '../../src/guard/handler.js';
import { stablecoinHandler, type AgentDeps } from '../../src/agents/stablecoin.js';
import { bridgeRiskHandler } from '../../src/agents/bridge-risk.js';
import { yieldRoutingHandler } from '../../src/agents/yield-routing.js';

export async function startGuardApp(env: Record<string, string>): Promise<TestApp> {
  let deps: AgentDeps | null = null;
  const bind = (make: (d: AgentDeps) => ApiHandler): ApiHandler => {
    let h: ApiHandler | null = null;
    return (req, res, next) => (h ??= make(deps!))(req, res, next);
  };
  const app = await startTestApp(env, {
    handlers: {
      guard: bind((d) => guardHandler({ ...d, screening: app.screening })),
      stablecoin: bind(stablecoinHandler),
      bridge: bind(bridgeRiskHandler),
      yield: bind(yieldRoutingHandler),
    },
  });
  deps = { config: app.config, engine: app.engine, logger: app.logger, metrics: app.metrics };
  return app;
}
