/**
 * A stand-in for the internet, on loopback: an undici Agent whose connector records every
 * address safeFetch asks it to dial and carries "public" addresses to local emulators instead.
 * No packet leaves 127.0.0.1; an address without a route is refused like a closed port.
 */
import net from 'node:net';
import { Agent } from 'undici';

export interface LoopbackInternet {
  agent: Agent;
  /** "ip:port" of every connection attempt, in order. */
  dials: string[];
  /** Serve `ip:port` from the loopback port `localPort`. */
  host(ip: string, port: number, localPort: number): void;
  close(): Promise<void>;
}

export function loopbackInternet(): LoopbackInternet {
  const routes = new Map<string, number>();
  const dials: string[] = [];
  const agent = new Agent({
    connect(opts, callback) {
      const port = opts.port || (opts.protocol === 'https:' ? '443' : '80'); // undici leaves a default port empty
      const target = `${opts.hostname}:${port}`;
      dials.push(target);
      const local = routes.get(target);
      if (local === undefined) {
        callback(Object.assign(new Error(`connect ECONNREFUSED ${target}`), { code: 'ECONNREFUSED' }), null);
        return;
      }
      const socket = net.connect({ host: '127.0.0.1', port: local });
      socket.once('connect', () => callback(null, socket));
      socket.once('error', (err) => callback(err, null));
    },
  });
  return {
    agent,
    dials,
    host: (ip, port, localPort) => void routes.set(`${ip}:${port}`, localPort),
    close: () => agent.close(),
  };
}
