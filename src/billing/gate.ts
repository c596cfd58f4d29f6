/**
 * The billing gate: runs after body validation and before the handler, and decides who pays for
 * the call. Order (docs/rules.md §7): credentials (401), then quota (429) or payment (402).
 */
import type { ApiHandler, ApiRequest, ApiResponse, Next } from '../http/api.js';
import type { Config } from '../config.js';
import { HttpError } from '../http/errors.js';
import { idempotencyKeyProblem, type Idempotency } from '../http/idempotency.js';
import { keyedPathFor, payPerCallPathFor, SIGNUP_PATH } from '../http/endpoints.js';
import type { Logger } from '../log.js';
import { PRICE_DISPLAY } from '../pricing.js';
import type { KeyRole, Plan, Store } from '../store/types.js';
import { KeyResolver, presentedKey } from './keys.js';
import { planLimit, quotaView, setQuotaHeaders, usagePeriod } from './quota.js';
import type { Metrics } from '../metrics.js';

/**
 * The x402 side of the gate, implemented by the payment engine.
 *
 * - `configured`: payments can be taken (X402_PAY_TO set). When false the gate never calls the rest.
 * - `hasPayment(req)`: the request carries a payment header (X-PAYMENT or PAYMENT-SIGNATURE);
 *   presence only, no verification.
 * - `challenge(req, res, note?)`: sends the 402 challenge; `note` is one extra sentence for the
 *   body (e.g. that an API key is the other way to pay).
 * - `handle(req, res)`: verifies and claims the attached payment. `{ok: false}` means it has
 *   already answered (402 or other). `{ok: true}` lets the handler run; the gate calls
 *   `onServed()` once, when the response has finished with a status below 500. After a 5xx it is
 *   not called: the caller was not served, so the payment should not be settled.
 */
export interface PaymentGate {
  readonly configured: boolean;
  hasPayment(req: ApiRequest): boolean;
  challenge(req: ApiRequest, res: ApiResponse, note?: string): void;
  handle(req: ApiRequest, res: ApiResponse): Promise<{ ok: true; onServed(): void } | { ok: false }>;
}

export interface BillingInfo {
  kind: 'key' | 'payment' | 'free';
  keyId?: string;
  /** The key's name in its account (the verdict log shows it). */
  keyName?: string;
  plan?: Plan;
  /** The key's account, whose one monthly quota the call drew on (docs/policies.md §1). */
  accountId?: string;
  role?: KeyRole;
  /** The policy the key answers under, by name. */
  policy?: string | null;
  /** The store could not count this call: a guard under a policy then answers `wait`. */
  storeDown?: boolean;
}

/** What the gate needs of an endpoint; the route table's entries fit. */
export interface GatedEndpoint {
  path: string;
  access: 'free' | 'paid' | 'payment_only';
  /** Request schema name, used to point at the equivalent keyed or pay-per-call path. */
  request?: string;
}

export interface BillingGateDeps {
  config: Readonly<Config>;
  store: Store;
  logger: Logger;
  payments?: PaymentGate;
  /** Key lookups; by default a 5 s, 10,000-entry cache in front of the store. */
  keys?: KeyResolver;
  metrics?: Pick<Metrics, 'quotaRejection'>;
  /** Idempotency-Key answers (docs/policies.md §9); absent: the header is ignored. */
  idempotency?: Idempotency | null;
  now?: () => Date;
}

export { SIGNUP_PATH };

/** How often a key's `last_used_at` is written at most: it is shown to the minute. */
const LAST_USED_EVERY_MS = 60_000;

/**
 * Keeps `last_used_at` without a write per call: a key is noted at most once a minute, and the
 * keys noted during one turn of the event loop are written in one statement.
 */
class LastUsed {
  private readonly seen = new Map<string, number>();
  private batch: string[] = [];

  constructor(
    private readonly store: Pick<Store, 'touchKeys'>,
    private readonly log: Logger,
  ) {}

  note(keyId: string, at: Date): void {
    const t = at.getTime();
    const last = this.seen.get(keyId);
    if (last !== undefined && t - last < LAST_USED_EVERY_MS) return;
    if (this.seen.size > 100_000) this.seen.clear();
    this.seen.set(keyId, t);
    if (this.batch.push(keyId) === 1) {
      setImmediate(() => {
        const ids = this.batch;
        this.batch = [];
        this.store.touchKeys(ids, at).catch((err: unknown) => this.log.warn({ err }, 'last_used_at not written'));
      });
    }
  }
}
const BEARER_REALM = 'Bearer realm="preflight"';

/** The x402 path serving the same request shape, for pointers in 429 and 401 answers. */
function payPerCallPath(e: GatedEndpoint): string {
  const paying = e.request === undefined ? null : payPerCallPathFor(e.request);
  return paying ?? e.path;
}

/** The keyed path serving the same request shape, from the endpoint table. */
function keyedPath(e: GatedEndpoint): string | null {
  return e.request === undefined ? null : keyedPathFor(e.request);
}

const isoSeconds = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * `createBillingGate(deps)(endpoint)` is the middleware for one endpoint.
 *
 * Decisions where the docs were silent:
 * - A request presenting a key takes the key path even when it also carries a payment; the
 *   payment is then left untouched (not claimed, so the authorization stays unspent). Only when
 *   the key's quota is used up and a payment is attached does the payment pay for the call.
 * - An unknown or revoked key is a 401 even when a payment is attached: the caller asked to be
 *   billed to that key.
 * - `payment_only` endpoints ignore keys. When x402 is not configured they answer 401 pointing at
 *   the keyed path for the same request.
 * - A counted call whose response ends with a 5xx is refunded; a payment's `onServed` is then not
 *   called.
 */
export function createBillingGate(deps: BillingGateDeps): (endpoint: GatedEndpoint) => ApiHandler {
  const { config, store } = deps;
  const payments = deps.payments?.configured ? deps.payments : undefined;
  const keys = deps.keys ?? new KeyResolver(store);
  const now = deps.now ?? (() => new Date());
  const log = deps.logger.child({ component: 'billing' });
  const used = new LastUsed(store, log);

  function storeDown(err: unknown, what: string): HttpError {
    log.error({ err, what }, 'billing store unavailable');
    return new HttpError(
      503,
      'The billing store is unavailable right now; nothing was counted. Retry shortly.',
      {},
      { 'Retry-After': '5' },
    );
  }

  async function viaPayment(req: ApiRequest, res: ApiResponse, next: Next, note?: string): Promise<void> {
    if (!payments) throw new Error('viaPayment without configured payments');
    if (!payments.hasPayment(req)) {
      payments.challenge(req, res, note);
      return;
    }
    const out = await payments.handle(req, res);
    if (!out.ok) return;
    res.locals.billing = { kind: 'payment' } satisfies BillingInfo;
    res.once('finish', () => {
      if (res.statusCode < 500) out.onServed();
    });
    next();
  }

  function noCredentials(): HttpError {
    return new HttpError(
      401,
      `An API key is required: get a free one with POST ${SIGNUP_PATH}, then send it as the x-api-key header or as Authorization: Bearer <key>.`,
      { signup: SIGNUP_PATH },
      { 'WWW-Authenticate': BEARER_REALM },
    );
  }

  function paymentsOff(e: GatedEndpoint): HttpError {
    const alt = keyedPath(e);
    const tail = alt
      ? ` Use ${alt} with an API key instead (free key: POST ${SIGNUP_PATH}).`
      : ` Use an API key on the keyed endpoints (free key: POST ${SIGNUP_PATH}).`;
    return new HttpError(
      401,
      `${e.path} is paid per call with x402, which this server has not configured.${tail}`,
      { signup: SIGNUP_PATH },
      { 'WWW-Authenticate': BEARER_REALM },
    );
  }

  async function viaKey(e: GatedEndpoint, raw: string, req: ApiRequest, res: ApiResponse, next: Next): Promise<void> {
    let record: Awaited<ReturnType<typeof keys.resolve>>;
    try {
      record = await keys.resolve(raw);
    } catch (err) {
      throw storeDown(err, 'key lookup');
    }
    if (!record || record.revokedAt !== null) {
      throw new HttpError(
        401,
        `Unknown or revoked API key. Get a new one with POST ${SIGNUP_PATH}.`,
        { signup: SIGNUP_PATH },
        { 'WWW-Authenticate': `${BEARER_REALM}, error="invalid_token"` },
      );
    }
    // A repeat under an Idempotency-Key gets the first answer and counts nothing (docs/policies.md §9).
    if (deps.idempotency && (await deps.idempotency.begin(req, res, record)) === 'answered') return;
    const at = now();
    const period = usagePeriod(at);
    const limit = planLimit(config, record.plan);
    // One quota per account: its keys all count under the account's id (docs/policies.md §1).
    const accountId = record.accountId;
    let usage: Awaited<ReturnType<typeof store.consumeQuota>>;
    try {
      usage = await store.consumeQuota(accountId, period, limit);
    } catch (err) {
      // A guard under a policy still answers, uncounted: its policy item cannot be checked either,
      // so the answer is `wait` (policy_unavailable), never `proceed` (docs/policies.md §3, step 7).
      if (record.policy !== null && e.request === 'GuardRequest') {
        log.error({ err, what: 'quota' }, 'billing store unavailable; a guard under a policy answers wait');
        res.locals.billing = {
          kind: 'key',
          keyId: record.id,
          plan: record.plan,
          accountId,
          role: record.role,
          policy: record.policy,
          storeDown: true,
        } satisfies BillingInfo;
        return next();
      }
      throw storeDown(err, 'quota');
    }
    const view = quotaView(limit, usage.used, at);
    setQuotaHeaders(res, view);
    if (!usage.allowed) {
      if (payments?.hasPayment(req)) return viaPayment(req, res, next);
      deps.metrics?.quotaRejection(record.plan);
      const resetsAt = isoSeconds(view.resetsAt);
      throw new HttpError(
        429,
        `The monthly quota of this API key (${record.plan} plan, ${limit} calls) is used up; it resets at ${resetsAt}.` +
          (payments ? ` Meanwhile each call can be paid with x402 at ${payPerCallPath(e)} (${PRICE_DISPLAY}).` : ''),
        {
          limit,
          used: usage.used,
          resets_at: resetsAt,
          plan: record.plan,
          pay_per_call: payments ? { endpoint: payPerCallPath(e), price: PRICE_DISPLAY } : null,
        },
        { 'Retry-After': String(view.resetSeconds) },
      );
    }
    const keyId = record.id;
    res.locals.billing = {
      kind: 'key',
      keyId,
      keyName: record.name,
      plan: record.plan,
      accountId,
      role: record.role,
      policy: record.policy,
    } satisfies BillingInfo;
    used.note(keyId, at);
    res.once('finish', () => {
      if (res.statusCode < 500) return;
      store.refundQuota(accountId, period).catch((err: unknown) => log.error({ err, keyId }, 'quota refund failed'));
    });
    next();
  }

  return (e) => {
    if (!config.billing || e.access === 'free') {
      return (_req, res, next) => {
        res.locals.billing = { kind: 'free' } satisfies BillingInfo;
        next();
      };
    }
    if (e.access === 'payment_only') {
      return async (req, res, next) => {
        if (!payments) throw paymentsOff(e);
        await viaPayment(req, res, next);
      };
    }
    return async (req, res, next) => {
      // A malformed Idempotency-Key is refused like a malformed body, before credentials.
      const malformed = deps.idempotency ? idempotencyKeyProblem(req) : null;
      if (malformed) throw malformed;
      const raw = presentedKey(req);
      if (raw !== null) return viaKey(e, raw, req, res, next);
      if (!payments) throw noCredentials();
      await viaPayment(
        req,
        res,
        next,
        `An API key also works here: get a free one with POST ${SIGNUP_PATH} and send it as x-api-key.`,
      );
    };
  };
}
