/**
 * fetch for REQUEST-SUPPLIED URLs (http check, rpc/tx rpc_url, bridge status_url).
 *
 * The host is resolved here, every address is classified, and the connection goes to one of
 * those exact addresses (the URL's host travels only in the Host header and TLS SNI), so DNS
 * rebinding or an odd numeric spelling cannot swap the target after the check. Every redirect
 * hop goes through the same rules.
 */
import { Agent, type Dispatcher } from 'undici';
import type { UpstreamErrorReason, UpstreamFail, UpstreamResult } from '../upstreams/types.js';
import { classifyAddress, type AddressClass } from './address.js';
import { canonicalIp } from './ip.js';
import { ORIGIN_BOUND, sanitizeHeaders } from './headers.js';
import { deadline } from './deadline.js';
import { systemResolver, type Resolver } from './resolver.js';
import { send, type RawResponse, type SendResult } from './transport.js';
import { cancelled, failureVerdict, hostPort, throughCircuit, type CallVerdict } from './breaker.js';

export interface SafeFetchOptions {
  signal?: AbortSignal;
  method?: 'GET' | 'HEAD' | 'POST';
  headers?: Readonly<Record<string, string>>;
  body?: string;
  /** Own time limit on top of `signal`. */
  timeoutMs?: number;
  /** ALLOW_PRIVATE_TARGETS: let loopback/private/link-local targets through. */
  allowPrivate?: boolean;
  /** Redirects followed before answering too_many_redirects (default 3). */
  maxRedirects?: number;
  maxBodyBytes?: number;
  resolver?: Resolver;
  dispatcher?: Dispatcher;
  /** Evidence source name; defaults to the URL's host name. */
  source?: string;
  /**
   * The circuit breaker of each hop's host:port (net/breaker.ts): its metric label (default
   * http_target), and which complete answers count as failures of the host. By default none do:
   * a caller's page answering 500 is what the http and bridge checks judge, not a dead host.
   */
  circuit?: { label?: string; failed?: (res: RawResponse) => boolean };
}

export interface SafeResponse extends RawResponse {
  finalUrl: string;
  redirects: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// The fetch standard's "bad ports": other protocols that a crafted HTTP request could talk to.
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

let sharedAgent: Agent | null = null;
function agent(): Agent {
  sharedAgent ??= new Agent({
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 30_000,
    connections: 128,
    connect: { timeout: 5_000 },
  });
  return sharedAgent;
}

/** Close the shared connection pool (graceful shutdown). */
export async function closeSafeFetchAgent(): Promise<void> {
  const a = sharedAgent;
  sharedAgent = null;
  await a?.close();
}

type Refusal = { ok: false; reason: 'target_forbidden' | 'upstream_unreachable' | 'upstream_timeout'; message: string };
type Targets = { ok: true; addresses: { family: 4 | 6; ip: string }[] } | Refusal;

const label = (c: AddressClass): string => (c === 'invalid' ? 'an unusable' : `a ${c.replace('_', '-')}`);

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The checks that need no DNS (scheme, port, a literal address, loopback names); null: resolve the name. */
function precheck(url: URL, allowPrivate: boolean): Targets | null {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return {
      ok: false,
      reason: 'target_forbidden',
      message: `scheme ${url.protocol.replace(':', '')} is not allowed (http and https only)`,
    };
  }
  if (url.port !== '' && BAD_PORTS.has(Number(url.port)))
    return { ok: false, reason: 'target_forbidden', message: `port ${url.port} is not allowed` };
  const host = url.hostname;
  const literal = canonicalIp(host);
  if (literal) {
    const cls = classifyAddress(literal.ip);
    if (cls !== 'public' && !allowPrivate)
      return { ok: false, reason: 'target_forbidden', message: `${host} is ${label(cls)} address` };
    return { ok: true, addresses: [literal] };
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if (!allowPrivate && (name === 'localhost' || name.endsWith('.localhost'))) {
    return { ok: false, reason: 'target_forbidden', message: `${host} is a loopback name` };
  }
  return null;
}

/** The addresses of a host name, every one of them classified. */
async function resolveTargets(
  url: URL,
  allowPrivate: boolean,
  resolver: Resolver,
  signal: AbortSignal,
): Promise<Targets> {
  const host = url.hostname;
  let resolved: string[];
  try {
    resolved = await abortable(resolver(host), signal);
  } catch (err) {
    if (signal.aborted)
      return { ok: false, reason: 'upstream_timeout', message: `resolving ${host} did not finish in time` };
    return {
      ok: false,
      reason: 'upstream_unreachable',
      message: `could not resolve ${host} (${(err as { code?: string }).code ?? 'error'})`,
    };
  }
  const addresses: { family: 4 | 6; ip: string }[] = [];
  for (const a of resolved) {
    const ip = canonicalIp(a);
    const cls = ip ? classifyAddress(ip.ip) : 'invalid';
    // Refuse when ANY address is forbidden: the client must not pick the safe one today and the
    // internal one tomorrow.
    if (!ip || (cls !== 'public' && !allowPrivate)) {
      return { ok: false, reason: 'target_forbidden', message: `${host} resolves to ${label(cls)} address` };
    }
    addresses.push(ip);
  }
  if (addresses.length === 0) return { ok: false, reason: 'upstream_unreachable', message: `${host} has no addresses` };
  return { ok: true, addresses };
}

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // a stray % is sent as written
  }
};

/** URL userinfo (common in RPC URLs) becomes Basic auth, as curl does. */
function basicAuth(url: URL): string | null {
  if (!url.username && !url.password) return null;
  return `Basic ${Buffer.from(`${decode(url.username)}:${decode(url.password)}`).toString('base64')}`;
}

/** The URL without its userinfo: finalUrl ends up in evidence. */
function withoutCredentials(url: URL): string {
  if (!url.username && !url.password) return url.href;
  const u = new URL(url.href);
  u.username = '';
  u.password = '';
  return u.href;
}

async function hop(
  url: URL,
  addresses: { family: 4 | 6; ip: string }[],
  dispatcher: Dispatcher,
  o: {
    method: 'GET' | 'HEAD' | 'POST';
    headers: Record<string, string>;
    body?: string;
    signal: AbortSignal;
    maxBodyBytes?: number;
  },
): Promise<SendResult> {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const headers: Record<string, string> = { ...o.headers, host: url.host };
  const auth = basicAuth(url);
  if (auth && !headers.authorization) headers.authorization = auth;
  let last: SendResult | null = null;
  for (const a of addresses) {
    const origin = `${url.protocol}//${a.family === 6 ? `[${a.ip}]` : a.ip}:${port}`;
    last = await send(dispatcher, origin, `${url.pathname}${url.search}`, { ...o, headers });
    // Another address of the same host is worth a try only when this one refused the connection.
    if (last.ok || !last.connectFailed) return last;
  }
  return last as SendResult;
}

export async function safeFetch(rawUrl: string, opts: SafeFetchOptions = {}): Promise<UpstreamResult<SafeResponse>> {
  const started = performance.now();
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return {
      ok: false,
      reason: 'target_forbidden',
      message: 'not a valid absolute URL',
      source: opts.source ?? 'unknown',
      latencyMs: 0,
    };
  }
  const source = opts.source ?? url.hostname;
  const done = (r: {
    reason: UpstreamErrorReason;
    message: string;
    status?: number;
    retryAfterS?: number;
  }): UpstreamFail => ({
    ok: false,
    reason: r.reason,
    message: r.message,
    source,
    latencyMs: Math.round(performance.now() - started),
    ...(r.status === undefined ? {} : { status: r.status }),
    ...(r.retryAfterS === undefined ? {} : { retryAfterS: r.retryAfterS }),
  });
  const label = opts.circuit?.label ?? 'http_target';
  const judge = (r: SendResult | Refusal): CallVerdict => {
    if (cancelled(opts.signal)) return 'ignore';
    if (!r.ok) return failureVerdict(r.reason, 'status' in r ? r.status : undefined);
    const final = !REDIRECTS.has(r.res.status) || !r.res.headers.location;
    return final && opts.circuit?.failed?.(r.res) ? 'failure' : 'success';
  };
  const maxRedirects = opts.maxRedirects ?? 3;
  const dl = deadline(opts.signal, opts.timeoutMs ?? (opts.signal ? undefined : 10_000));
  let method = opts.method ?? 'GET';
  let body = opts.body;
  let headers = sanitizeHeaders(opts.headers);
  if (!headers['user-agent']) headers['user-agent'] = 'preflight-verifier';
  try {
    for (let redirects = 0; ; ) {
      const allowPrivate = opts.allowPrivate ?? false;
      const pre = precheck(url, allowPrivate);
      // A refusal on the URL's face needs no call and never waits on a breaker. The name is
      // resolved inside the breaker: while it is open, a host whose DNS hangs is not asked again.
      if (pre !== null && !pre.ok) return done(pre);
      const hopOpts = { method, headers, body, signal: dl.signal, maxBodyBytes: opts.maxBodyBytes };
      const here = url;
      const call = async (): Promise<SendResult | Refusal> => {
        const t = pre ?? (await resolveTargets(here, allowPrivate, opts.resolver ?? systemResolver, dl.signal));
        return t.ok ? hop(here, t.addresses, opts.dispatcher ?? agent(), hopOpts) : t;
      };
      const r = await throughCircuit({ scope: 'target', label, host: hostPort(here) }, source, call, judge);
      if (!r.ok) return done(r);
      const location = r.res.headers.location;
      if (!REDIRECTS.has(r.res.status) || !location) {
        return {
          ok: true,
          data: { ...r.res, finalUrl: withoutCredentials(url), redirects },
          source,
          latencyMs: Math.round(performance.now() - started),
        };
      }
      if (redirects >= maxRedirects)
        return done({
          reason: 'too_many_redirects',
          message: `more than ${maxRedirects} redirects`,
          status: r.res.status,
        });
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        return done({
          reason: 'upstream_bad_response',
          message: 'redirect with an invalid Location',
          status: r.res.status,
        });
      }
      redirects++;
      if (r.res.status === 303 || ((r.res.status === 301 || r.res.status === 302) && method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = undefined;
        const { 'content-type': _ct, ...rest } = headers;
        headers = rest;
      }
      if (next.origin !== url.origin) {
        headers = { ...headers };
        for (const h of ORIGIN_BOUND) delete headers[h];
      }
      url = next;
    }
  } finally {
    dl.done();
  }
}
