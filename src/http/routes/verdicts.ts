/**
 * GET /v1/verdicts (docs/policies.md §10): the account's verdict log, newest first, a page at a time
 * with an opaque cursor, for its owner key only.
 */
import type { Store, VerdictEntry, VerdictQuery } from '../../store/types.js';
import type { VerdictLog } from '../../verdicts/log.js';
import type { ApiHandler } from '../api.js';
import { HttpError, sendJson } from '../errors.js';
import type { ValidationDetail } from '../../wire.js';
import { fromStore } from '../../billing/management.js';

export const VERDICT_PAGE_MAX = 500;
export const VERDICT_PAGE_DEFAULT = 50;
const VERDICTS = ['proceed', 'wait', 'block'] as const;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;
const RECORD_ID = /^0x[0-9a-f]{64}$/;
const KEY_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The cursor after a row: its (at, id), opaque to the caller. */
export function encodeCursor(e: { at: number; id: string }): string {
  return Buffer.from(JSON.stringify([e.at, e.id]), 'utf8').toString('base64url');
}

export function decodeCursor(s: string): { at: number; id: string } | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(s)) return null;
  try {
    const v = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && v[0] >= 0 && RECORD_ID.test(String(v[1])))
      return { at: v[0] as number, id: v[1] as string };
  } catch {
    // not ours: the 422 below
  }
  return null;
}

/** The page asked for, or every problem with the query as a 422 (loc `["query", name]`). */
export function readVerdictQuery(q: URLSearchParams, accountId: string): VerdictQuery {
  const problems: ValidationDetail[] = [];
  const bad = (name: string, msg: string, type: string) => problems.push({ loc: ['query', name], msg, type });
  const one = (name: string): string | undefined => {
    const v = q.getAll(name);
    if (v.length === 0) return undefined;
    if (v.length > 1) {
      bad(name, 'Give this parameter once', 'value_error');
      return undefined;
    }
    return v[0];
  };
  let limit = VERDICT_PAGE_DEFAULT;
  const l = one('limit');
  if (l !== undefined) {
    if (!/^\d{1,4}$/.test(l) || Number(l) < 1 || Number(l) > VERDICT_PAGE_MAX)
      bad('limit', `Input should be an integer from 1 to ${VERDICT_PAGE_MAX}`, 'int_range');
    else limit = Number(l);
  }
  let before: VerdictQuery['before'] = null;
  const c = one('cursor');
  if (c !== undefined) {
    before = decodeCursor(c);
    if (before === null) bad('cursor', 'Input should be a next_cursor from an earlier page', 'value_error');
  }
  const key = one('key');
  if (key !== undefined && !KEY_ID.test(key)) bad('key', 'Input should be the id of one of your keys', 'value_error');
  const verdict = one('verdict');
  if (verdict !== undefined && !(VERDICTS as readonly string[]).includes(verdict))
    bad('verdict', "Input should be 'proceed', 'wait' or 'block'", 'enum');
  let since: number | null = null;
  const s = one('since');
  if (s !== undefined) {
    const t = RFC3339.test(s) ? Date.parse(s) : Number.NaN;
    if (Number.isNaN(t)) bad('since', 'Input should be an RFC 3339 date-time, e.g. 2026-11-26T00:00:00Z', 'datetime');
    else since = t;
  }
  if (problems.length > 0) throw new HttpError(422, problems);
  return { accountId, limit, before, keyId: key ?? null, verdict: verdict ?? null, since };
}

/** A row as the page shows it. */
export function verdictJson(e: VerdictEntry) {
  return {
    id: e.id,
    at: new Date(e.at).toISOString(),
    key_id: e.keyId,
    key_name: e.keyName,
    endpoint: e.endpoint,
    verdict: e.verdict,
    risk: e.risk,
    failure_modes: e.failureModes,
    policy: e.policy,
    reserved_usd: e.reservedUsd,
    reservation: e.reservation,
  };
}

export interface VerdictsDeps {
  store: Pick<Store, 'verdictPage' | 'listAccountKeys'>;
  /** This instance's batch, written before the page is read so a caller sees its own answers. */
  log: Pick<VerdictLog, 'flush'>;
}

/** Behind the management chain (src/http/management.ts), which admits the account's owner key only. */
export function verdictsHandler(deps: VerdictsDeps): ApiHandler {
  return async (req, res) => {
    const accountId = res.locals.billing?.accountId;
    if (accountId === undefined) throw new Error('GET /v1/verdicts reached without a checked key');
    const q = readVerdictQuery(new URL(req.url ?? '/', 'http://x').searchParams, accountId);
    if (q.keyId !== null) {
      const keys = await fromStore(deps.store.listAccountKeys(accountId));
      if (!keys.some((k) => k.id === q.keyId)) throw new HttpError(404, `No key ${q.keyId} in this account.`);
    }
    await deps.log.flush();
    const page = await fromStore(deps.store.verdictPage({ ...q, limit: q.limit + 1 }));
    const more = page.length > q.limit;
    const shown = more ? page.slice(0, q.limit) : page;
    res.setHeader('cache-control', 'no-store');
    sendJson(res, 200, {
      verdicts: shown.map(verdictJson),
      next_cursor: more ? encodeCursor(shown[shown.length - 1]) : null,
    });
  };
}
