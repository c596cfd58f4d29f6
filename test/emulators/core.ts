/**
 * The loopback HTTP server every upstream emulator is built on: routes, request counters
 * (total, in flight, most in flight at once) and fault injection, globally (`em.fault = {...}`)
 * or per path prefix (`em.faultOn('/simple/price', {...})`).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Fault {
  /** Wait this long before answering (combines with the other fields). */
  delayMs?: number;
  /** Accept the request and never answer. */
  hang?: boolean;
  /** Reset the connection (TCP RST) instead of answering. */
  reset?: boolean;
  /** Answer with this status (429, 500, ...) and `body` (default: a small JSON error). */
  status?: number;
  /** retry-after header sent with `status`. */
  retryAfter?: string | number;
  body?: string;
  /** 200 with a body that is not JSON. */
  garbage?: boolean;
  /** Declare a content-length larger than the body, send the body, close the connection. */
  truncate?: boolean;
  /** Send the real answer's body one byte per this many ms. */
  dripMs?: number;
  /** Apply to the next N matching requests only. */
  times?: number;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** RegExp route captures. */
  params: string[];
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
}

export type Handler = (req: ReceivedRequest) => Reply | Promise<Reply>;

export interface Stats {
  requests: number;
  inFlight: number;
  maxInFlight: number;
  byPath: Record<string, number>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Emulator {
  url = '';
  /** Applies to every request unless a per-path fault matches. */
  fault: Fault | null = null;
  stats: Stats = { requests: 0, inFlight: 0, maxInFlight: 0, byPath: {} };
  /** Every request received, oldest first. */
  received: ReceivedRequest[] = [];
  private readonly routes: { method: string; path: string | RegExp; handler: Handler }[] = [];
  private readonly pathFaults = new Map<string, Fault>();
  private readonly sockets = new Set<Socket>();
  // A client that vanishes mid-request, or a handler that throws, must not take the test process down.
  private readonly server = http.createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));

  route(method: string, path: string | RegExp, handler: Handler): this {
    this.routes.push({ method, path, handler });
    return this;
  }

  /** Fault for paths starting with `prefix`; null clears it. */
  faultOn(prefix: string, fault: Fault | null): this {
    if (fault) this.pathFaults.set(prefix, fault);
    else this.pathFaults.delete(prefix);
    return this;
  }

  /** Zero the counters; `inFlight` is a live gauge and keeps counting requests still open. */
  resetStats(): void {
    const inFlight = this.stats.inFlight;
    this.stats = { requests: 0, inFlight, maxInFlight: inFlight, byPath: {} };
    this.received = [];
  }

  async listen(): Promise<this> {
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy(); // hung and keep-alive connections alike
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private takeFault(path: string): Fault | null {
    for (const [prefix, f] of this.pathFaults) {
      if (!path.startsWith(prefix)) continue;
      if (f.times !== undefined && --f.times <= 0) this.pathFaults.delete(prefix);
      return f;
    }
    const f = this.fault;
    if (f?.times !== undefined && --f.times <= 0) this.fault = null;
    return f;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://emulator');
    this.stats.requests++;
    this.stats.byPath[u.pathname] = (this.stats.byPath[u.pathname] ?? 0) + 1;
    this.stats.inFlight++;
    this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.stats.inFlight);
    res.on('close', () => this.stats.inFlight--);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec: ReceivedRequest = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      params: [],
    };
    this.received.push(rec);

    const fault = this.takeFault(u.pathname);
    if (fault?.delayMs) await sleep(fault.delayMs);
    if (fault?.hang) return;
    if (fault?.reset) {
      req.socket.resetAndDestroy();
      return;
    }
    let reply: Reply;
    if (fault?.status) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
      reply = {
        status: fault.status,
        headers,
        body: fault.body ?? JSON.stringify({ error: `emulated ${fault.status}` }),
      };
    } else if (fault?.garbage) {
      reply = {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: '<html><body>502 Bad Gateway</body></html>',
      };
    } else {
      reply = await this.dispatch(rec);
    }
    this.write(res, reply, fault);
  }

  private async dispatch(rec: ReceivedRequest): Promise<Reply> {
    for (const r of this.routes) {
      if (r.method !== rec.method && r.method !== '*') continue;
      if (typeof r.path === 'string' ? r.path === rec.path : r.path.test(rec.path)) {
        rec.params = typeof r.path === 'string' ? [] : (r.path.exec(rec.path) ?? []).slice(1);
        return r.handler(rec);
      }
    }
    return { status: 404, body: { error: 'no such route in the emulator' } };
  }

  private write(res: http.ServerResponse, reply: Reply, fault: Fault | null): void {
    const text =
      typeof reply.body === 'string' ? reply.body : reply.body === undefined ? '' : JSON.stringify(reply.body);
    const buf = Buffer.from(text);
    const headers: Record<string, string> = { 'content-type': 'application/json', ...reply.headers };
    const status = reply.status ?? 200;
    if (fault?.truncate) {
      res.writeHead(status, { ...headers, 'content-length': String(buf.length + 64) });
      res.write(buf, () => res.socket?.destroy());
      return;
    }
    res.writeHead(status, { ...headers, 'content-length': String(buf.length) });
    if (!fault?.dripMs) {
      res.end(buf);
      return;
    }
    let i = 0;
    const timer = setInterval(() => {
      if (res.destroyed || i >= buf.length) {
        clearInterval(timer);
        if (!res.destroyed) res.end();
        return;
      }
      res.write(buf.subarray(i, ++i));
    }, fault.dripMs);
    res.on('close', () => clearInterval(timer));
  }
}

/** A bare emulator with the given routes, for tests that need a custom upstream. */
export async function startEmulator(
  routes: { method: string; path: string | RegExp; handler: Handler }[] = [],
): Promise<Emulator> {
  const em = new Emulator();
  for (const r of routes) em.route(r.method, r.path, r.handler);
  return em.listen();
}
