/**
 * Process entry: configuration, worker pool, store, payments, listen, and a graceful close.
 * The first SIGTERM or SIGINT drains: stop accepting, answer everything in flight (bounded by
 * SHUTDOWN_GRACE_MS), close the pool and the store, exit 0. Further SIGTERMs are ignored while
 * draining; a second SIGINT forces the exit.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import type { Service } from './compose.js';
import { VERSION } from './version.js';

export interface RunningServer {
  server: http.Server;
  url: string;
  shutdown(reason: string): Promise<void>;
}

export async function startServer(config: Readonly<Config>, logger: Logger): Promise<RunningServer> {
  // The port opens first: /health answers at once while the service loads, `starting` with a 503
  // until everything the first answers need is loaded and running (docs/api-reference.md, "Health
  // and readiness"), and any other request is held until then, then served.
  const bootedAt = Date.now();
  let app: http.RequestListener | null = null;
  const held: Array<() => void> = [];
  const server = http.createServer(
    { keepAliveTimeout: 65_000, requestTimeout: 30_000, headersTimeout: 20_000 },
    (req, res) => {
      if (app) return app(req, res);
      if (req.method === 'GET' && req.url === '/health') {
        res.writeHead(503, {
          'content-type': 'application/json; charset=utf-8',
          'cache-control': 'no-store',
          'retry-after': '1',
        });
        res.end(
          JSON.stringify({
            status: 'starting',
            version: VERSION,
            uptime_s: Math.floor((Date.now() - bootedAt) / 1000),
          }),
        );
        return;
      }
      held.push(() => app!(req, res));
    },
  );

  // Node answers a malformed request or oversized headers itself, with no body; answer in the
  // service's error shape instead.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const [status, reason, detail] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'Request headers too large: the limit is 16 KiB']
        : [400, 'Bad Request', 'Malformed HTTP request'];
    const body = JSON.stringify({ detail });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });

  let inflight = 0;
  let idle: (() => void) | null = null;
  server.on('request', (_req, res) => {
    inflight++;
    res.on('close', () => {
      inflight--;
      if (inflight === 0 && idle) idle();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${addr.port}`;
  logger.info({ port: addr.port, host: config.host, version: VERSION }, 'listening');

  // Loaded after the configuration is known good, so a bad setting is reported at once.
  const [{ compose }, { buildApp }] = await Promise.all([import('./compose.js'), import('./app.js')]);
  let draining = false;
  let service: Service;
  try {
    service = await compose(config, logger, { isDraining: () => draining });
  } catch (err) {
    server.closeAllConnections();
    server.close();
    throw err;
  }
  const built = buildApp(service.deps);
  // Ready means warm: every check thread has run the warm-up and the signing thread has signed
  // once, so the first caller does not pay for any of it.
  await service.ready();
  // Logged before the first `ok`, so a reader of the log never sees traffic before `ready`.
  logger.info(
    {
      pool: service.engine.executor.kind,
      threads: config.poolThreads,
      warm_threads: service.engine.executor.warmThreads,
      store: service.store.kind,
      signing: service.deps.attester?.signing ?? 'off',
      billing: config.billing,
      payments: service.payments.configured,
      ms: Date.now() - bootedAt,
    },
    'ready',
  );
  app = built;
  for (const serve of held.splice(0)) serve();

  async function shutdown(reason: string): Promise<void> {
    if (draining) return;
    draining = true;
    logger.info({ reason, inflight }, 'draining');
    server.close();
    server.closeIdleConnections();
    if (inflight > 0) {
      await new Promise<void>((resolve) => {
        idle = resolve;
        setTimeout(resolve, config.shutdownGraceMs).unref();
      });
    }
    server.closeAllConnections();
    await service.close();
    logger.info({ unanswered: inflight }, 'stopped');
  }

  return { server, url, shutdown };
}

async function main(): Promise<void> {
  let config: Readonly<Config>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  // Signals are handled from the first moment: one that arrives while the service is still
  // loading is acted on as soon as it is up, so it drains and exits 0 like any other.
  let running: RunningServer | null = null;
  let stopping = false;
  let pending: NodeJS.Signals | null = null;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      if (signal === 'SIGINT') {
        logger.warn('second SIGINT: exiting now');
        logger.flush();
        process.exit(130);
      }
      return;
    }
    if (!running) {
      pending ??= signal;
      return;
    }
    stopping = true;
    running.shutdown(signal).then(
      () => {
        logger.flush();
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        logger.flush();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  try {
    running = await startServer(config, logger);
  } catch (err) {
    logger.fatal({ err }, 'start-up failed');
    logger.flush();
    process.stderr.write(`start-up failed: ${(err as Error).message}\n`);
    process.exit(1);
  }
  if (pending) stop(pending);
}

const isMain = process.argv[1] && import.meta.url === new URL(process.argv[1], 'file://').href;
if (isMain) void main();
