/**
 * Local settlement: our settler key sends `transferWithAuthorization` to the token and pays the
 * gas. Sends are serialized through one queue that owns the account nonce, so concurrent
 * settlements never race for a nonce; the wait for the receipt happens outside the queue.
 * Transactions are encoded by raw-tx.ts, signed with secp.ts and sent through the lean RPC client.
 */
import { Signature, Wallet, getBytes } from 'ethers';
import type { PaymentRecord } from '../../store/types.js';
import { calldata, type FeeData, type UsdcChain } from './chain.js';
import { CHAIN_ID } from './constants.js';
import { errorText } from './errors.js';
import { type RawTxFields, signedRawTx, signingHash } from './raw-tx.js';
import { signDigestBytes } from './secp.js';
import type { ExactEvmPayload } from './types.js';

export type SendResult = { ok: true; txHash: string } | { ok: false; error: string; txHash?: string };

export interface SettlementSender {
  /** Sends the payment's transfer; `onBroadcast` records the hash before the receipt is awaited. */
  send(rec: PaymentRecord, onBroadcast: (txHash: string) => Promise<void>): Promise<SendResult>;
}

/**
 * Fee data is read at most this often: a burst of settlements shares one reading. The max fee is
 * twice the base fee, which covers several blocks of the largest rise EIP-1559 allows (12.5 %).
 */
const FEE_TTL_MS = 2000;

export class LocalSender implements SettlementSender {
  private readonly wallet: Wallet;
  private readonly keyBytes: Uint8Array;
  private queue: Promise<unknown> = Promise.resolve();
  private nextNonce: number | null = null;
  private fees: { at: number; data: Promise<FeeData> } | null = null;

  private readonly receiptTimeoutMs: number;
  private readonly sendingLimit: number;
  private sending = 0;
  private readonly turns: Array<() => void> = [];

  /**
   * `sending`: settlements between their gas estimate and their broadcast at once (default 2).
   * That stretch is work for the node and this thread; a burst of paid calls would otherwise start
   * it for every payment together and queue the next callers' balance checks behind it. Waiting
   * for receipts is not limited.
   */
  constructor(
    private readonly chain: UsdcChain,
    settlerKey: string,
    opts: { receiptTimeoutMs?: number; sending?: number } = {},
  ) {
    this.wallet = new Wallet(settlerKey);
    this.keyBytes = getBytes(settlerKey);
    this.receiptTimeoutMs = opts.receiptTimeoutMs ?? 60_000;
    this.sendingLimit = Math.max(1, opts.sending ?? 2);
  }

  /** A place among the `sending`; released, it passes straight to the longest waiter. */
  private async turn(): Promise<() => void> {
    if (this.sending < this.sendingLimit) this.sending++;
    else await new Promise<void>((resolve) => this.turns.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.turns.shift();
      if (next) next();
      else this.sending--;
    };
  }

  get address(): string {
    return this.wallet.address;
  }

  private feeData(): Promise<FeeData> {
    const now = Date.now();
    if (this.fees === null || now - this.fees.at > FEE_TTL_MS) {
      const data = this.chain.feeData();
      this.fees = { at: now, data };
      data.catch(() => {
        if (this.fees?.data === data) this.fees = null;
      });
    }
    return this.fees.data;
  }

  async send(rec: PaymentRecord, onBroadcast: (txHash: string) => Promise<void>): Promise<SendResult> {
    const release = await this.turn();
    try {
      return await this.sendTurn(rec, onBroadcast, release);
    } finally {
      release();
    }
  }

  private async sendTurn(
    rec: PaymentRecord,
    onBroadcast: (txHash: string) => Promise<void>,
    release: () => void,
  ): Promise<SendResult> {
    const { payload } = JSON.parse(rec.payload) as { payload: ExactEvmPayload };
    const a = payload.authorization;
    const sig = Signature.from(payload.signature);
    const data = calldata.transferWithAuthorization(a, sig.v, sig.r, sig.s);
    let gas: bigint;
    let fees: FeeData;
    try {
      // Estimating simulates the call: a transfer the token would refuse fails here, unsent. It
      // needs no nonce, so it runs outside the queue and settlements simulate in parallel.
      gas = await this.chain.estimateGas({ from: this.wallet.address, to: rec.asset, data });
    } catch (err) {
      return { ok: false, error: `the token refused the transfer: ${errorText(err)}` };
    }
    try {
      fees = await this.feeData();
    } catch (err) {
      return { ok: false, error: `reading fees failed: ${errorText(err)}` };
    }
    let txHash: string;
    try {
      txHash = await this.serial(async () => {
        const nonce = this.nextNonce ?? (await this.chain.pendingNonce(this.wallet.address));
        try {
          const tx: RawTxFields = {
            chainId: BigInt(CHAIN_ID),
            nonce,
            gasLimit: (gas * 12n) / 10n,
            to: rec.asset,
            value: 0n,
            data,
            fees:
              fees.maxFeePerGas !== null && fees.maxPriorityFeePerGas !== null
                ? { maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas }
                : { gasPrice: fees.gasPrice ?? 0n },
          };
          const raw = signedRawTx(tx, signDigestBytes(signingHash(tx), this.keyBytes));
          const hash = await this.chain.sendRaw(raw);
          this.nextNonce = nonce + 1;
          return hash;
        } catch (err) {
          // The node may or may not have taken the nonce: read it again next time.
          this.nextNonce = null;
          throw err;
        }
      });
    } catch (err) {
      return { ok: false, error: `send failed: ${errorText(err)}` };
    }
    release();
    await onBroadcast(txHash);
    try {
      const receipt = await this.chain.waitForReceipt(txHash, this.receiptTimeoutMs);
      if (receipt === null) return { ok: false, error: 'no receipt before the timeout', txHash };
      if (receipt.status !== 1) return { ok: false, error: 'transaction reverted on chain', txHash };
      return { ok: true, txHash };
    } catch (err) {
      return { ok: false, error: `waiting for the receipt failed: ${errorText(err)}`, txHash };
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
