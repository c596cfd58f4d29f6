/**
 * Redirects for request-supplied URLs, followed here so that each hop goes back through every
 * wrapper inside this one: its own circuit breaker, body cap, userinfo handling and, above all,
 * the SSRF guard with a fresh resolution. At most `maxRedirects` hops (default 3), then
 * `too_many_redirects`. 303 (and 301/302 after a POST) turn into a GET without a body, as browsers
 * do. On a hop to another origin the credentials stay behind: the URL's userinfo, and the
 * authorization and cookie headers.
 */
import type { Dispatcher } from 'undici';
import { ORIGIN_BOUND } from '../headers.js';
import { type Dispatch, type Handler, type NetDispatchOptions, NetRefusal, Forward } from './types.js';

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** The URL without its userinfo: the answered URL ends up in evidence. */
export function withoutCredentials(url: URL): string {
  if (!url.username && !url.password) return url.href;
  const u = new URL(url.href);
  u.username = '';
  u.password = '';
  return u.href;
}

class Follow extends Forward {
  private hops = 0;
  private next: URL | null = null;
  private failed = false;
  private lastStatus = 0;
  constructor(
    handler: Handler,
    private opts: NetDispatchOptions,
    private readonly dispatch: Dispatch,
  ) {
    super(handler);
  }

  private get url(): URL {
    return new URL(this.opts.path, String(this.opts.origin));
  }

  private fail(controller: Dispatcher.DispatchController, err: NetRefusal): void {
    this.failed = true;
    super.onResponseError(controller, err);
    controller.abort(err); // the rest of this hop's body is not wanted
  }

  override onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    this.lastStatus = status;
    const location = headers.location;
    if (REDIRECTS.has(status) && typeof location === 'string' && location !== '') {
      const max = this.opts.maxRedirects ?? 3;
      if (this.hops >= max) {
        this.fail(controller, new NetRefusal('too_many_redirects', `more than ${max} redirects`, { status }));
        return;
      }
      try {
        this.next = new URL(location, this.url);
      } catch {
        this.fail(controller, new NetRefusal('upstream_bad_response', 'redirect with an invalid Location', { status }));
      }
      return; // the redirect's own body is read and dropped
    }
    if (this.opts.trail) {
      this.opts.trail.url = withoutCredentials(this.url);
      this.opts.trail.redirects = this.hops;
    }
    super.onResponseStart(controller, status, headers, message);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.next === null && !this.failed) super.onResponseData(controller, chunk);
  }

  override onResponseEnd(controller: Dispatcher.DispatchController, trailers: Record<string, string | string[]>): void {
    if (this.failed) return;
    const next = this.next;
    if (next === null) {
      super.onResponseEnd(controller, trailers);
      return;
    }
    this.next = null;
    this.hops++;
    const here = this.url;
    let headers = { ...(this.opts.headers as Record<string, string> | undefined) };
    let { method, body } = this.opts;
    const status = this.lastStatus;
    if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
      if (method !== 'HEAD') method = 'GET';
      body = undefined;
      delete headers['content-type'];
    }
    if (next.origin !== here.origin) {
      headers = { ...headers };
      for (const h of ORIGIN_BOUND) delete headers[h];
      next.username = '';
      next.password = '';
    }
    const origin = `${next.protocol}//${next.username || next.password ? `${next.username}:${next.password}@` : ''}${next.host}`;
    this.opts = { ...this.opts, origin, path: `${next.pathname}${next.search}`, method, body, headers };
    this.dispatch(this.opts, this);
  }

  override onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    if (!this.failed) super.onResponseError(controller, err);
  }
}

export function followRedirects() {
  return (dispatch: Dispatch): Dispatch =>
    (opts, handler) =>
      dispatch(opts, new Follow(handler, opts as NetDispatchOptions, dispatch));
}
