/**
 * The x402 payment engine behind the billing gate. A paid request carries PAYMENT-SIGNATURE (v2)
 * or X-PAYMENT (v1); it is decoded, checked against our own offer and domain, checked on chain
 * when an RPC is configured, then claimed in the ledger by (asset, payer, nonce) so one signed
 * authorization buys exactly one answer. Settlement runs after the answer (or before it, with
 * X402_SETTLE_BEFORE_RESPONSE) and is retried from the ledger until it lands or gives up.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { requestPath, type ApiRequest } from '../../http/api.js';
import { captureBody } from '../../http/capture.js';
import { sendJson } from '../../http/errors.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import type { KeptAnswer, PaymentClaim, Store } from '../../store/types.js';
import type { PaymentGate } from '../gate.js';
import { UsdcChain } from './chain.js';
import { buildOffers, encodeHeaderJson, sendChallenge, setReceipt } from './challenge.js';
import { NETWORK_V2, PRICE_ATOMIC, RECEIPT_V2, USDC_BASE } from './constants.js';
import { readPaymentId } from './extensions.js';
import { errorText } from './errors.js';
import { hasPaymentHeader, readPaymentHeader } from './header.js';
import { paymentsOff } from './off.js';
import { FacilitatorClient } from './settle-facilitator.js';
import { LocalSender, type SettlementSender } from './settle-local.js';
import { claimedRecord, Settler, type AttemptOutcome, type RetryPolicy } from './settler.js';
import type { DecodedPayment, Offers, Rejection, StoredPayment } from './types.js';
import { checkPayment } from './verify.js';

export interface X402Deps {
  config: Readonly<Config>;
  store: Store;
  logger: Logger;
  metrics?: Pick<Metrics, 'payment'>;
  /** Settlement retry tuning; defaults suit production (5 attempts, 2 s doubling, 1 s poll). */
  retry?: Partial<RetryPolicy>;
  /** How often to poll the chain for a settlement's receipt (default 1000 ms). */
  receiptPollMs?: number;
}

export interface X402 extends PaymentGate {
  start(): void;
  stop(): Promise<void>;
  /** One settlement attempt for a ledger entry, now. */
  settleNow(id: string): Promise<AttemptOutcome>;
  /** One round of the settler loop, now. */
  settlePending(): Promise<void>;
}

type HandleResult = { ok: true; onServed(): void } | { ok: false };
type Verified = { ok: true; paymentId: string; onServed(): void } | { ok: false };

/** How long an answer is kept under its payment identifier (docs/x402.md §9). */
const PAYMENT_ID_TTL_MS = 24 * 60 * 60 * 1000;
/** How often a retry looks again while the first attempt with its id is still being served. */
const PAYMENT_ID_POLL_MS = 50;

/** The request a payment identifier is bound to: method, path and the JSON body as parsed. */
function fingerprint(req: ApiRequest): string {
  return createHash('sha256')
    .update(`${req.method ?? ''}\n${requestPath(req)}\n${JSON.stringify(req.body ?? null)}`)
    .digest('hex');
}

export function createX402(deps: X402Deps): X402 {
  const { config, store } = deps;
  const log = deps.logger.child({ component: 'x402' });
  const count = (outcome: string) => deps.metrics?.payment(outcome);
  if (config.x402PayTo === null) return paymentsOff();

  const payTo = config.x402PayTo;
  const chain =
    config.x402RpcUrl !== null
      ? UsdcChain.connect(config.x402RpcUrl, USDC_BASE, { pollingMs: deps.receiptPollMs })
      : null;
  // The request path reads through connections of its own: a burst of settlements (gas
  // estimates, sends, receipt polls) never queues a paying caller's balance check behind it.
  const reader = config.x402RpcUrl !== null ? UsdcChain.connect(config.x402RpcUrl, USDC_BASE) : null;
  let sender: SettlementSender;
  let facilitator: FacilitatorClient | null = null;
  if (config.x402Settlement === 'facilitator') {
    if (config.x402FacilitatorUrl === null) throw new Error('X402_SETTLEMENT=facilitator needs X402_FACILITATOR_URL');
    facilitator = new FacilitatorClient(config.x402FacilitatorUrl);
    sender = facilitator;
  } else {
    if (config.x402SettlerKey === null || chain === null)
      throw new Error('X402_SETTLEMENT=local needs X402_SETTLER_KEY and X402_RPC_URL');
    sender = new LocalSender(chain, config.x402SettlerKey, { sending: config.x402SettleConcurrency });
  }
  const policy: RetryPolicy = {
    maxAttempts: 5,
    baseDelayMs: 2000,
    maxDelayMs: 60_000,
    pollMs: 1000,
    verifiedGraceMs: config.maxDeadlineMs + 5000,
    ...deps.retry,
  };
  const settler = new Settler(store, sender, chain, log, policy, count);

  function refuse(res: ServerResponse, offers: Offers, version: 1 | 2, r: Rejection): { ok: false } {
    log.info({ reason: r.reason, payer: r.payer, x402Version: version }, 'x402 payment refused');
    count(r.reason);
    setReceipt(res, version, { success: false, errorReason: r.reason, transaction: '', payer: r.payer });
    sendChallenge(res, offers, { error: r.reason, detail: r.detail });
    return { ok: false };
  }

  function unavailable(res: ServerResponse, version: 1 | 2, payer: string, what: string, err: string): { ok: false } {
    log.error({ err, payer }, `x402 ${what} unavailable`);
    count('unavailable');
    setReceipt(res, version, { success: false, errorReason: 'unexpected_verify_error', transaction: '', payer });
    res.setHeader('Cache-Control', 'no-store').setHeader('Retry-After', '5');
    sendJson(res, 503, {
      detail: `Payment verification is unavailable right now (${what}); the payment was not used, retry shortly.`,
    });
    return { ok: false };
  }

  function badRequest(res: ServerResponse, detail: string): { ok: false } {
    count('malformed');
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, 400, { detail });
    return { ok: false };
  }

  /** The kept answer again, its receipt naming the settlement transaction once there is one. */
  async function replay(res: ServerResponse, kept: KeptAnswer, payer: string, pid: string): Promise<void> {
    let receipt = kept.receipt;
    const paid = await store.getPayment(kept.paymentId).catch(() => null);
    if (paid?.state === 'settled' && paid.txHash)
      receipt = encodeHeaderJson({ success: true, transaction: paid.txHash, network: NETWORK_V2, payer });
    count('replayed');
    log.info(
      { paymentId: kept.paymentId, payer, pid },
      'x402 payment identifier seen again: kept answer, no new charge',
    );
    res.setHeader(RECEIPT_V2, receipt);
    res.setHeader('Access-Control-Expose-Headers', 'PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE');
    res.statusCode = kept.status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('content-length', Buffer.byteLength(kept.body));
    res.end(kept.body);
  }

  async function handle(req: ApiRequest, res: ServerResponse): Promise<HandleResult> {
    const h = readPaymentHeader(req.headers);
    if (h.kind === 'payment' && h.payment.version === 2) {
      const pid = readPaymentId(h.payment.raw);
      if (pid.kind === 'malformed') return badRequest(res, pid.detail);
      if (pid.kind === 'id') return withPaymentId(req, res, h.payment, pid.id);
    }
    return verifyAndClaim(req, res, h);
  }

  /**
   * A v2 payment carrying a payment identifier (docs/x402.md §9). The signature is checked first,
   * so (payer, id) is the payer's own; then the id is taken for this attempt, or its kept answer
   * is given again (this authorization is never claimed nor settled), or a different request
   * under it is a 409. An attempt that is not served frees the id for the next one.
   */
  async function withPaymentId(req: ApiRequest, res: ServerResponse, p: DecodedPayment, id: string) {
    const offers = buildOffers(config, req);
    const rejection = checkPayment(p, offers, Math.floor(Date.now() / 1000));
    if (rejection !== null) return refuse(res, offers, p.version, rejection);
    const payer = p.payload.authorization.from.toLowerCase();
    const ask = { payer, pid: id, fingerprint: fingerprint(req), owner: randomUUID(), ttlMs: PAYMENT_ID_TTL_MS };
    const waitUntil = Date.now() + config.maxDeadlineMs + 5000;
    for (;;) {
      let claim: Awaited<ReturnType<Store['claimPaymentId']>>;
      try {
        claim = await store.claimPaymentId(ask);
      } catch (err) {
        return unavailable(res, 2, payer, 'payment store', errorText(err));
      }
      if (claim.kind === 'new') break;
      if (claim.kind === 'done') {
        await replay(res, claim.answer, p.payload.authorization.from, id);
        return { ok: false as const };
      }
      if (claim.kind === 'conflict' || Date.now() > waitUntil) {
        const inFlight = claim.kind !== 'conflict';
        count('payment_id_conflict');
        res.setHeader('Cache-Control', 'no-store');
        if (inFlight) res.setHeader('Retry-After', '1');
        sendJson(res, 409, {
          detail: inFlight
            ? 'A payment with this payment identifier is still being served; retry shortly with the same identifier.'
            : 'This payment identifier was already used for a different request (method, path or body); use a new identifier for a new request.',
        });
        return { ok: false as const };
      }
      await new Promise((r) => setTimeout(r, PAYMENT_ID_POLL_MS));
    }

    const release = () =>
      store
        .releasePaymentId(payer, id, ask.owner)
        .catch((err) => log.error({ pid: id, err: errorText(err) }, 'x402 could not free a payment identifier'));
    const capture = captureBody(res);
    let out: Verified;
    try {
      out = await verifyAndClaim(req, res, { kind: 'payment', payment: p });
    } catch (err) {
      await release();
      throw err;
    }
    if (!out.ok) {
      await release();
      return out;
    }
    const paymentId = out.paymentId;
    const inner = out.onServed;
    let kept = false;
    res.once('close', () => {
      if (!kept) void release();
    });
    return {
      ok: true,
      onServed() {
        if (kept) return;
        kept = true;
        inner();
        const receipt = res.getHeader(RECEIPT_V2);
        void store
          .completePaymentId(payer, id, ask.owner, {
            status: res.statusCode,
            body: capture(),
            receipt: typeof receipt === 'string' ? receipt : '',
            paymentId,
          })
          .catch((err) =>
            log.error({ pid: id, err: errorText(err) }, 'x402 could not keep the answer of a payment identifier'),
          );
      },
    };
  }

  async function verifyAndClaim(
    req: ApiRequest,
    res: ServerResponse,
    h: ReturnType<typeof readPaymentHeader>,
  ): Promise<Verified> {
    const offers = buildOffers(config, req);
    if (h.kind === 'none') {
      sendChallenge(res, offers);
      return { ok: false };
    }
    if (h.kind === 'malformed') return badRequest(res, h.detail);
    if (h.kind === 'rejected') return refuse(res, offers, h.version, h.rejection);
    const p = h.payment;
    const a = p.payload.authorization;
    const rejection = checkPayment(p, offers, Math.floor(Date.now() / 1000), config.x402SettleBeforeResponse);
    if (rejection !== null) return refuse(res, offers, p.version, rejection);
    const reject = (reason: Rejection['reason'], detail: string) =>
      refuse(res, offers, p.version, { reason, detail, payer: a.from });

    let balance: bigint | null = null;
    if (reader !== null) {
      let state: Awaited<ReturnType<typeof reader.payerState>>;
      try {
        state = await reader.payerState(a.from, a.nonce);
      } catch (err) {
        return unavailable(res, p.version, a.from, 'chain RPC', errorText(err));
      }
      if (state.nonceUsed) return reject('duplicate_settlement', 'This authorization nonce was already used on chain.');
      if (state.balance < BigInt(PRICE_ATOMIC))
        return reject('insufficient_funds', 'The payer holds less USDC than the price.');
      balance = state.balance;
    }
    const stored: StoredPayment = {
      x402Version: p.version,
      paymentPayload: p.raw,
      paymentRequirements: p.version === 2 ? offers.v2 : offers.v1,
      payload: p.payload,
    };
    if (facilitator !== null) {
      const verified = await facilitator.verify(stored);
      if (verified.kind === 'unavailable') return unavailable(res, p.version, a.from, 'facilitator', verified.error);
      if (verified.kind === 'invalid') {
        // The facilitator's own reason code, passed on; anything unlike a code is not repeated.
        const reason = /^[a-z0-9_]{1,80}$/.test(verified.reason) ? verified.reason : 'unexpected_verify_error';
        return reject(reason as Rejection['reason'], 'The facilitator refused this payment.');
      }
    }

    const id = randomUUID();
    const payment = {
      id,
      asset: USDC_BASE.toLowerCase(),
      payer: a.from.toLowerCase(),
      nonce: a.nonce.toLowerCase(),
      payTo: payTo.toLowerCase(),
      value: a.value,
      network: 'eip155:8453',
      x402Version: p.version,
      payload: JSON.stringify(stored),
      validBefore: Number(a.validBefore),
      resource: offers.resource.url,
    };
    // With the chain to ask, the balance must cover this payment and the payer's others not yet
    // settled: one balance spent on many payments at once buys one answer per payment it covers.
    let claim: PaymentClaim;
    if (balance === null) claim = (await store.claimPayment(payment)) ? 'claimed' : 'replay';
    else claim = await store.claimCoveredPayment(payment, balance);
    if (claim === 'replay')
      return reject('duplicate_settlement', 'This payment was already used: one authorization buys one answer.');
    if (claim === 'uncovered')
      return reject(
        'insufficient_funds',
        "The payer's USDC does not cover this payment and its payments still being settled.",
      );
    count('verified');
    log.info({ paymentId: id, payer: a.from, x402Version: p.version }, 'x402 payment verified and claimed');

    if (config.x402SettleBeforeResponse) {
      const out = await settler.settle(id, { final: true, claimed: claimedRecord(payment) });
      if (out.state !== 'settled') {
        return reject(
          'invalid_transaction_state',
          `Settlement failed: ${out.state === 'skipped' ? 'the payment is no longer pending' : out.error}`,
        );
      }
      setReceipt(res, p.version, { success: true, transaction: out.txHash, payer: a.from });
      return { ok: true, paymentId: id, onServed: () => undefined };
    }
    setReceipt(res, p.version, { success: true, transaction: '', payer: a.from });
    let served = false;
    // The gate calls onServed on 'finish' below 500; 'close' always comes after, so a response
    // that ends without onServed was not served and its payment is released, never settled.
    res.once('close', () => {
      if (served) return;
      void store
        .updatePayment(id, ['verified'], 'failed', { lastError: `not served (status ${res.statusCode})` })
        .then(() => {
          log.info({ paymentId: id, status: res.statusCode }, 'x402 payment released: request not served');
          count('not_served');
        })
        .catch((err) =>
          log.error({ paymentId: id, err: errorText(err) }, 'x402 could not release an unserved payment'),
        );
    });
    return {
      ok: true,
      paymentId: id,
      onServed() {
        if (served) return;
        served = true;
        void settler
          .settle(id, { claimed: claimedRecord(payment) })
          .catch((err) => log.error({ paymentId: id, err: errorText(err) }, 'x402 settlement crashed'));
      },
    };
  }

  return {
    configured: true,
    hasPayment: (req) => hasPaymentHeader(req.headers),
    challenge: (req, res, note) => sendChallenge(res, buildOffers(config, req), note === undefined ? {} : { note }),
    handle,
    start: () => settler.start(),
    async stop() {
      await settler.stop(); // the chain's connections are the operator pool's, closed with the service
    },
    settleNow: (id) => settler.settle(id),
    settlePending: () => settler.poll(),
  };
}
