/**
 * URL userinfo becomes Basic auth, as curl and fetch do: `https://user:pass@node/` is how many
 * RPC providers hand out credentials, and an operator's RPC_URLS entry written that way must reach
 * the node with them. The userinfo is taken off the origin (it never reaches the pool key or a
 * log); an authorization header set by the caller wins.
 */
import type { Dispatch } from './types.js';

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // a stray % is sent as written
  }
};

/** The Basic credentials of a URL's userinfo, or null when it has none. */
export function basicAuth(url: URL): string | null {
  if (!url.username && !url.password) return null;
  return `Basic ${Buffer.from(`${decode(url.username)}:${decode(url.password)}`).toString('base64')}`;
}

export function userinfoAuth() {
  return (dispatch: Dispatch): Dispatch =>
    (opts, handler) => {
      const origin = String(opts.origin ?? '');
      if (!origin.includes('@')) return dispatch(opts, handler);
      const url = new URL(origin);
      const auth = basicAuth(url);
      const headers = { ...(opts.headers as Record<string, string> | undefined) };
      if (auth && !Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) headers.authorization = auth;
      return dispatch({ ...opts, origin: url.origin, headers }, handler);
    };
}
