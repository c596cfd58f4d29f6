/**
 * The USDC contract over the operator's JSON-RPC (X402_RPC_URL), through the service's one JSON-RPC
 * client (net/rpc.ts, over the operator dispatcher's keep-alive pool):
 * the payer's balance, whether an authorization nonce is already spent, which transaction spent
 * it, and what local settlement needs to send a transaction (gas estimate, fees, nonce, broadcast,
 * receipt). ethers is used for ABI encoding and signing only: its provider cost several ms of
 * CPU per call on the main thread, which every request waiting behind a settlement paid for.
 */
import { Interface } from 'ethers';
import { rpcBatch, rpcCall, type RpcReply } from '../../net/rpc.js';

export const USDC_ABI = new Interface([
  'function balanceOf(address account) view returns (uint256)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)',
]);

const SELECTOR = {
  balanceOf: USDC_ABI.getFunction('balanceOf')!.selector,
  authorizationState: USDC_ABI.getFunction('authorizationState')!.selector,
  transferWithAuthorization: USDC_ABI.getFunction('transferWithAuthorization')!.selector,
};

const UINT256_LIMIT = 1n << 256n;

/** One ABI word from 0x-hex of at most 32 bytes (an address, a bytes32), left-padded. */
export function hexWord(hex: string): string {
  if (!/^0x[0-9a-fA-F]{1,64}$/.test(hex)) throw new TypeError(`not an ABI word: ${hex}`);
  return hex.slice(2).toLowerCase().padStart(64, '0');
}

/** One ABI word from an unsigned integer (bigint, number or decimal string). */
export function uintWord(v: bigint | number | string): string {
  const n = BigInt(v);
  if (n < 0n || n >= UINT256_LIMIT) throw new RangeError(`not a uint256: ${String(v)}`);
  return n.toString(16).padStart(64, '0');
}

/**
 * Calldata for the three USDC functions the paid path calls, encoded by hand: every argument is a
 * static 32-byte word, and ethers' generic encoder cost about 0.4 ms per call on the request path.
 * test/billing/x402/lean.test.ts checks these against ethers' Interface.
 */
export const calldata = {
  balanceOf: (account: string): string => SELECTOR.balanceOf + hexWord(account),
  authorizationState: (authorizer: string, nonce: string): string =>
    SELECTOR.authorizationState + hexWord(authorizer) + hexWord(nonce),
  transferWithAuthorization: (
    a: { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string },
    v: number,
    r: string,
    sv: string,
  ): string =>
    SELECTOR.transferWithAuthorization +
    hexWord(a.from) +
    hexWord(a.to) +
    uintWord(a.value) +
    uintWord(a.validAfter) +
    uintWord(a.validBefore) +
    hexWord(a.nonce) +
    uintWord(v) +
    hexWord(r) +
    hexWord(sv),
};

/** A single static return word: the uint256 (or bool) a view function answered. */
function returnWord(out: unknown, fn: string): bigint {
  if (typeof out !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(out))
    throw new Error(`eth_call ${fn}: the node answered ${JSON.stringify(out)}, not one ABI word`);
  return BigInt(out);
}

/** How far back to look for the transaction that used an authorization: about 5 hours on Base. */
const LOG_LOOKBACK_BLOCKS = 9000;

export interface PayerState {
  balance: bigint;
  nonceUsed: boolean;
}

export interface Receipt {
  /** 1 success, 0 reverted. */
  status: number;
  blockNumber: number;
}

export interface FeeData {
  /** EIP-1559 fees, or a legacy gas price on a chain without a base fee. */
  maxFeePerGas: bigint | null;
  maxPriorityFeePerGas: bigint | null;
  gasPrice: bigint | null;
}

const hexQuantity = (v: unknown, what: string): bigint => {
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]+$/.test(v))
    throw new Error(`${what}: the node answered ${JSON.stringify(v)}, not a hex quantity`);
  return BigInt(v);
};

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** When the node names no priority fee (eth_maxPriorityFeePerGas unsupported): 1 gwei, as ethers assumes. */
const FALLBACK_PRIORITY_FEE = 1_000_000_000n;

/** Receipts asked for in one JSON-RPC batch at most (nodes and providers cap a batch's size). */
const RECEIPT_BATCH = 100;

interface ReceiptWaiter {
  end: number;
  resolve(receipt: Receipt | null): void;
  reject(err: Error): void;
}

/** A receipt from eth_getTransactionReceipt's result: null while the transaction is not mined. */
function receiptOf(r: unknown): Receipt | null {
  if (r === null) return null;
  if (!isObject(r)) throw new Error(`eth_getTransactionReceipt: the node answered ${JSON.stringify(r)}`);
  return {
    status: Number(hexQuantity(r.status, 'receipt status')),
    blockNumber: Number(hexQuantity(r.blockNumber, 'receipt block')),
  };
}

/** A reply's result, or the node's JSON-RPC error thrown. */
function resultOf(method: string, reply: RpcReply): unknown {
  if (reply.error) throw new Error(`${method}: JSON-RPC error ${reply.error.code}: ${reply.error.message}`);
  return reply.result;
}

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** What `f` returns, or what it throws as an Error. */
function catching<T>(f: () => T): T | Error {
  try {
    return f();
  } catch (err) {
    return asError(err);
  }
}

export class UsdcChain {
  /** `pollingMs` paces the wait for a receipt: Base makes a block every 2 s. */
  constructor(
    readonly url: string,
    readonly asset: string,
    readonly pollingMs = 1000,
    readonly timeoutMs = 5000,
  ) {}

  static connect(url: string, asset: string, opts: { timeoutMs?: number; pollingMs?: number } = {}): UsdcChain {
    return new UsdcChain(url, asset, opts.pollingMs ?? 1000, opts.timeoutMs ?? 5000);
  }

  /** The call's `result`; throws on a failure of the node or a JSON-RPC error. */
  private async call(method: string, params: unknown[]): Promise<unknown> {
    const r = await rpcCall(this.url, method, params, { safe: false, timeoutMs: this.timeoutMs, source: 'x402_rpc' });
    if (!r.ok) throw new Error(`${method}: ${r.message}`);
    return resultOf(method, r.data);
  }

  private async read(fn: string, data: string): Promise<bigint> {
    return returnWord(await this.call('eth_call', [{ to: this.asset, data }, 'latest']), fn);
  }

  /**
   * Balance and nonce state in one round trip (a JSON-RPC batch); a node that refuses batches
   * gets two parallel single calls (net/rpc.ts remembers it).
   */
  async payerState(from: string, nonce: string): Promise<PayerState> {
    const calls = [
      { fn: 'balanceOf', data: calldata.balanceOf(from) },
      { fn: 'authorizationState', data: calldata.authorizationState(from, nonce) },
    ];
    const r = await rpcBatch(
      this.url,
      calls.map((c) => ({ method: 'eth_call', params: [{ to: this.asset, data: c.data }, 'latest'] })),
      { safe: false, timeoutMs: this.timeoutMs, source: 'x402_rpc' },
    );
    if (!r.ok) throw new Error(`eth_call: ${r.message}`);
    const words = r.data.map((reply, i) => returnWord(resultOf('eth_call', reply), calls[i].fn));
    return { balance: words[0], nonceUsed: words[1] !== 0n };
  }

  async authorizationUsed(from: string, nonce: string): Promise<boolean> {
    return (await this.read('authorizationState', calldata.authorizationState(from, nonce))) !== 0n;
  }

  async receipt(txHash: string): Promise<Receipt | null> {
    return receiptOf(await this.call('eth_getTransactionReceipt', [txHash]));
  }

  /** Whether the node holds the transaction and it is not mined yet (in its pool, waiting for a block). */
  async pending(txHash: string): Promise<boolean> {
    const tx = await this.call('eth_getTransactionByHash', [txHash]);
    return isObject(tx) && (tx.blockNumber === null || tx.blockNumber === undefined);
  }

  /** Transactions whose receipts are awaited, each with its waiters; polled together. */
  private readonly awaited = new Map<string, ReceiptWaiter[]>();
  private receiptTimer: NodeJS.Timeout | null = null;

  /**
   * Polls for the receipt until `timeoutMs`; null when none came. Every transaction awaited on this
   * chain is asked for in one batch per poll (RECEIPT_BATCH receipts a request), where each used
   * to poll on its own: at 50 settlements a second and a block every 2 s, a hundred or more
   * requests a second to the node become one. The first transaction awaited while no poll is due is
   * asked for at once; the rest join the next poll, at most `pollingMs` later.
   */
  waitForReceipt(txHash: string, timeoutMs: number): Promise<Receipt | null> {
    return new Promise((resolve, reject) => {
      const waiter = { end: Date.now() + timeoutMs, resolve, reject };
      const waiters = this.awaited.get(txHash);
      if (waiters === undefined) this.awaited.set(txHash, [waiter]);
      else waiters.push(waiter);
      this.receiptTimer ??= setTimeout(() => void this.pollReceipts(), 0);
    });
  }

  private async pollReceipts(): Promise<void> {
    const hashes = [...this.awaited.keys()];
    const batches: string[][] = [];
    for (let i = 0; i < hashes.length; i += RECEIPT_BATCH) batches.push(hashes.slice(i, i + RECEIPT_BATCH));
    await Promise.all(batches.map((batch) => this.pollBatch(batch)));
    this.receiptTimer = this.awaited.size > 0 ? setTimeout(() => void this.pollReceipts(), this.pollingMs) : null;
  }

  /** One batch of receipts: each found, failed or timed out settles its waiters; the rest wait on. */
  private async pollBatch(hashes: string[]): Promise<void> {
    const settle = (hash: string, outcome: { receipt: Receipt | null } | { error: Error }) => {
      const now = Date.now();
      const waiters = this.awaited.get(hash) ?? [];
      const left = waiters.filter((w) => {
        if ('error' in outcome) w.reject(outcome.error);
        else if (outcome.receipt !== null || now >= w.end) w.resolve(outcome.receipt);
        else return true;
        return false;
      });
      if (left.length === 0) this.awaited.delete(hash);
      else this.awaited.set(hash, left);
    };
    let replies: RpcReply[];
    try {
      const r = await rpcBatch(
        this.url,
        hashes.map((h) => ({ method: 'eth_getTransactionReceipt', params: [h] })),
        { safe: false, timeoutMs: this.timeoutMs, source: 'x402_rpc' },
      );
      if (!r.ok) throw new Error(`eth_getTransactionReceipt: ${r.message}`);
      replies = r.data;
    } catch (err) {
      for (const hash of hashes) settle(hash, { error: asError(err) });
      return;
    }
    hashes.forEach((hash, i) => {
      let receipt: Receipt | null;
      try {
        receipt = receiptOf(resultOf('eth_getTransactionReceipt', replies[i]));
      } catch (err) {
        settle(hash, { error: asError(err) });
        return;
      }
      settle(hash, { receipt });
    });
  }

  /** The transaction whose AuthorizationUsed event spent (from, nonce), if it is recent enough. */
  async findSpendingTx(from: string, nonce: string): Promise<string | null> {
    const event = USDC_ABI.getEvent('AuthorizationUsed');
    if (event === null) throw new Error('AuthorizationUsed missing from the USDC ABI');
    const latest = hexQuantity(await this.call('eth_blockNumber', []), 'eth_blockNumber');
    const from0 = latest > BigInt(LOG_LOOKBACK_BLOCKS) ? latest - BigInt(LOG_LOOKBACK_BLOCKS) : 0n;
    const logs = await this.call('eth_getLogs', [
      {
        address: this.asset,
        topics: USDC_ABI.encodeFilterTopics(event, [from, nonce]),
        fromBlock: `0x${from0.toString(16)}`,
        toBlock: `0x${latest.toString(16)}`,
      },
    ]);
    if (!Array.isArray(logs)) throw new Error('eth_getLogs: the node answered no list');
    const last = logs[logs.length - 1] as unknown;
    return isObject(last) && typeof last.transactionHash === 'string' ? last.transactionHash : null;
  }

  /**
   * Several estimates in one request (a JSON-RPC batch), each answered in its place: the gas, or
   * the node's reason the call would revert. Each simulates on the latest block, named because
   * nodes differ when it is not: geth and op-geth take the latest block, anvil its pending block,
   * which replays every transaction waiting in its pool for each estimate (24 ms of the node's CPU
   * with 300 waiting, against 1.4 ms on the latest block). A failure of the request itself throws.
   */
  async estimateGasMany(
    txs: ReadonlyArray<{ from: string; to: string; data: string }>,
  ): Promise<Array<bigint | Error>> {
    const replies = await this.many(
      'eth_estimateGas',
      txs.map((tx) => [tx, 'latest']),
    );
    return replies.map((r) => (r instanceof Error ? r : catching(() => hexQuantity(r, 'eth_estimateGas'))));
  }

  /** Broadcasts several signed transactions in one request; each its hash, or the node's error for it. */
  async sendRawMany(signed: readonly string[]): Promise<Array<string | Error>> {
    const replies = await this.many(
      'eth_sendRawTransaction',
      signed.map((raw) => [raw]),
    );
    return replies.map((r) =>
      r instanceof Error || typeof r === 'string'
        ? r
        : new Error(`eth_sendRawTransaction: the node answered ${JSON.stringify(r)}`),
    );
  }

  /**
   * One method over several parameter lists, a JSON-RPC batch (a single call for one): each
   * result, or the node's error for it. A failure of the request itself throws: the node may or
   * may not have acted on it.
   */
  private async many(method: string, params: unknown[][]): Promise<unknown[]> {
    const opts = { safe: false, timeoutMs: this.timeoutMs, source: 'x402_rpc' };
    let replies: RpcReply[];
    if (params.length === 1) {
      const r = await rpcCall(this.url, method, params[0], opts);
      if (!r.ok) throw new Error(`${method}: ${r.message}`);
      replies = [r.data];
    } else {
      const r = await rpcBatch(
        this.url,
        params.map((p) => ({ method, params: p })),
        opts,
      );
      if (!r.ok) throw new Error(`${method}: ${r.message}`);
      replies = r.data;
    }
    return replies.map((reply) => catching(() => resultOf(method, reply)));
  }

  async pendingNonce(address: string): Promise<number> {
    return Number(
      hexQuantity(await this.call('eth_getTransactionCount', [address, 'pending']), 'eth_getTransactionCount'),
    );
  }

  /** Fees for a transaction now: max fee twice the latest base fee plus the tip, as ethers computes it. */
  async feeData(): Promise<FeeData> {
    const [block, tip] = await Promise.all([
      this.call('eth_getBlockByNumber', ['latest', false]),
      this.call('eth_maxPriorityFeePerGas', []).then(
        (v) => hexQuantity(v, 'eth_maxPriorityFeePerGas'),
        () => FALLBACK_PRIORITY_FEE,
      ),
    ]);
    if (isObject(block) && block.baseFeePerGas !== undefined && block.baseFeePerGas !== null) {
      const base = hexQuantity(block.baseFeePerGas, 'baseFeePerGas');
      return { maxFeePerGas: base * 2n + tip, maxPriorityFeePerGas: tip, gasPrice: null };
    }
    return {
      maxFeePerGas: null,
      maxPriorityFeePerGas: null,
      gasPrice: hexQuantity(await this.call('eth_gasPrice', []), 'eth_gasPrice'),
    };
  }
}
