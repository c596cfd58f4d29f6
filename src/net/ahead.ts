/**
 * Connections opened ahead (docs/outbound.md, "Connections opened ahead"): before a check thread
 * says it is ready, it opens connections to the providers the operator configured, so the first
 * checks after `/health` says `ok` do not pay a TCP (and TLS) handshake on a caller's time. Each
 * connection waits here until the pool asks for a connection to its origin, which it then gets
 * instead of a new one; one that waits longer than its keep time, or that the far end closes or
 * writes to while it waits, is closed and forgotten, so the pool never gets a connection that
 * could not carry a request. Nothing is sent on a connection until the pool sends a request.
 */
import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';

interface Waiting {
  socket: Socket;
  /** Stops watching the socket (its listeners and its timer); returns whether it is still usable. */
  take(): boolean;
}

/** A host name without the brackets a URL puts around an IPv6 address, as undici's connector takes it. */
const bare = (hostname: string): string => (hostname.startsWith('[') ? hostname.slice(1, -1) : hostname);

/** The key of an origin as undici's connector options name it. */
function keyOf(protocol: string, hostname: string, port: string): string {
  const p = port !== '' ? port : protocol === 'https:' ? '443' : '80';
  return `${protocol}//${bare(hostname).toLowerCase()}:${p}`;
}

export class AheadConnections {
  private readonly waiting = new Map<string, Waiting[]>();
  private closed = false;

  /** `base` opens every connection, ahead or not (the pool's own connector). */
  constructor(private readonly base: buildConnector.connector) {}

  /** The connector for the pool: a connection opened ahead to the origin if one waits, else a new one. */
  readonly connector: buildConnector.connector = (opts, cb) => {
    const key = keyOf(opts.protocol, opts.hostname, opts.port ?? '');
    const list = this.waiting.get(key);
    while (list !== undefined && list.length > 0) {
      const w = list.shift() as Waiting;
      if (list.length === 0) this.waiting.delete(key);
      if (!w.take()) continue;
      w.socket.ref();
      // The pool expects its callback on a later turn, as a new connection's would be.
      process.nextTick(cb, null, w.socket);
      return;
    }
    this.base(opts, cb);
  };

  /** Connections waiting for their first request. */
  get size(): number {
    let n = 0;
    for (const l of this.waiting.values()) n += l.length;
    return n;
  }

  /**
   * Opens `perOrigin` connections to each distinct http(s) origin of `urls`, each kept `keepMs` at
   * most. Resolves with how many connected once each has connected or failed, or after `waitMs`,
   * whichever is first; a connection that fails is forgotten (the first request to that origin
   * meets the failure itself, through the breaker).
   */
  open(urls: readonly string[], perOrigin: number, keepMs: number, waitMs: number): Promise<number> {
    const origins = new Map<string, URL>();
    for (const raw of urls) {
      let u: URL;
      try {
        u = new URL(raw);
      } catch {
        continue;
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') continue;
      origins.set(keyOf(u.protocol, u.hostname, u.port), u);
    }
    let connected = 0;
    const attempts: Array<Promise<void>> = [];
    for (const [key, u] of origins)
      for (let i = 0; i < perOrigin; i++)
        attempts.push(
          new Promise<void>((resolve) => {
            this.base(
              { host: u.host, hostname: bare(u.hostname), protocol: u.protocol, port: u.port },
              (err, socket) => {
                if (err === null && socket !== null) {
                  connected++;
                  this.keep(key, socket, keepMs);
                }
                resolve();
              },
            );
          }),
        );
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
    });
    return Promise.race([Promise.all(attempts), waited]).then(() => {
      clearTimeout(timer);
      return connected;
    });
  }

  private keep(key: string, socket: Socket, keepMs: number): void {
    // One that connects after the pool closed has nothing to wait for.
    if (this.closed) {
      socket.destroy();
      return;
    }
    const entries = this.waiting.get(key) ?? [];
    if (entries.length === 0) this.waiting.set(key, entries);
    let usable = true;
    const drop = (): void => {
      if (!usable) return;
      usable = false;
      stop();
      socket.destroy();
      const at = entries.indexOf(w);
      if (at !== -1) entries.splice(at, 1);
      if (entries.length === 0 && this.waiting.get(key) === entries) this.waiting.delete(key);
    };
    // Anything readable while waiting (an answer to no request, or the far end's close) makes the
    // connection unusable; reading nothing here leaves the stream paused for the pool.
    const onReadable = (): void => drop();
    const timer = setTimeout(drop, keepMs);
    timer.unref();
    const stop = (): void => {
      clearTimeout(timer);
      socket.off('readable', onReadable);
      socket.off('error', drop);
      socket.off('close', drop);
    };
    socket.on('readable', onReadable);
    socket.on('error', drop);
    socket.on('close', drop);
    // A connection waiting here keeps no thread alive.
    socket.unref();
    const w: Waiting = {
      socket,
      take: () => {
        if (!usable) return false;
        usable = false;
        stop();
        return !socket.destroyed && socket.readyState === 'open';
      },
    };
    entries.push(w);
  }

  /** Closes every waiting connection (the pool's close). */
  close(): void {
    this.closed = true;
    for (const list of [...this.waiting.values()]) for (const w of [...list]) if (w.take()) w.socket.destroy();
    this.waiting.clear();
  }
}
