/**
 * The POST router: the POST endpoints' own router in front of express. A POST to one of their exact paths runs its handler chain here,
 * without express's router; everything else goes to the express app.
 *
 * Why: on a cached decide, express's per-request machinery (the route table walk, body-parser's
 * stream plumbing, res.send's buffer handling) cost more CPU than the service's own work: bare
 * express 5 answers a fixed body about five times slower than node:http (bench/, `reference`).
 * The chains are the same handler functions the router runs, so behaviour does not depend on which
 * door a request came through: other spellings that express matches (a trailing slash, other
 * letter case) take the router and reach the same chains, and any body this module does not read
 * itself goes to body-parser.
 */
import type http from 'node:http';
import type { ApiErrorHandler, ApiHandler, ApiLocals, ApiRequest, ApiResponse, Next } from './api.js';
import { HttpError, jsonInvalid } from './errors.js';

/**
 * Reads a JSON body itself when it is the common case: a Content-Length within `limit`, no
 * Content-Encoding and no charset parameter. Anything else (chunked, compressed, a charset to
 * check, over the limit) goes to `fallback`, body-parser, which owns those answers (413, 415, ...).
 */
export function jsonBody(limit: number, fallback: ApiHandler): ApiHandler {
  return (req, res, next) => {
    const h = req.headers;
    const length = h['content-length'];
    const size = length === undefined ? NaN : Number(length);
    const encoding = h['content-encoding'];
    const type = h['content-type'];
    if (
      !(size > 0 && size <= limit) ||
      (encoding !== undefined && encoding !== 'identity') ||
      type?.includes('charset')
    ) {
      return fallback(req, res, next);
    }
    const chunks: Buffer[] = [];
    let done = false;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
    });
    req.once('end', () => {
      if (done) return;
      done = true;
      const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      req.rawBody = raw;
      let text = raw.toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // a UTF-8 byte order mark, as body-parser drops it
      req.bodyText = text;
      try {
        req.body = JSON.parse(text) as unknown;
      } catch (e) {
        return next(jsonInvalid((e as Error).message));
      }
      next();
    });
    // A client that goes away mid-body: node emits 'error' (ECONNRESET, "aborted") on the request.
    req.once('error', () => {
      if (done) return;
      done = true;
      next(new HttpError(400, 'Request aborted before the body was read'));
    });
  };
}

/**
 * `postRouter(app, chains, onError, notFound)` is the server's request listener. `chains` maps an
 * exact POST path to the handlers the router would run for it; a chain that calls next() past its
 * end, or next(err), ends in `notFound` or `onError` as the router's fall-through would. The
 * request and response stay node's own objects (see api.ts for why).
 */
export function postRouter(
  app: http.RequestListener,
  chains: ReadonlyMap<string, readonly ApiHandler[]>,
  onError: ApiErrorHandler,
  notFound: ApiHandler,
): http.RequestListener {
  return (rawReq, rawRes) => {
    if (rawReq.method !== 'POST') return app(rawReq, rawRes);
    const url = rawReq.url ?? '/';
    const q = url.indexOf('?');
    const chain = chains.get(q === -1 ? url : url.slice(0, q));
    if (chain === undefined) return app(rawReq, rawRes);

    const req = rawReq as ApiRequest;
    const res = rawRes as ApiResponse;
    req.originalUrl = url;
    res.locals = {} as ApiLocals; // requestContext, first in every chain, sets requestId and answerId

    let i = 0;
    const fail = (err: unknown): void => {
      try {
        onError(err, req, res, last);
      } catch {
        // The error handler itself failed (as express would, give up on this response).
        res.destroy();
      }
    };
    const last: Next = (err?: unknown) => {
      if (err !== undefined && err !== 'route' && err !== 'router') return fail(err);
      try {
        const out = notFound(req, res, fail);
        if (out instanceof Promise) out.then(undefined, fail);
      } catch (e) {
        fail(e);
      }
    };
    const step: Next = (err?: unknown) => {
      if (err !== undefined && err !== 'route' && err !== 'router') return fail(err);
      const fn = chain[i++];
      if (fn === undefined) return last();
      try {
        const out = fn(req, res, step);
        if (out instanceof Promise) out.then(undefined, (e: unknown) => fail(e ?? new Error('Rejected promise')));
      } catch (e) {
        fail(e);
      }
    };
    step();
  };
}
