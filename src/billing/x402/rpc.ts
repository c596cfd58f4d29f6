/**
 * A lean JSON-RPC client for the reads on the paid path (the payer's balance and nonce state).
 * Keep-alive connections from an undici pool, one call per HTTP request, a hard timeout. The
 * ethers provider stays for sending and receipts; on the request path it cost about 3 ms per call
 * (a fresh connection and its own request pipeline) where this costs well under one.
 */
import { Pool } from 'undici';

interface Reply {
  result?: unknown;
  error?: { code?: unknown; message?: unknown } | null;
}

/** A JSON-RPC error object; anything else under `error` (a proxy's own error string) is not one. */
function isRpcError(e: unknown): e is { code?: unknown; message?: unknown } {
  return e !== null && typeof e === 'object' && ('code' in e || 'message' in e);
}

function parseReply(text: string): Reply | null {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Reply) : null;
  } catch {
    return null;
  }
}

export class JsonRpcClient {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly headers: Record<string, string>;
  private nextId = 0;

  constructor(url: string, private readonly timeoutMs = 5000) {
    const u = new URL(url);
    this.pool = new Pool(u.origin, { connections: 8, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    this.path = (u.pathname || '/') + u.search;
    this.headers = { 'content-type': 'application/json', accept: 'application/json' };
    // Credentials in the URL (https://user:pass@node/...) go as Basic auth, as fetch would send them.
    if (u.username !== '' || u.password !== '') {
      const user = decodeURIComponent(u.username);
      const pass = decodeURIComponent(u.password);
      this.headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    }
  }

  /** The call's `result`; throws on a transport failure, a non-JSON body or a JSON-RPC error. */
  async call(method: string, params: unknown[]): Promise<unknown> {
    const id = ++this.nextId;
    const res = await this.pool.request({
      path: this.path,
      method: 'POST',
      headers: this.headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await res.body.text();
    const reply = parseReply(text);
    if (isRpcError(reply?.error)) {
      throw new Error(`${method}: JSON-RPC error ${String(reply.error.code)}: ${String(reply.error.message)}`);
    }
    if (res.statusCode !== 200 || reply === null || !('result' in reply)) {
      throw new Error(`${method}: HTTP ${res.statusCode} without a JSON-RPC result`);
    }
    return reply.result;
  }

  /**
   * Several calls in one JSON-RPC batch (one HTTP request, one round trip), results in call order.
   * Throws when the node answers anything but a batch with every id, or any call failed; callers
   * that must work with nodes refusing batches fall back to single calls.
   */
  async batch(calls: ReadonlyArray<{ method: string; params: unknown[] }>): Promise<unknown[]> {
    const first = this.nextId + 1;
    this.nextId += calls.length;
    const res = await this.pool.request({
      path: this.path,
      method: 'POST',
      headers: this.headers,
      body: JSON.stringify(calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, method: c.method, params: c.params }))),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await res.body.text();
    let replies: unknown;
    try {
      replies = JSON.parse(text);
    } catch {
      replies = null;
    }
    if (res.statusCode !== 200 || !Array.isArray(replies)) throw new Error(`batch: HTTP ${res.statusCode} without a JSON-RPC batch answer`);
    const byId = new Map<unknown, Reply>();
    for (const r of replies as unknown[]) if (r !== null && typeof r === 'object') byId.set((r as { id?: unknown }).id, r as Reply);
    return calls.map((c, i) => {
      const reply = byId.get(first + i);
      if (reply === undefined) throw new Error(`${c.method}: missing from the batch answer`);
      if (isRpcError(reply.error)) throw new Error(`${c.method}: JSON-RPC error ${String(reply.error.code)}: ${String(reply.error.message)}`);
      if (!('result' in reply)) throw new Error(`${c.method}: no result in the batch answer`);
      return reply.result;
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
