/** Shared test plumbing for the check tests: a loopback HTTP target and a check context. */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { loadConfig, type Config } from '../../src/config.js';
import type { CheckContext } from '../../src/checks/types.js';
import { closeDispatchers } from '../../src/net/dispatchers.js';

export interface Target {
  url: string;
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1, port 0. Open sockets are destroyed on close so tests end fast. */
export async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Target> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(handler);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Config for request-supplied loopback targets (ALLOW_PRIVATE_TARGETS) plus any overrides. */
export function testConfig(env: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({ ALLOW_PRIVATE_TARGETS: 'true', ...env });
}

export function ctx(config: Readonly<Config>, timeoutMs = 2000): CheckContext {
  return { config, signal: AbortSignal.timeout(timeoutMs), timeoutMs };
}

/** A fixture body from test/checks/fixtures (tests run from dist/test/checks). */
export function fixture(name: string): string {
  return readFileSync(new URL(`../../../test/checks/fixtures/${name}`, import.meta.url), 'utf8');
}

/** Closes the shared keep-alive pools so the test process exits as soon as its tests end. */
export async function closePools(): Promise<void> {
  await closeDispatchers();
}
