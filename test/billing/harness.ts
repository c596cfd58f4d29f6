/**
 * The real app with billing on, a fresh SQLite store, the billing gate and the signup handler,
 * on a loopback port. Key lookups are not cached here (ttl 0) unless a test asks for it, so a
 * revocation is visible on the next request.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApiHandler } from '../../src/http/api.js';
import { createBillingGate, type PaymentGate } from '../../src/billing/gate.js';
import { KeyResolver } from '../../src/billing/keys.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { HandlerKey } from '../../src/http/endpoints.js';
import { signupHandler } from '../../src/http/routes/signup.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { captureLogger, startTestApp, type TestApp } from '../helpers/app.js';

export interface BilledApp {
  app: TestApp;
  url: string;
  store: Store;
  config: Readonly<Config>;
  /** Log lines of the billing gate and the signup handler. */
  logs: Array<Record<string, unknown>>;
  databaseUrl: string;
  close(): Promise<void>;
}

export interface BilledOptions {
  payments?: (config: Readonly<Config>, store: Store) => PaymentGate;
  handlers?: Partial<Record<HandlerKey, ApiHandler>>;
  keyTtlMs?: number;
}

export async function startBilledApp(env: Record<string, string> = {}, opts: BilledOptions = {}): Promise<BilledApp> {
  const dir = mkdtempSync(join(tmpdir(), 'pf-billing-'));
  const fullEnv = {
    BILLING: 'on',
    POOL_THREADS: '0',
    LOG_LEVEL: 'info',
    DATABASE_URL: `sqlite:${join(dir, 'billing.db')}`,
    ...env,
  };
  const config = loadConfig(fullEnv);
  const store = await openStore(config);
  const { logger, logs } = captureLogger('debug');
  const payments = opts.payments?.(config, store);
  const billing = createBillingGate({
    config,
    store,
    logger,
    payments,
    keys: new KeyResolver(store, { ttlMs: opts.keyTtlMs ?? 0 }),
  });
  const app = await startTestApp(fullEnv, {
    billing,
    handlers: { signup: signupHandler({ config, store, logger }), ...opts.handlers },
  });
  return {
    app,
    url: app.url,
    store,
    config,
    logs,
    databaseUrl: config.databaseUrl,
    async close() {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A decide body that validates and needs no upstream: one pure approval_amount check. */
export const DECIDE = {
  goal: 'approve a bounded allowance',
  checks: [{ type: 'approval_amount', amount: '1000', spender: '0x1111111111111111111111111111111111111111' }],
};
export const GUARD = {
  action: 'approve',
  chain: 'base',
  amount_usd: 10,
  approval_amount: '1000',
  spender: '0x1111111111111111111111111111111111111111',
};

/** Signs up through HTTP and returns the issued key. */
export async function signup(url: string, email: string): Promise<string> {
  const res = await fetch(`${url}/v1/api-keys/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  const body = (await res.json()) as { api_key?: string | null };
  if (res.status !== 200 || typeof body.api_key !== 'string')
    throw new Error(`signup failed: ${res.status} ${JSON.stringify(body)}`);
  return body.api_key;
}
