/**
 * The SSRF guard for request-supplied URLs, run on every call the caller dispatcher makes (so on
 * every redirect hop, the redirect wrapper sitting outside it). The host is resolved here, every
 * address is classified, and the connection goes to one of those exact addresses (the URL's host
 * travels only in the Host header and TLS SNI), so DNS rebinding or an odd numeric spelling cannot
 * swap the target after the check. Refused: schemes other than http(s), the fetch standard's bad
 * ports, and any name or literal that is not a public address (unless `allowPrivate`).
 */
import type { Dispatcher } from 'undici';
import { classifyAddress, type AddressClass } from '../address.js';
import { canonicalIp } from '../ip.js';
import { systemResolver } from '../resolver.js';
import { CONNECT_CODES } from '../transport.js';
import { type Dispatch, errorCode, type Handler, type NetDispatchOptions, NetRefusal, Forward } from './types.js';

// The fetch standard's "bad ports": other protocols that a crafted HTTP request could talk to.
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

type Address = { family: 4 | 6; ip: string };
type Targets = { ok: true; addresses: Address[] } | { ok: false; refusal: NetRefusal };

const label = (c: AddressClass): string => (c === 'invalid' ? 'an unusable' : `a ${c.replace('_', '-')}`);
const forbidden = (message: string): Targets => ({ ok: false, refusal: new NetRefusal('target_forbidden', message) });

/** The checks that need no DNS (scheme, port, a literal address, loopback names); null: resolve the name. */
export function precheck(url: URL, allowPrivate: boolean): Targets | null {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return forbidden(`scheme ${url.protocol.replace(':', '')} is not allowed (http and https only)`);
  if (url.port !== '' && BAD_PORTS.has(Number(url.port))) return forbidden(`port ${url.port} is not allowed`);
  const host = url.hostname;
  const literal = canonicalIp(host);
  if (literal) {
    const cls = classifyAddress(literal.ip);
    if (cls !== 'public' && !allowPrivate) return forbidden(`${host} is ${label(cls)} address`);
    return { ok: true, addresses: [literal] };
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if (!allowPrivate && (name === 'localhost' || name.endsWith('.localhost')))
    return forbidden(`${host} is a loopback name`);
  return null;
}

function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The addresses of a host name, every one of them classified. */
async function resolveTargets(url: URL, o: NetDispatchOptions): Promise<Targets> {
  const host = url.hostname;
  const signal = o.signal as AbortSignal | undefined;
  let resolved: string[];
  try {
    resolved = await abortable((o.resolver ?? systemResolver)(host), signal);
  } catch (err) {
    if (signal?.aborted)
      return { ok: false, refusal: new NetRefusal('upstream_timeout', `resolving ${host} did not finish in time`) };
    const code = (err as { code?: string }).code ?? 'error';
    return { ok: false, refusal: new NetRefusal('upstream_unreachable', `could not resolve ${host} (${code})`) };
  }
  const addresses: Address[] = [];
  for (const a of resolved) {
    const ip = canonicalIp(a);
    const cls = ip ? classifyAddress(ip.ip) : 'invalid';
    // Refuse when ANY address is forbidden: the client must not pick the safe one today and the
    // internal one tomorrow.
    if (!ip || (cls !== 'public' && !o.allowPrivate)) return forbidden(`${host} resolves to ${label(cls)} address`);
    addresses.push(ip);
  }
  if (addresses.length === 0)
    return { ok: false, refusal: new NetRefusal('upstream_unreachable', `${host} has no addresses`) };
  return { ok: true, addresses };
}

/** Tries the checked addresses in turn; the next one only when this one refused the connection. */
class Pinned extends Forward {
  private started = false;
  private next = 1;
  constructor(
    handler: Handler,
    private readonly addresses: Address[],
    private readonly send: (a: Address, h: Handler) => void,
  ) {
    super(handler);
  }
  override onResponseStart(...args: Parameters<Forward['onResponseStart']>): void {
    this.started = true;
    super.onResponseStart(...args);
  }
  override onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    if (!this.started && this.next < this.addresses.length && CONNECT_CODES.has(errorCode(err))) {
      this.send(this.addresses[this.next++], this);
      return;
    }
    super.onResponseError(controller, err);
  }
}

export function ssrfGuard() {
  return (dispatch: Dispatch): Dispatch =>
    (opts, handler) => {
      const o = opts as NetDispatchOptions;
      let url: URL;
      try {
        url = new URL(String(o.origin));
      } catch {
        handler.onResponseError?.(null as never, new NetRefusal('target_forbidden', 'not a valid absolute URL'));
        return true;
      }
      const port = url.port || (url.protocol === 'https:' ? '443' : '80');
      const send = (a: Address, h: Handler): void => {
        const origin = `${url.protocol}//${a.family === 6 ? `[${a.ip}]` : a.ip}:${port}`;
        const headers = { ...(o.headers as Record<string, string> | undefined), host: url.host };
        dispatch({ ...opts, origin, headers }, h);
      };
      const go = (t: Targets): void => {
        if (!t.ok) handler.onResponseError?.(null as never, t.refusal);
        else send(t.addresses[0], new Pinned(handler, t.addresses, send));
      };
      const pre = precheck(url, o.allowPrivate ?? false);
      if (pre !== null) go(pre);
      else resolveTargets(url, o).then(go, (err: Error) => handler.onResponseError?.(null as never, err));
      return true;
    };
}
