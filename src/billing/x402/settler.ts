/**
 * Drives each payment through the ledger: verified → settling → settled | failed. A failed attempt
 * stays `settling` with its error and is retried with exponential backoff by a loop that polls the
 * store, so settlements left unfinished by a restart (or by another process) are picked up again.
 * Before every attempt the chain is asked whether the authorization was already spent, which keeps
 * a retry from paying twice for a transfer that did land.
 */
import type { Logger } from '../../log.js';
import type {
  NewPayment,
  PaymentRecord,
  PaymentState,
  PaymentUpdate,
  PaymentUpdateFields,
  Store,
} from '../../store/types.js';
import type { UsdcChain } from './chain.js';
import { errorText } from './errors.js';
import type { SendResult, SettlementSender } from './settle-local.js';

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  pollMs: number;
  /** A `verified` payment younger than this belongs to a request still being served. */
  verifiedGraceMs: number;
}

export type AttemptOutcome =
  | { state: 'settled'; txHash: string }
  | { state: 'failed' | 'retry'; error: string }
  | { state: 'skipped' };

/** `waiting`: a transaction of ours for the payment is still in the node's pool, so none was sent. */
type Attempt = SendResult & { final?: boolean; waiting?: boolean };

/**
 * Whether the authorization's window has opened: the token wants block.timestamp > validAfter,
 * and a payer whose clock runs ahead may send a validAfter a few minutes in our future.
 */
export function validNow(rec: PaymentRecord, nowMs = Date.now()): boolean {
  let validAfter: number;
  try {
    const stored = JSON.parse(rec.payload) as { payload?: { authorization?: { validAfter?: unknown } } };
    validAfter = Number(stored.payload?.authorization?.validAfter ?? 0);
  } catch {
    return true;
  }
  return !Number.isFinite(validAfter) || Math.floor(nowMs / 1000) > validAfter;
}

/** The token refused the transfer, unsent, because its validAfter has not passed on chain yet. */
function notYetValid(result: Attempt): boolean {
  return !result.ok && result.txHash === undefined && /authorization is not yet valid/i.test(result.error);
}

/** A payment as its claim stored it: `verified`, no attempt yet, no transaction. */
export function claimedRecord(p: NewPayment, at = new Date()): PaymentRecord {
  return { ...p, state: 'verified', txHash: null, attempts: 0, lastError: null, createdAt: at, updatedAt: at };
}

interface QueuedWrite {
  update: PaymentUpdate;
  resolve(changed: boolean): void;
  reject(err: unknown): void;
}

export class Settler {
  private readonly inFlight = new Map<string, Promise<AttemptOutcome>>();
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private writes: QueuedWrite[] = [];

  constructor(
    private readonly store: Store,
    private readonly sender: SettlementSender,
    private readonly chain: UsdcChain | null,
    private readonly log: Logger,
    private readonly policy: RetryPolicy,
    private readonly onOutcome: (outcome: string) => void = () => undefined,
  ) {}

  backoffMs(attempts: number): number {
    return Math.min(this.policy.maxDelayMs, this.policy.baseDelayMs * 2 ** Math.max(0, attempts - 1));
  }

  /**
   * One attempt for one payment; concurrent calls for the same id share it. `claimed`: the
   * payment as this process's claim just stored it, so the attempt need not read it back; the
   * move to `settling` checks it is still `verified`, as it does for a record read from the store.
   */
  settle(id: string, opts: { final?: boolean; claimed?: PaymentRecord } = {}): Promise<AttemptOutcome> {
    const running = this.inFlight.get(id);
    if (running !== undefined) return running;
    const p = this.run(id, opts.final === true, opts.claimed).finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, p);
    return p;
  }

  /**
   * The settler's ledger writes: those made in one turn of the event loop (a block's receipts
   * arrive together, a hundred at 50 payments a second) go to the store as one write.
   */
  private update(id: string, from: PaymentState[], to: PaymentState, fields: PaymentUpdateFields): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.writes.push({ update: { id, from, to, fields }, resolve, reject });
      if (this.writes.length === 1) setImmediate(() => this.flushWrites());
    });
  }

  private flushWrites(): void {
    const batch = this.writes;
    this.writes = [];
    this.store.updatePayments(batch.map((w) => w.update)).then(
      (changed) => {
        for (const [i, w] of batch.entries()) w.resolve(changed[i]);
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  }

  private async run(id: string, lastChance: boolean, claimed?: PaymentRecord): Promise<AttemptOutcome> {
    const rec = claimed?.id === id ? claimed : await this.store.getPayment(id);
    if (rec === null || (rec.state !== 'verified' && rec.state !== 'settling')) return { state: 'skipped' };
    // The token refuses a transfer until its validAfter has passed: wait, without spending an attempt.
    if (!validNow(rec)) return { state: 'retry', error: 'the authorization is not valid yet' };
    if (!(await this.update(id, [rec.state], 'settling', { incrementAttempts: true }))) return { state: 'skipped' };
    const attempts = rec.attempts + 1;
    let result: Attempt;
    try {
      result = await this.attempt(rec);
    } catch (err) {
      result = { ok: false, error: errorText(err) };
    }
    const fields = { payer: rec.payer, nonce: rec.nonce, paymentId: id, attempts };
    if (result.ok) {
      // Another instance's retry may have found the same transfer mined and recorded it first:
      // the outcome is counted and logged by the instance whose move changed the row.
      if (await this.update(id, ['settling'], 'settled', { txHash: result.txHash, lastError: null })) {
        this.log.info({ ...fields, txHash: result.txHash }, 'x402 payment settled');
        this.onOutcome('settled');
      }
      return { state: 'settled', txHash: result.txHash };
    }
    if (!result.ok && result.waiting === true) {
      // Nothing was sent: this was a wait, not an attempt.
      await this.update(id, ['settling'], 'settling', { lastError: result.error, refundAttempt: true });
      return { state: 'retry', error: result.error };
    }
    if (notYetValid(result)) {
      // Our clock said the window was open, the chain's does not yet (a node's time may lag ours):
      // nothing was sent, so this was still the wait and spends no attempt.
      await this.update(id, ['settling'], 'settling', { lastError: result.error, refundAttempt: true });
      this.log.info(
        { ...fields, attempts: rec.attempts },
        'x402 settlement waits: the chain does not yet accept validAfter',
      );
      return { state: 'retry', error: result.error };
    }
    const txHash = result.txHash ?? rec.txHash;
    if (result.final === true || lastChance || attempts >= this.policy.maxAttempts) {
      if (await this.update(id, ['settling'], 'failed', { lastError: result.error, txHash })) {
        this.log.error({ ...fields, txHash, err: result.error }, 'x402 settlement failed for good');
        this.onOutcome('settle_failed');
      }
      return { state: 'failed', error: result.error };
    }
    await this.update(id, ['settling'], 'settling', { lastError: result.error, txHash });
    this.log.warn(
      { ...fields, txHash, err: result.error, retryInMs: this.backoffMs(attempts) },
      'x402 settlement attempt failed, will retry',
    );
    return { state: 'retry', error: result.error };
  }

  /**
   * Whether the authorization is already spent, and by which transaction: a retry asks first, so a
   * transfer that did land (sent before a crash, say) is never paid twice. A first attempt skips
   * the question (nothing of ours was sent yet, and it costs an RPC call on every payment) and asks
   * only when the token refuses the transfer.
   */
  private async spent(rec: PaymentRecord): Promise<Attempt | null> {
    if (this.chain === null) return null;
    if (rec.txHash !== null) {
      const receipt = await this.chain.receipt(rec.txHash);
      if (receipt !== null && receipt.status === 1) return { ok: true, txHash: rec.txHash };
    }
    if (await this.chain.authorizationUsed(rec.payer, rec.nonce)) {
      const tx = await this.chain.findSpendingTx(rec.payer, rec.nonce);
      if (tx !== null) return { ok: true, txHash: tx };
      return {
        ok: false,
        final: true,
        error: 'the authorization was spent or canceled on chain by another transaction',
      };
    }
    return null;
  }

  private async attempt(rec: PaymentRecord): Promise<Attempt> {
    const retry = rec.attempts > 0 || rec.txHash !== null;
    if (retry) {
      const known = await this.spent(rec);
      if (known !== null) return known;
      // Its transaction still waits for a block: another instance on the same ledger (or this one
      // before a restart) sent it and may still be waiting for the receipt. A second transfer would
      // only revert on chain at our gas, so wait for the first.
      if (rec.txHash !== null && this.chain !== null && (await this.chain.pending(rec.txHash)))
        return { ok: false, waiting: true, txHash: rec.txHash, error: 'its transaction is still waiting for a block' };
    }
    if (Math.floor(Date.now() / 1000) >= rec.validBefore) {
      return { ok: false, final: true, error: 'the authorization expired before it could be settled' };
    }
    const sent = await this.sender.send(rec, async (txHash) => {
      await this.update(rec.id, ['settling'], 'settling', { txHash });
    });
    if (!sent.ok && !retry && sent.txHash === undefined) return (await this.spent(rec)) ?? sent;
    return sent;
  }

  /** Settles every unsettled payment that is due; returns when this round is done. */
  async poll(): Promise<void> {
    const minAge = Math.min(this.policy.baseDelayMs, this.policy.verifiedGraceMs);
    const due = await this.store.listUnsettledPayments(minAge, 50);
    const now = Date.now();
    const work = due.filter((rec) => {
      const age = now - rec.updatedAt.getTime();
      if (!validNow(rec, now)) return false;
      return rec.state === 'verified' ? age >= this.policy.verifiedGraceMs : age >= this.backoffMs(rec.attempts);
    });
    await Promise.all(work.map((rec) => this.settle(rec.id)));
  }

  start(): void {
    if (this.timer !== null) return;
    const tick = () => {
      this.polling = this.poll()
        .catch((err) => this.log.error({ err: errorText(err) }, 'x402 settler poll failed'))
        .finally(() => {
          this.polling = null;
          if (this.timer !== null) this.timer = setTimeout(tick, this.policy.pollMs).unref();
        });
    };
    this.timer = setTimeout(tick, this.policy.pollMs).unref();
  }

  /**
   * Stops polling and waits up to `waitMs` for attempts under way to record their outcome. One
   * still waiting for its receipt after that stays `settling` and is resumed on the next start.
   */
  async stop(waitMs = 5000): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    let timeout: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timeout = setTimeout(resolve, waitMs).unref();
    });
    await Promise.race([Promise.allSettled([this.polling, ...this.inFlight.values()]), deadline]);
    clearTimeout(timeout);
  }
}
