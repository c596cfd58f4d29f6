/**
 * Downloads one list and parses it as it arrives (docs/screening.md §3): through the operator
 * dispatcher (the URL is the operator's; docs/outbound.md) with a body cap, an overall time limit
 * and a stall limit (no byte for `stallMs`), the chunks fed to the streaming parser. A body cut at
 * the cap, a status other than 2xx, a stall, a timeout or a file that does not parse are failures
 * with a reason; nothing here throws. Runs in the list worker (workers/list-worker.ts), so neither
 * the parse nor a hostile body touches the thread that answers requests.
 */
import { StringDecoder } from 'node:string_decoder';
import type { Dispatcher } from 'undici';
import { operatorDispatcher } from '../net/dispatchers.js';
import { TRUNCATED_TRAILER } from '../net/interceptors/types.js';
import { listParser, ListFormatError, type ParsedList } from './formats.js';
import type { ListKind } from './list.js';

export interface FetchListRequest {
  url: string;
  kind: ListKind;
  maxBytes: number;
  timeoutMs: number;
  stallMs: number;
}

export type FetchListResult =
  | { ok: true; parsed: ParsedList; bytes: number }
  | { ok: false; reason: 'unreachable' | 'http_error' | 'too_large' | 'timeout' | 'unparsable'; message: string };

/** The URL as logs may show it: no userinfo, no query (either may carry a key). */
export function listSource(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'invalid URL';
  }
}

export async function fetchList(
  req: FetchListRequest,
  dispatcher: Dispatcher = operatorDispatcher(),
): Promise<FetchListResult> {
  const ac = new AbortController();
  let why: 'timeout' | 'stall' | null = null;
  const total = setTimeout(() => {
    why = 'timeout';
    ac.abort();
  }, req.timeoutMs);
  let stall: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(stall);
    stall = setTimeout(() => {
      why = 'stall';
      ac.abort();
    }, req.stallMs);
  };
  const timedOut = (): FetchListResult => ({
    ok: false,
    reason: 'timeout',
    message:
      why === 'stall'
        ? `no data for ${req.stallMs} ms from ${listSource(req.url)}`
        : `no complete list within ${req.timeoutMs} ms from ${listSource(req.url)}`,
  });
  arm();
  try {
    const url = new URL(req.url);
    const origin = `${url.protocol}//${url.username || url.password ? `${url.username}:${url.password}@` : ''}${url.host}`;
    let res: Dispatcher.ResponseData;
    try {
      res = await dispatcher.request({
        origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { accept: req.kind === 'sanctions' ? 'application/xml, text/xml' : 'application/json, text/plain' },
        signal: ac.signal,
        maxBodyBytes: req.maxBytes,
      } as Dispatcher.RequestOptions);
    } catch (err) {
      if (why) return timedOut();
      return { ok: false, reason: 'unreachable', message: `${listSource(req.url)}: ${(err as Error).message}` };
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      res.body.resume();
      return { ok: false, reason: 'http_error', message: `${listSource(req.url)} answered HTTP ${res.statusCode}` };
    }
    const parser = listParser(req.kind);
    const decoder = new StringDecoder('utf8');
    let bytes = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        arm();
        bytes += chunk.length;
        parser.write(decoder.write(chunk));
      }
    } catch (err) {
      res.body.destroy();
      if (why) return timedOut();
      if (err instanceof ListFormatError)
        return { ok: false, reason: 'unparsable', message: `${listSource(req.url)}: ${err.message}` };
      return { ok: false, reason: 'unreachable', message: `${listSource(req.url)}: body ended early` };
    }
    if (res.trailers[TRUNCATED_TRAILER] !== undefined)
      return {
        ok: false,
        reason: 'too_large',
        message: `${listSource(req.url)} sent more than ${req.maxBytes} bytes (SCREENING_MAX_LIST_BYTES)`,
      };
    try {
      parser.write(decoder.end());
      return { ok: true, parsed: parser.end(), bytes };
    } catch (err) {
      return {
        ok: false,
        reason: 'unparsable',
        message: `${listSource(req.url)}: ${err instanceof ListFormatError ? err.message : 'not a list'}`,
      };
    }
  } catch (err) {
    if (why) return timedOut();
    return { ok: false, reason: 'unreachable', message: `${listSource(req.url)}: ${(err as Error).message}` };
  } finally {
    clearTimeout(total);
    clearTimeout(stall);
  }
}
