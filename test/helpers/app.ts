/**
 * Builds the real app on an ephemeral loopback port with a config from env-style overrides,
 * for HTTP-level tests. Everything is closed in teardown.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/log.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Metrics } from '../../src/metrics.js';
import type { Engine } from '../../src/engine/runner.js';
import type { Store } from '../../src/store/types.js';
import type { X402 } from '../../src/billing/x402/index.js';
import type { Screening } from '../../src/screening/service.js';
import { compose, type ComposeOptions } from '../../src/compose.js';
import { buildApp, type AppDeps } from '../../src/app.js';
import { OFFLINE_UPSTREAMS } from './offline.js';

export interface TestApp {
  url: string;
  config: Readonly<Config>;
  engine: Engine;
  metrics: Metrics;
  store: Store;
  payments: X402;
  /** The screening lists and known counterparties (docs/screening.md). */
  screening: Screening;
  logger: Logger;
  /** Every log line written so far, parsed. */
  logs: Array<Record<string, unknown>>;
  server: http.Server;
  close(): Promise<void>;
}

export function captureLogger(level = 'info'): { logger: Logger; logs: Array<Record<string, unknown>> } {
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line));
      cb();
    },
  });
  return { logger: createLogger(level, sink), logs };
}

/**
 * The service as production wires it (see src/compose.ts), with test defaults: billing off,
 * checks inline, a fresh SQLite file. `env` overrides any setting; `extra` replaces app deps.
 */
export async function startTestApp(
  env: Record<string, string> = {},
  extra: Partial<AppDeps> = {},
  opts: ComposeOptions = {},
): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'preflight-test-'));
  const config = loadConfig({
    BILLING: 'off',
    POOL_THREADS: '0',
    LOG_LEVEL: 'info',
    DATABASE_URL: `sqlite:${join(dir, 'test.db')}`,
    ...OFFLINE_UPSTREAMS,
    ...env,
  });
  const { logger, logs } = captureLogger(config.logLevel);
  const service = await compose(config, logger, opts);
  await service.engine.executor.ready();
  const app = buildApp({ ...service.deps, ...extra });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    engine: service.engine,
    metrics: service.metrics,
    store: service.store,
    payments: service.payments,
    screening: service.deps.screening!,
    logger,
    logs,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
/** POST JSON (or a raw string) and read the JSON answer. */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: the raw text is returned */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
