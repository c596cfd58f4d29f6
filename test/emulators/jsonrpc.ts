/**
 * Generic JSON-RPC 2.0 emulator (POST /) for the error cases a real node will not produce on
 * demand: reordered batches, one error object for a whole batch, rate-limit codes, odd results.
 * For real chain behaviour use test/helpers/anvil.ts.
 */
import { Emulator, type ReceivedRequest, type Reply } from './core.js';

export type RpcAnswer = { result: unknown } | { error: { code: number; message: string; data?: unknown } };
export type RpcHandler = (params: unknown[]) => RpcAnswer;

export class JsonRpcEmulator extends Emulator {
  chainId = 8453;
  blockNumber = 0x1234;
  /** Answer batches in reverse order (ids still match). */
  reverseBatch = false;
  /** Answer every batch with this single error object instead of an array. */
  batchError: { code: number; message: string } | null = null;
  /** Every call received, batch members included. */
  calls: { method: string; params: unknown[] }[] = [];
  private readonly handlers = new Map<string, RpcHandler>();

  setResult(method: string, result: unknown): this {
    return this.setHandler(method, () => ({ result }));
  }

  setError(method: string, code: number, message: string, data?: unknown): this {
    return this.setHandler(method, () => ({ error: { code, message, ...(data === undefined ? {} : { data }) } }));
  }

  setHandler(method: string, fn: RpcHandler): this {
    this.handlers.set(method, fn);
    return this;
  }

  private answer(call: unknown): Record<string, unknown> {
    const c = (typeof call === 'object' && call !== null ? call : {}) as {
      id?: unknown;
      method?: unknown;
      params?: unknown;
    };
    const id = c.id ?? null;
    if (typeof c.method !== 'string')
      return { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'invalid request' } };
    const params = Array.isArray(c.params) ? c.params : [];
    this.calls.push({ method: c.method, params });
    const builtin: Record<string, RpcHandler> = {
      eth_chainId: () => ({ result: `0x${this.chainId.toString(16)}` }),
      eth_blockNumber: () => ({ result: `0x${this.blockNumber.toString(16)}` }),
    };
    const fn = this.handlers.get(c.method) ?? builtin[c.method];
    if (!fn)
      return {
        jsonrpc: '2.0',
        id,
        error: { code: -32601, message: `the method ${c.method} does not exist/is not available` },
      };
    return { jsonrpc: '2.0', id, ...fn(params) };
  }

  private handleBody(req: ReceivedRequest): Reply {
    let body: unknown;
    try {
      body = JSON.parse(req.body);
    } catch {
      return { body: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } } };
    }
    if (!Array.isArray(body)) return { body: this.answer(body) };
    if (this.batchError) return { body: { jsonrpc: '2.0', id: null, error: this.batchError } };
    if (body.length === 0)
      return { body: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'empty batch' } } };
    const out = body.map((c) => this.answer(c));
    return { body: this.reverseBatch ? out.reverse() : out };
  }

  constructor() {
    super();
    this.route('POST', /.*/, (req) => this.handleBody(req)); // any path: RPC URLs often carry a key in it
  }
}

export async function startJsonRpc(): Promise<JsonRpcEmulator> {
  return new JsonRpcEmulator().listen();
}
