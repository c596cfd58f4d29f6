/**
 * The Origin check of the browser-facing surface (docs/browser.md §1). A browser names the page
 * that made a request in `Origin`; a page on another site (or a DNS-rebound name that resolves to
 * this host) must not drive `/mcp` or the account's management endpoints with what the browser can
 * reach. A request whose Origin is not admitted is a 403 before anything else runs; a request with
 * no Origin (curl, an SDK, an agent) is served as before: only browsers send one.
 */
import type { Config } from '../config.js';
import { classifyAddress } from '../net/address.js';
import type { ApiHandler } from './api.js';
import { HttpError } from './errors.js';

/** localhost and its subdomains, and every loopback address (127.0.0.0/8, ::1, in any spelling a URL parser keeps). */
function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return classifyAddress(bare) === 'loopback';
}

/** Whether a browser page at `origin` (the header's value) may call the checked routes. */
export function originAdmitted(
  config: Pick<Config, 'allowedOrigins' | 'allowLoopbackOrigins'>,
  origin: string,
): boolean {
  // "null" (a sandboxed frame, a file: page) and anything unparsable name no page we know.
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
  if (config.allowedOrigins.includes(u.origin)) return true;
  return config.allowLoopbackOrigins && isLoopbackHost(u.hostname);
}

/**
 * The middleware: on a route of the endpoint table with `checkOrigin`, put right after the route
 * label, so a refused request reads no body, costs no quota and touches no key.
 */
export function checkOrigin(config: Pick<Config, 'allowedOrigins' | 'allowLoopbackOrigins'>): ApiHandler {
  return (req, _res, next) => {
    const origin = req.headers.origin;
    if (origin === undefined || originAdmitted(config, origin)) return next();
    throw new HttpError(
      403,
      'This origin may not call this endpoint: the service admits browser requests only from the origins in ALLOWED_ORIGINS.',
    );
  };
}
