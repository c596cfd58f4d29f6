/**
 * The x402 payment engine behind the billing gate. A paid request carries PAYMENT-SIGNATURE (v2)
 * or X-PAYMENT (v1); it is decoded, checked against our own offer and domain, checked on chain
 * when an RPC is configured, then claimed in the ledger by (asset, payer, nonce) so one signed
 * authorization buys exactly one answer. Settlement runs after the answer (or before it, with
 * X402_SETTLE_BEFORE_RESPONSE) and is retried from the ledger until it lands or gives up.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ApiRequest } from '../../http/api.js';
import { sendJson } from '../../http/errors.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import type { Store } from '../../store/types.js';
import type { PaymentGate } from '../gate.js';
import { UsdcChain } from './chain.js';
import { buildOffers, sendChallenge, setReceipt } from './challenge.js';
import { PRICE_ATOMIC, USDC_BASE } from './constants.js';
import { errorText } from './errors.js';
import { hasPaymentHeader, readPaymentHeader } from './header.js';
import { paymentsOff } from './off.js';
import { FacilitatorClient } from './settle-facilitator.js';
import { LocalSender, type SettlementSender } from './settle-local.js';
import { Settler, type AttemptOutcome, type RetryPolicy } from './settler.js';
import type { Offers, Rejection, StoredPayment } from './types.js';
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

  async function handle(req: ApiRequest, res: ServerResponse): Promise<HandleResult> {
    const h = readPaymentHeader(req.headers);
    const offers = buildOffers(config, req);
    if (h.kind === 'none') {
      sendChallenge(res, offers);
      return { ok: false };
    }
    if (h.kind === 'malformed') {
      count('malformed');
      res.setHeader('Cache-Control', 'no-store');
      sendJson(res, 400, { detail: h.detail });
      return { ok: false };
    }
    if (h.kind === 'rejected') return refuse(res, offers, h.version, h.rejection);
    const p = h.payment;
    const a = p.payload.authorization;
    const rejection = checkPayment(p, offers, Math.floor(Date.now() / 1000), config.x402SettleBeforeResponse);
    if (rejection !== null) return refuse(res, offers, p.version, rejection);
    const reject = (reason: Rejection['reason'], detail: string) =>
      refuse(res, offers, p.version, { reason, detail, payer: a.from });

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
    const claimed = await store.claimPayment({
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
    });
    if (!claimed)
      return reject('duplicate_settlement', 'This payment was already used: one authorization buys one answer.');
    count('verified');
    log.info({ paymentId: id, payer: a.from, x402Version: p.version }, 'x402 payment verified and claimed');

    if (config.x402SettleBeforeResponse) {
      const out = await settler.settle(id, { final: true });
      if (out.state !== 'settled') {
        return reject(
          'invalid_transaction_state',
          `Settlement failed: ${out.state === 'skipped' ? 'the payment is no longer pending' : out.error}`,
        );
      }
      setReceipt(res, p.version, { success: true, transaction: out.txHash, payer: a.from });
      return { ok: true, onServed: () => undefined };
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
      onServed() {
        if (served) return;
        served = true;
        void settler
          .settle(id)
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
