/**
 * Reads the USDC contract over the operator's JSON-RPC (X402_RPC_URL): the payer's balance, whether
 * an authorization nonce is already spent, and which transaction spent it. One provider, no
 * request batching (batching adds a stall to every call) and a short timeout.
 */
import { FetchRequest, Interface, JsonRpcProvider, Network, type TransactionReceipt } from 'ethers';
import { CHAIN_ID } from './constants.js';

export const USDC_ABI = new Interface([
  'function balanceOf(address account) view returns (uint256)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)',
]);

/** How far back to look for the transaction that used an authorization: about 5 hours on Base. */
const LOG_LOOKBACK_BLOCKS = 9000;

/** `pollingMs` paces the wait for a receipt: Base makes a block every 2 s. */
export function createProvider(url: string, opts: { timeoutMs?: number; pollingMs?: number } = {}): JsonRpcProvider {
  const req = new FetchRequest(url);
  req.timeout = opts.timeoutMs ?? 5000;
  const network = Network.from(CHAIN_ID);
  // cacheTimeout -1: a nonce read again after a failed send must be fresh, not a cached answer.
  return new JsonRpcProvider(req, network, { staticNetwork: network, batchMaxCount: 1, cacheTimeout: -1, pollingInterval: opts.pollingMs ?? 1000 });
}

export interface PayerState {
  balance: bigint;
  nonceUsed: boolean;
}

export class UsdcChain {
  constructor(readonly provider: JsonRpcProvider, readonly asset: string) {}

  private async read(fn: string, args: unknown[]): Promise<unknown> {
    const data = USDC_ABI.encodeFunctionData(fn, args);
    const out = await this.provider.call({ to: this.asset, data });
    return USDC_ABI.decodeFunctionResult(fn, out)[0];
  }

  async payerState(from: string, nonce: string): Promise<PayerState> {
    const [balance, used] = await Promise.all([
      this.read('balanceOf', [from]),
      this.read('authorizationState', [from, nonce]),
    ]);
    return { balance: balance as bigint, nonceUsed: used as boolean };
  }

  async authorizationUsed(from: string, nonce: string): Promise<boolean> {
    return (await this.read('authorizationState', [from, nonce])) as boolean;
  }

  async receipt(txHash: string): Promise<TransactionReceipt | null> {
    return this.provider.getTransactionReceipt(txHash);
  }

  /**
   * Polls for the receipt until `timeoutMs`. (ethers' own wait only looks again when a newer
   * block arrives, which never happens on a chain that mines only when there are transactions.)
   */
  async waitForReceipt(txHash: string, timeoutMs: number): Promise<TransactionReceipt | null> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const receipt = await this.provider.getTransactionReceipt(txHash);
      if (receipt !== null || Date.now() >= end) return receipt;
      await new Promise((resolve) => setTimeout(resolve, this.provider.pollingInterval));
    }
  }

  /** The transaction whose AuthorizationUsed event spent (from, nonce), if it is recent enough. */
  async findSpendingTx(from: string, nonce: string): Promise<string | null> {
    const event = USDC_ABI.getEvent('AuthorizationUsed');
    if (event === null) throw new Error('AuthorizationUsed missing from the USDC ABI');
    const latest = await this.provider.getBlockNumber();
    const logs = await this.provider.getLogs({
      address: this.asset,
      topics: USDC_ABI.encodeFilterTopics(event, [from, nonce]),
      fromBlock: Math.max(0, latest - LOG_LOOKBACK_BLOCKS),
      toBlock: latest,
    });
    return logs.length > 0 ? logs[logs.length - 1].transactionHash : null;
  }
}
