/**
 * Refuses every outbound URL that does not go to loopback, for tests that load libraries which
 * phone home (AgentKit sends analytics when a wallet provider is built and on every action). Install
 * it before such a library is imported. It wraps the four ways a Node library reaches the network
 * over HTTP: global `fetch`, the undici global dispatcher (every connection it opens goes through
 * a connector that checks the host), and `http`/`https` `request` and `get`. A host is allowed when
 * it is an IP literal the service's own address classifier (src/net/address.ts) calls loopback, or
 * a name the given resolver maps to loopback addresses only; nothing else is resolved, so a refused
 * name is never even looked up.
 */
import http from 'node:http';
import https from 'node:https';
import { type Dispatcher, buildConnector, getGlobalDispatcher, setGlobalDispatcher, Agent } from 'undici';
import { classifyAddress } from '../../src/net/address.js';

/** A synchronous name → addresses table; a name it does not know is refused. */
export type StubResolver = (hostname: string) => readonly string[] | undefined;

export const LOCALHOST_ONLY: StubResolver = (h) => (h === 'localhost' ? ['127.0.0.1', '::1'] : undefined);

/** True when every address `host` stands for is loopback (by the address classifier). */
export function isLoopbackHost(host: string, resolve: StubResolver = LOCALHOST_ONLY): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (classifyAddress(bare) !== 'invalid') return classifyAddress(bare) === 'loopback';
  const addresses = resolve(bare);
  return !!addresses && addresses.length > 0 && addresses.every((a) => classifyAddress(a) === 'loopback');
}

export class RefusedError extends Error {
  readonly code = 'ERR_NON_LOOPBACK_REFUSED';
  constructor(readonly target: string) {
    super(`refused a non-loopback target in a test: ${target}`);
    this.name = 'RefusedError';
  }
}

export interface LoopbackOnly {
  /** Every URL or host refused so far, in order. */
  refused: string[];
  /** The undici connector the global dispatcher opens every connection through. */
  connector: buildConnector.connector;
  dispatcher: Dispatcher;
  restore(): Promise<void>;
}

function hostOf(input: unknown): { host: string; shown: string } | null {
  if (typeof input === 'string' || input instanceof URL) {
    const u = new URL(String(input));
    return { host: u.hostname, shown: u.href };
  }
  if (input && typeof input === 'object') {
    const o = input as { url?: string; hostname?: string | null; host?: string | null; port?: unknown };
    if (typeof o.url === 'string') return hostOf(o.url);
    const host = o.hostname ?? o.host?.replace(/:\d+$/, '') ?? 'localhost';
    return { host, shown: `${host}:${String(o.port ?? '')}` };
  }
  return null;
}

export function installLoopbackOnly(resolve: StubResolver = LOCALHOST_ONLY): LoopbackOnly {
  const refused: string[] = [];
  const check = (input: unknown): void => {
    const t = hostOf(input);
    if (t && !isLoopbackHost(t.host, resolve)) {
      refused.push(t.shown);
      throw new RefusedError(t.shown);
    }
  };

  const originalFetch = globalThis.fetch;
  globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    try {
      check(input instanceof Request ? input.url : input);
    } catch (err) {
      if (err instanceof RefusedError)
        return new Response(null, { status: 204, headers: { 'x-refused-in-test': '1' } });
      throw err;
    }
    return originalFetch(input, init);
  }) as typeof fetch;

  const base = buildConnector({});
  const connector: buildConnector.connector = (opts, cb) => {
    if (!isLoopbackHost(opts.hostname, resolve)) {
      refused.push(`${opts.protocol}//${opts.hostname}:${opts.port}`);
      cb(new RefusedError(opts.hostname), null);
      return;
    }
    base(opts, cb);
  };
  const previous = getGlobalDispatcher();
  const dispatcher = new Agent({ connect: connector });
  setGlobalDispatcher(dispatcher);

  const wrapped: Array<[typeof http | typeof https, 'request' | 'get', unknown]> = [];
  for (const mod of [http, https]) {
    for (const name of ['request', 'get'] as const) {
      const original = mod[name] as (...a: unknown[]) => http.ClientRequest;
      wrapped.push([mod, name, original]);
      (mod as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        check(args[0]);
        return original.apply(mod, args);
      };
    }
  }

  return {
    refused,
    connector,
    dispatcher,
    async restore() {
      globalThis.fetch = originalFetch;
      setGlobalDispatcher(previous);
      for (const [mod, name, original] of wrapped) (mod as unknown as Record<string, unknown>)[name] = original;
      await dispatcher.close();
    },
  };
}
