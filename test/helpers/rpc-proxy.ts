/**
 * A loopback JSON-RPC proxy in front of a real node that refuses some methods the way geth does
 * for a method it lacks (-32601), in single calls and in batches, and forwards everything else.
 * For a node without eth_simulateV1 (or without debug_traceCall) in front of anvil.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RpcProxy {
  url: string;
  /** Methods seen, in order (batch members included). */
  seen: string[];
  close(): Promise<void>;
}

interface Call {
  id?: unknown;
  method?: unknown;
}

export async function startRpcProxy(target: string, refuse: readonly string[]): Promise<RpcProxy> {
  const seen: string[] = [];
  const refusal = (c: Call) => ({
    jsonrpc: '2.0',
    id: c.id ?? null,
    error: { code: -32601, message: `the method ${String(c.method)} does not exist/is not available` },
  });
  const forward = async (calls: Call[]): Promise<unknown[]> => {
    if (calls.length === 0) return [];
    const res = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(calls),
    });
    return (await res.json()) as unknown[];
  };
  const server = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[];
      const calls = Array.isArray(body) ? body : [body];
      for (const c of calls) seen.push(String(c.method));
      const passed = calls.filter((c) => !refuse.includes(String(c.method)));
      const answers = new Map<unknown, unknown>();
      for (const a of await forward(passed)) answers.set((a as Call).id, a);
      const out = calls.map((c) => (refuse.includes(String(c.method)) ? refusal(c) : answers.get(c.id)));
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(Array.isArray(body) ? out : out[0]));
    } catch {
      res.statusCode = 500;
      res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"proxy error"}}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
