/**
 * Local settlement: our settler key sends `transferWithAuthorization` to the token and pays the
 * gas. Settlements go out in rounds, one round at a time: a round estimates the gas of every
 * settlement waiting (one JSON-RPC batch), signs them with consecutive nonces and broadcasts them
 * (a second batch). The first settlement after a quiet spell is a round of its own; those that
 * arrive while a round is under way wait for the next one, so a busy settler sends two requests a
 * round rather than two a payment. The round owns the account nonce, so settlements never race
 * for one; the wait for the receipt happens outside it. Transactions are encoded by raw-tx.ts,
 * signed with secp.ts and sent through the lean RPC client.
 */
import { Signature, Wallet, getBytes } from 'ethers';
import type { PaymentRecord } from '../../store/types.js';
import { calldata, type FeeData, type UsdcChain } from './chain.js';
import { CHAIN_ID } from './constants.js';
import { errorText } from './errors.js';
import { type RawTxFields, signedRawTx, signingHash } from './raw-tx.js';
import { signDigestBytes } from './secp.js';
import { keccak256 } from '../../crypto/keccak.js';
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

/** A settlement waiting for its round. */
interface Waiting {
  rec: PaymentRecord;
  data: string;
  done(result: SendResult): void;
}

/** Gas of a plain transfer of ether: what filling a nonce left unused costs. */
const TRANSFER_GAS = 21_000n;

export class LocalSender implements SettlementSender {
  private readonly wallet: Wallet;
  private readonly keyBytes: Uint8Array;
  private nextNonce: number | null = null;
  private fees: { at: number; data: Promise<FeeData> } | null = null;

  private readonly receiptTimeoutMs: number;
  private readonly roundLimit: number;
  private readonly waiting: Waiting[] = [];
  private rounds = false;

  /**
   * `sending`: settlements between their gas estimate and their broadcast at once, that is, the
   * most a round takes (default 2). That stretch is work for the node and this thread; a burst of
   * paid calls would otherwise start it for every payment together and queue the next callers'
   * balance checks behind it. Waiting for receipts is not limited.
   */
  constructor(
    private readonly chain: UsdcChain,
    settlerKey: string,
    opts: { receiptTimeoutMs?: number; sending?: number } = {},
  ) {
    this.wallet = new Wallet(settlerKey);
    this.keyBytes = getBytes(settlerKey);
    this.receiptTimeoutMs = opts.receiptTimeoutMs ?? 60_000;
    this.roundLimit = Math.max(1, opts.sending ?? 2);
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
    let data: string;
    try {
      const { payload } = JSON.parse(rec.payload) as { payload: ExactEvmPayload };
      const a = payload.authorization;
      const sig = Signature.from(payload.signature);
      data = calldata.transferWithAuthorization(a, sig.v, sig.r, sig.s);
    } catch (err) {
      return { ok: false, error: `the stored payment cannot be sent: ${errorText(err)}` };
    }
    const sent = await new Promise<SendResult>((done) => {
      this.waiting.push({ rec, data, done });
      this.pump();
    });
    if (!sent.ok) return sent;
    const { txHash } = sent;
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

  /**
   * Starts rounds unless they are under way; each round takes what waits when it starts. The flag
   * drops in the same step as the last look at the queue: a settlement queued a moment later
   * (even a microtask) finds no round and starts one.
   */
  private pump(): void {
    if (this.rounds) return;
    this.rounds = true;
    void (async () => {
      try {
        while (this.waiting.length > 0) {
          const batch = this.waiting.splice(0, this.roundLimit);
          try {
            await this.sendRound(batch);
          } catch (err) {
            this.nextNonce = null;
            for (const w of batch) w.done({ ok: false, error: `send failed: ${errorText(err)}` });
          }
        }
      } finally {
        this.rounds = false;
      }
    })();
  }

  /** Estimates, signs and broadcasts one round; every settlement of it is answered. */
  private async sendRound(batch: Waiting[]): Promise<void> {
    // Estimating simulates each call: a transfer the token would refuse fails here, unsent.
    let estimates: Array<bigint | Error>;
    try {
      estimates = await this.chain.estimateGasMany(
        batch.map((w) => ({ from: this.wallet.address, to: w.rec.asset, data: w.data })),
      );
    } catch (err) {
      estimates = batch.map(() => (err instanceof Error ? err : new Error(String(err))));
    }
    const going: Array<{ w: Waiting; gas: bigint }> = [];
    batch.forEach((w, i) => {
      const gas = estimates[i];
      if (gas instanceof Error) w.done({ ok: false, error: `the token refused the transfer: ${errorText(gas)}` });
      else going.push({ w, gas });
    });
    if (going.length === 0) return;
    let fees: FeeData;
    try {
      fees = await this.feeData();
    } catch (err) {
      for (const { w } of going) w.done({ ok: false, error: `reading fees failed: ${errorText(err)}` });
      return;
    }
    const first = this.nextNonce ?? (await this.chain.pendingNonce(this.wallet.address));
    const raws = going.map(({ w, gas }, i) =>
      this.signed(fees, first + i, { gasLimit: (gas * 12n) / 10n, to: w.rec.asset, data: w.data }),
    );
    let hashes: Array<string | Error>;
    try {
      hashes = await this.chain.sendRawMany(raws);
    } catch (err) {
      // The node may or may not have taken them: each keeps the hash its transaction would have,
      // so a retry asks the node about it before sending anything again.
      this.nextNonce = null;
      for (const [i, { w }] of going.entries())
        w.done({ ok: false, error: `send failed: ${errorText(err)}`, txHash: hashOf(raws[i]) });
      return;
    }
    const taken = hashes.map((h) => !(h instanceof Error));
    going.forEach(({ w }, i) => {
      const h = hashes[i];
      w.done(h instanceof Error ? { ok: false, error: `send failed: ${errorText(h)}` } : { ok: true, txHash: h });
    });
    if (taken.every(Boolean)) {
      this.nextNonce = first + going.length;
      return;
    }
    // The node refused some: read the nonce again next round. A refused nonce below one it took
    // would hold every later transaction back, so each such gap is filled with a transfer of
    // nothing to ourselves.
    this.nextNonce = null;
    const last = taken.lastIndexOf(true);
    const gaps = taken.flatMap((ok, i) => (!ok && i < last ? [first + i] : []));
    if (gaps.length > 0) {
      await this.chain
        .sendRawMany(
          gaps.map((nonce) =>
            this.signed(fees, nonce, { gasLimit: TRANSFER_GAS, to: this.wallet.address, data: '0x' }),
          ),
        )
        .catch(() => undefined);
    }
  }

  private signed(fees: FeeData, nonce: number, call: { gasLimit: bigint; to: string; data: string }): string {
    const tx: RawTxFields = {
      chainId: BigInt(CHAIN_ID),
      nonce,
      gasLimit: call.gasLimit,
      to: call.to,
      value: 0n,
      data: call.data,
      fees:
        fees.maxFeePerGas !== null && fees.maxPriorityFeePerGas !== null
          ? { maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas }
          : { gasPrice: fees.gasPrice ?? 0n },
    };
    return signedRawTx(tx, signDigestBytes(signingHash(tx), this.keyBytes));
  }
}

/** A signed transaction's hash: keccak256 of its bytes. */
function hashOf(raw: string): string {
  return `0x${keccak256(Buffer.from(raw.slice(2), 'hex')).toString('hex')}`;
}
