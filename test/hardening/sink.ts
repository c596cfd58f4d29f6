/**
 * A loopback listener that must see nothing: it counts TCP connections on 127.0.0.1 and ::1 (and
 * more loopback addresses if asked) at one port, so a URL naming loopback in any spelling would
 * land here if the SSRF rules let it through. It answers like an internal service, to make a
 * leak obvious.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const SINK_SECRET = 'internal-secret-7f3a';

export interface Sink {
  port: number;
  /** Connections accepted so far, on either address. */
  connections(): number;
  close(): Promise<void>;
}

function server(counter: { n: number }): http.Server {
  const s = http.createServer((_req, res) =>
    res.end(`{"jsonrpc":"2.0","id":1,"result":"0x1","secret":"${SINK_SECRET}"}`),
  );
  s.on('connection', () => counter.n++);
  return s;
}

function listen(s: http.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, host, () => {
      s.off('error', reject);
      resolve();
    });
  });
}

const closeServer = (s: http.Server): Promise<void> =>
  new Promise((r) => {
    s.closeAllConnections();
    s.close(() => r());
  });

/** Listens on 127.0.0.1, ::1 and any `more` loopback addresses (e.g. 127.0.0.2), all at one port. */
export async function startSink(more: readonly string[] = []): Promise<Sink> {
  const counter = { n: 0 };
  // The other addresses need the port the first one got; another process may hold it there, so retry.
  for (let attempt = 0; attempt < 20; attempt++) {
    const first = server(counter);
    await listen(first, '127.0.0.1', 0);
    const port = (first.address() as AddressInfo).port;
    const servers = [first];
    try {
      for (const host of ['::1', ...more]) {
        const s = server(counter);
        await listen(s, host, port);
        servers.push(s);
      }
    } catch {
      await Promise.all(servers.map(closeServer));
      continue;
    }
    return {
      port,
      connections: () => counter.n,
      close: async () => {
        await Promise.all(servers.map(closeServer));
      },
    };
  }
  throw new Error(`no port free on 127.0.0.1, ::1 and ${more.join(', ')} at once`);
}
