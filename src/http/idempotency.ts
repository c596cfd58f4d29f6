/**
 * Idempotency-Key on keyed POSTs (docs/policies.md §9). The billing gate asks `begin` once it
 * knows the key and before it counts the call: the first attempt under (account, Idempotency-Key)
 * takes it and runs; its 200 answer is kept for 24 hours and given, byte for byte, to every repeat
 * of the same request, which counts no call and reserves nothing; a repeat while the first is
 * still running waits for it (in this process on its promise, across processes by polling the
 * store); the same key on another request is a 409.
 */
import { createHash, randomUUID } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { IdempotencyClaim, Store } from '../store/types.js';
import type { ApiRequest, ApiResponse } from './api.js';
import { captureBody } from './capture.js';
import { HttpError } from './errors.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** 1 to 255 visible ASCII characters (0x21 to 0x7E): no spaces, no control characters. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** How long an answer is kept under its key. */
export const IDEMPOTENCY_KEEP_MS = 24 * 60 * 60 * 1000;
/** How long a running attempt holds its key past the longest deadline before another may take it (a crashed instance). */
const LEASE_MARGIN_MS = 60_000;
/** How long a repeat waits for the first attempt past the longest deadline, then 409 with Retry-After. */
const WAIT_MARGIN_MS = 5000;
/** How often a repeat asks the store again while the first attempt runs on another instance. */
const POLL_MS = 25;

/**
 * The 422 of a malformed Idempotency-Key, or null when it is absent or well formed. Checked with
 * the body, before credentials: a malformed key costs nothing.
 */
export function idempotencyKeyProblem(req: Pick<ApiRequest, 'headers'>): HttpError | null {
  const v = req.headers[IDEMPOTENCY_HEADER];
  if (v === undefined || (typeof v === 'string' && KEY_PATTERN.test(v))) return null;
  return new HttpError(422, [
    {
      loc: ['header', 'Idempotency-Key'],
      msg: 'Idempotency-Key should be 1 to 255 visible ASCII characters (0x21 to 0x7E), sent once',
      type: 'idempotency_key',
    },
  ]);
}

/** Who asked what: the key, the endpoint and the body as parsed JSON (key order and spacing do not count). */
export function idempotencyFingerprint(keyId: string, route: string, body: unknown): string {
  return createHash('sha256')
    .update(`${keyId}\n${route}\n${canonicalize(body ?? null) ?? 'null'}`)
    .digest('hex');
}

export interface IdempotencyDeps {
  store: Pick<Store, 'claimIdempotencyKey' | 'completeIdempotencyKey' | 'releaseIdempotencyKey'>;
  logger: Logger;
  /** The longest request deadline (MAX_DEADLINE_MS): how long a first attempt may run. */
  maxDeadlineMs: number;
  metrics?: Pick<Metrics, 'idempotency'>;
}

export interface Idempotency {
  /**
   * For a request with a valid key of `accountId`: 'go' when it is to be served (with no
   * Idempotency-Key, or as the first attempt under it), 'answered' when the kept answer was sent.
   * Throws an HttpError for a conflict (409) or a store that cannot answer (503).
   */
  begin(req: ApiRequest, res: ApiResponse, key: { id: string; accountId: string }): Promise<'go' | 'answered'>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function createIdempotency(deps: IdempotencyDeps): Idempotency {
  const { store } = deps;
  const log = deps.logger.child({ component: 'idempotency' });
  const leaseMs = deps.maxDeadlineMs + LEASE_MARGIN_MS;
  /** Attempts running in this process, by account and key: repeats here wait on these. */
  const running = new Map<string, Promise<void>>();

  function unavailable(err: unknown): HttpError {
    log.error({ err }, 'idempotency store unavailable');
    return new HttpError(
      503,
      'The store of Idempotency-Key answers is unavailable right now; nothing was counted. Retry shortly with the same key.',
      {},
      { 'Retry-After': '5' },
    );
  }

  function replay(res: ApiResponse, status: number, body: string): void {
    res.setHeader('idempotent-replayed', 'true');
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('content-length', Buffer.byteLength(body));
    res.end(body);
  }

  /** Runs from the moment the attempt took the key: keeps its 200 answer, or frees the key for a retry. */
  function hold(res: ApiResponse, accountId: string, key: string, owner: string, slot: string): void {
    let settle!: () => void;
    running.set(
      slot,
      new Promise<void>((r) => {
        settle = r;
      }),
    );
    let ended = false;
    captureBody(res, (status, body) => {
      if (ended) return;
      ended = true;
      const write =
        status === 200
          ? store.completeIdempotencyKey(accountId, key, owner, { status, body }, IDEMPOTENCY_KEEP_MS)
          : store.releaseIdempotencyKey(accountId, key, owner);
      write
        .catch((err: unknown) => log.error({ err, status }, 'Idempotency-Key answer not kept'))
        .finally(() => {
          running.delete(slot);
          settle();
        });
    });
  }

  return {
    async begin(req, res, k) {
      const key = req.headers[IDEMPOTENCY_HEADER];
      if (typeof key !== 'string') return 'go';
      const slot = `${k.accountId}\u0000${key}`;
      const ask = {
        accountId: k.accountId,
        key,
        fingerprint: idempotencyFingerprint(k.id, res.locals.route ?? '', req.body),
        owner: randomUUID(),
        leaseMs,
      };
      const waitUntil = Date.now() + deps.maxDeadlineMs + WAIT_MARGIN_MS;
      for (;;) {
        let claim: IdempotencyClaim;
        try {
          claim = await store.claimIdempotencyKey(ask);
        } catch (err) {
          throw unavailable(err);
        }
        if (claim.kind === 'new') break;
        if (claim.kind === 'done') {
          deps.metrics?.idempotency('replayed');
          // The access line names the key that asked; nothing is counted or logged for a replay.
          res.locals.billing = { kind: 'key', keyId: k.id, accountId: k.accountId };
          replay(res, claim.status, claim.body);
          return 'answered';
        }
        if (claim.kind === 'conflict') {
          deps.metrics?.idempotency('conflict');
          throw new HttpError(
            409,
            'This Idempotency-Key was already used for another request (another key of the account, endpoint or body); use a new key for a new request.',
          );
        }
        const left = waitUntil - Date.now();
        if (left <= 0) {
          deps.metrics?.idempotency('in_flight');
          throw new HttpError(
            409,
            'The first request with this Idempotency-Key is still being answered; retry shortly with the same key.',
            {},
            { 'Retry-After': '1' },
          );
        }
        const here = running.get(slot);
        await (here ? Promise.race([here, sleep(left)]) : sleep(POLL_MS));
      }
      deps.metrics?.idempotency('first');
      hold(res, k.accountId, key, ask.owner, slot);
      return 'go';
    },
  };
}
