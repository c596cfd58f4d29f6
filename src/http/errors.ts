/**
 * One error catalogue, one error middleware. Every error body is JSON with a `detail`;
 * validation errors carry the FastAPI-style array, everything else a sentence.
 */
import type { ServerResponse } from 'node:http';
import type { ApiErrorHandler, ApiHandler } from './api.js';
import type { Logger } from '../log.js';
import { JSON_TEXT, jsonString, type ValidationDetail } from '../wire.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string | ValidationDetail[],
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : 'validation failed');
  }
}

/**
 * Sends `body` as JSON with `status` in one write: express's res.json turns the text into a
 * Buffer and hands node headers and body separately, which costs a second copy and a writev.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = bodyJson(body);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}

/**
 * JSON.stringify(body), the same text, with the values that carry their own JSON text (JSON_TEXT,
 * src/wire.ts: an answer's attestation, its evidence items) written from that text rather than
 * walked. A body's own properties are written in JSON.stringify's order, each value by
 * JSON.stringify or from its text, and so are the elements of an array among them. A body, a
 * property or an element with a toJSON method is left to JSON.stringify whole, which calls that
 * method with the key it expects; so is anything that is not a plain object.
 */
export function bodyJson(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return JSON.stringify(body);
  const obj = body as Record<string, unknown>;
  if (typeof obj.toJSON === 'function') return JSON.stringify(body);
  let out = '{';
  for (const key of Object.keys(obj)) {
    const text = valueText(obj[key], true);
    if (text === null) return JSON.stringify(body);
    // undefined, a function or a symbol: JSON leaves the property out.
    if (text === undefined) continue;
    out += `${out.length === 1 ? '' : ','}${jsonString(key)}:${text}`;
  }
  return `${out}}`;
}

/**
 * A value's JSON text: its own (JSON_TEXT) when it carries one, else JSON.stringify's, an array
 * of the body's (`top`) written element by element; undefined where JSON.stringify gives
 * undefined, and null when the value has a toJSON method (the body is then JSON.stringify's whole).
 */
function valueText(value: unknown, top: boolean): string | undefined | null {
  // The scalars an answer is mostly made of, written without a call into the runtime each.
  if (typeof value === 'string') return jsonString(value);
  if (typeof value === 'number') return Number.isFinite(value) ? `${value}` : 'null';
  if (typeof value === 'boolean' || value === null) return `${value}`;
  if (typeof value !== 'object') return JSON.stringify(value);
  const own = (value as { [JSON_TEXT]?: unknown })[JSON_TEXT];
  if (typeof own === 'string') return own;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return null;
  return top && Array.isArray(value) ? arrayText(value) : JSON.stringify(value);
}

/** An array's JSON text, its elements' own texts used where they carry one; null if an element has a toJSON method. */
function arrayText(items: unknown[]): string | null {
  let out = '[';
  for (let i = 0; i < items.length; i++) {
    const text = valueText(items[i], false);
    if (text === null) return null;
    // In an array, JSON writes null for undefined, a function or a symbol.
    out += `${i === 0 ? '' : ','}${text === undefined ? 'null' : text}`;
  }
  return `${out}]`;
}

/** The 422 for a body that is not JSON, with the parser's own sentence. */
export function jsonInvalid(message: string): HttpError {
  return new HttpError(422, [{ loc: ['body', 0], msg: `JSON decode error: ${message}`, type: 'json_invalid' }]);
}

export const notFound: ApiHandler = () => {
  throw new HttpError(404, 'Not Found');
};

export function methodNotAllowed(allowed: string[]): ApiHandler {
  return () => {
    throw new HttpError(405, 'Method Not Allowed', {}, { allow: allowed.join(', ') });
  };
}

/** 262144 → `256 KiB`, 2097152 → `2 MiB`. */
function sizeText(bytes: number): string {
  return bytes >= 1 << 20 && bytes % (1 << 20) === 0 ? `${bytes / (1 << 20)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}

/** body-parser's errors, mapped to the catalogue. */
function fromBodyParser(err: {
  type?: string;
  limit?: number;
  status?: number;
  code?: string;
  message?: string;
  body?: string;
}): HttpError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return jsonInvalid(err.message ?? 'invalid JSON');
    case 'entity.too.large':
      return new HttpError(413, `Request body too large: the limit is ${sizeText(err.limit ?? 262_144)}`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError(415, `Unsupported body encoding: ${err.message ?? ''}`.trim());
    case 'request.aborted':
      return new HttpError(400, 'Request aborted before the body was read');
    case 'request.size.invalid':
      return new HttpError(400, 'Request body size did not match Content-Length');
    default:
      // A Content-Encoding the parser knows (gzip, deflate, br) over bytes that do not decode:
      // zlib's error, passed on untyped with status 400.
      if (
        err.status === 400 &&
        typeof err.code === 'string' &&
        /^(Z_|ERR__|ERR_ZLIB|ERR_BROTLI|ERR_ZSTD)/.test(err.code)
      ) {
        return new HttpError(
          400,
          `Request body could not be decompressed as its Content-Encoding says: ${err.message ?? err.code}`,
        );
      }
      return null;
  }
}

export function errorHandler(logger: Logger): ApiErrorHandler {
  return (err, req, res, _next) => {
    const known = err instanceof HttpError ? err : fromBodyParser((err ?? {}) as Parameters<typeof fromBodyParser>[0]);
    if (!known) {
      logger.error(
        { err, reqId: res.locals.requestId, method: req.method, url: req.originalUrl ?? req.url },
        'unhandled error',
      );
    }
    const e = known ?? new HttpError(500, 'Internal Server Error');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
    sendJson(res, e.status, { detail: e.detail, ...e.extra });
  };
}
