/**
 * Local settlement: our settler key sends `transferWithAuthorization` to the token and pays the
 * gas. Sends are serialized through one queue that owns the account nonce, so concurrent
 * settlements never race for a nonce; the wait for the receipt happens outside the queue.
 */
import { Signature, Wallet } from 'ethers';
import type { PaymentRecord } from '../../store/types.js';
import { USDC_ABI, type UsdcChain } from './chain.js';
import { errorText } from './errors.js';
import type { ExactEvmPayload } from './types.js';

export type SendResult = { ok: true; txHash: string } | { ok: false; error: string; txHash?: string };

export interface SettlementSender {
  /** Sends the payment's transfer; `onBroadcast` records the hash before the receipt is awaited. */
  send(rec: PaymentRecord, onBroadcast: (txHash: string) => Promise<void>): Promise<SendResult>;
}

export class LocalSender implements SettlementSender {
  private readonly wallet: Wallet;
  private queue: Promise<unknown> = Promise.resolve();
  private nextNonce: number | null = null;

  constructor(private readonly chain: UsdcChain, settlerKey: string, private readonly receiptTimeoutMs = 60_000) {
    this.wallet = new Wallet(settlerKey, chain.provider);
  }

  get address(): string {
    return this.wallet.address;
  }

  async send(rec: PaymentRecord, onBroadcast: (txHash: string) => Promise<void>): Promise<SendResult> {
    const { payload } = JSON.parse(rec.payload) as { payload: ExactEvmPayload };
    const a = payload.authorization;
    const sig = Signature.from(payload.signature);
    const data = USDC_ABI.encodeFunctionData('transferWithAuthorization', [
      a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, sig.v, sig.r, sig.s,
    ]);
    let gas: bigint;
    try {
      // Estimating simulates the call: a transfer the token would refuse fails here, unsent. It
      // needs no nonce, so it runs outside the queue and settlements simulate in parallel.
      gas = await this.wallet.estimateGas({ to: rec.asset, data });
    } catch (err) {
      return { ok: false, error: `the token refused the transfer: ${errorText(err)}` };
    }
    let txHash: string;
    try {
      txHash = await this.serial(async () => {
        const nonce = this.nextNonce ?? (await this.wallet.getNonce('pending'));
        try {
          const tx = await this.wallet.sendTransaction({ to: rec.asset, data, nonce, gasLimit: (gas * 12n) / 10n });
          this.nextNonce = nonce + 1;
          return tx.hash;
        } catch (err) {
          // The node may or may not have taken the nonce: read it again next time.
          this.nextNonce = null;
          throw err;
        }
      });
    } catch (err) {
      return { ok: false, error: `send failed: ${errorText(err)}` };
    }
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
