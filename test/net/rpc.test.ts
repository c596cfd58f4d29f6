import t from 'tap';
import { rpcBatch, rpcSource } from '../../src/net/rpc.js';
import { startJsonRpc, type JsonRpcEmulator } from '../emulators/jsonrpc.js';

let rpc: JsonRpcEmulator;
t.before(async () => {
  rpc = await startJsonRpc();
});
t.teardown(() => rpc.close());
t.beforeEach(() => {
  rpc.fault = null;
  rpc.batchError = null;
  rpc.reverseBatch = false;
  rpc.calls = [];
  rpc.resetStats();
});
// The operator's RPC (RPC_URLS): trusted, loopback is fine.
const trusted = { safe: false };

t.test('a batch is one request; answers are matched by id even when reordered', async (t) => {
  rpc.reverseBatch = true;
  rpc.setResult('eth_getCode', '0x6080');
  const r = await rpcBatch(
    rpc.url,
    [
      { method: 'eth_chainId', params: [] },
      { method: 'eth_blockNumber', params: [] },
      { method: 'eth_getCode', params: ['0xabc', 'latest'] },
    ],
    trusted,
  );
  t.same(r.ok && r.data, [{ result: '0x2105' }, { result: '0x1234' }, { result: '0x6080' }]);
  t.equal(rpc.stats.requests, 1);
  const sent = JSON.parse(rpc.received[0].body);
  t.ok(Array.isArray(sent));
  t.same(sent[2], { jsonrpc: '2.0', id: 3, method: 'eth_getCode', params: ['0xabc', 'latest'] });
});

t.test('a single call goes unbatched', async (t) => {
  const r = await rpcBatch(rpc.url, [{ method: 'eth_blockNumber', params: [] }], trusted);
  t.same(r.ok && r.data, [{ result: '0x1234' }]);
  t.same(JSON.parse(rpc.received[0].body), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] });
});

t.test('JSON-RPC errors per call are data; null results stay null', async (t) => {
  rpc.setError('debug_getRawBlock', -32602, 'invalid argument 0: hex string without 0x prefix', { arg: 0 });
  rpc.setResult('eth_getTransactionReceipt', null);
  const r = await rpcBatch(
    rpc.url,
    [
      { method: 'debug_getRawBlock', params: ['2'] },
      { method: 'eth_getTransactionReceipt', params: ['0xdeadbeef'] },
      { method: 'no_such_method', params: [] },
    ],
    trusted,
  );
  t.same(r.ok && r.data, [
    { error: { code: -32602, message: 'invalid argument 0: hex string without 0x prefix', data: { arg: 0 } } },
    { result: null },
    { error: { code: -32601, message: 'the method no_such_method does not exist/is not available' } },
  ]);
});

t.test('rate limits: HTTP 429, -32005 and -32016, per call or for the whole batch', async (t) => {
  rpc.fault = { status: 429, retryAfter: 2 };
  const http429 = await rpcBatch(rpc.url, [{ method: 'eth_blockNumber', params: [] }], trusted);
  t.equal(!http429.ok && http429.reason, 'upstream_rate_limited');
  t.equal(!http429.ok && http429.retryAfterS, 2);

  rpc.fault = null;
  rpc.setError('eth_getBalance', -32016, 'over rate limit');
  const inBatch = await rpcBatch(
    rpc.url,
    [
      { method: 'eth_blockNumber', params: [] },
      { method: 'eth_getBalance', params: ['0x1', 'latest'] },
    ],
    trusted,
  );
  t.equal(!inBatch.ok && inBatch.reason, 'upstream_rate_limited');
  t.match(!inBatch.ok && inBatch.message, /-32016/);

  rpc.batchError = { code: -32005, message: 'rate limit exceeded' };
  const whole = await rpcBatch(
    rpc.url,
    [
      { method: 'eth_chainId', params: [] },
      { method: 'eth_blockNumber', params: [] },
    ],
    trusted,
  );
  t.equal(!whole.ok && whole.reason, 'upstream_rate_limited');

  // The Tenderly body, as a reply to a single call (string id).
  rpc.fault = {
    status: 200,
    body: '{"id":"1709215671619515648","jsonrpc":"2.0","error":{"code":-32005,"message":"rate limit exceeded"}}',
  };
  const single = await rpcBatch(rpc.url, [{ method: 'eth_chainId', params: [] }], trusted);
  t.equal(!single.ok && single.reason, 'upstream_rate_limited');
});

t.test('a node refusing batches gets single calls, and is remembered', async (t) => {
  rpc.batchError = { code: -32600, message: 'batch requests are not supported' };
  const url = `${rpc.url}/refuses-batches`; // remembered per URL: other tests keep batching
  const calls = [
    { method: 'eth_chainId', params: [] },
    { method: 'eth_blockNumber', params: [] },
  ];
  const first = await rpcBatch(url, calls, trusted);
  t.same(first.ok && first.data, [{ result: '0x2105' }, { result: '0x1234' }], 'answers in call order');
  t.equal(rpc.stats.requests, 3, 'the refused batch, then one request per call');
  t.ok(
    rpc.received.slice(1).every((r) => !Array.isArray(JSON.parse(r.body))),
    'the retries are single calls',
  );
  rpc.resetStats();
  const again = await rpcBatch(url, calls, trusted);
  t.ok(again.ok);
  t.equal(rpc.stats.requests, 2, 'the next batch to that node goes straight to single calls');
  rpc.batchError = null;
});

t.test('broken answers', async (t) => {
  const cases: [Record<string, unknown>, string][] = [
    [{ status: 200, body: '[{"jsonrpc":"2.0","id":1,"result":"0x1"}]' }, 'upstream_bad_response'], // id 2 missing
    [{ status: 200, body: '{"hello":"world"}' }, 'upstream_bad_response'],
    [{ garbage: true }, 'upstream_bad_response'],
    [{ status: 500, body: '<html>Internal Server Error</html>' }, 'upstream_http_error'],
    [{ status: 503, body: '{"message":"maintenance"}' }, 'upstream_http_error'],
    [{ truncate: true }, 'upstream_bad_response'],
  ];
  for (const [fault, reason] of cases) {
    rpc.fault = fault;
    const r = await rpcBatch(
      rpc.url,
      [
        { method: 'eth_chainId', params: [] },
        { method: 'eth_blockNumber', params: [] },
      ],
      trusted,
    );
    t.equal(!r.ok && r.reason, reason, JSON.stringify(fault));
  }
  rpc.fault = { status: 500, body: '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}' };
  const jsonOn500 = await rpcBatch(rpc.url, [{ method: 'eth_getBlockByNumber', params: ['0x99999', false] }], trusted);
  t.same(
    jsonOn500.ok && jsonOn500.data,
    [{ error: { code: -32000, message: 'header not found' } }],
    'a JSON-RPC body wins over its HTTP status',
  );
});

t.test('timeouts and resets', async (t) => {
  rpc.fault = { hang: true };
  const hung = await rpcBatch(rpc.url, [{ method: 'eth_chainId', params: [] }], {
    safe: false,
    signal: AbortSignal.timeout(100),
  });
  t.equal(!hung.ok && hung.reason, 'upstream_timeout');
  rpc.fault = { reset: true, times: 1 };
  const retried = await rpcBatch(rpc.url, [{ method: 'eth_chainId', params: [] }], trusted);
  t.ok(retried.ok, 'one reset is retried');
});

t.test('the source is the host name alone: paths and queries carry keys', async (t) => {
  const url = `${rpc.url.replace('127.0.0.1', 'localhost')}/v2/SECRETKEY?apikey=ALSOSECRET`;
  t.equal(rpcSource(url), 'localhost');
  rpc.fault = { status: 502 };
  const r = await rpcBatch(url, [{ method: 'eth_chainId', params: [] }], trusted);
  t.equal(r.source, 'localhost');
  t.notMatch(!r.ok && r.message, /SECRET/);
  t.equal(rpc.received[0].path, '/v2/SECRETKEY', 'the path is still sent');
});

t.test('request-supplied RPC URLs follow the SSRF rules', async (t) => {
  const refused = await rpcBatch(rpc.url, [{ method: 'eth_chainId', params: [] }], { safe: true, allowPrivate: false });
  t.equal(!refused.ok && refused.reason, 'target_forbidden');
  t.equal(rpc.stats.requests, 0, 'the loopback node saw nothing');
  const allowed = await rpcBatch(
    rpc.url,
    [
      { method: 'eth_chainId', params: [] },
      { method: 'eth_blockNumber', params: [] },
    ],
    { safe: true, allowPrivate: true },
  );
  t.same(allowed.ok && allowed.data, [{ result: '0x2105' }, { result: '0x1234' }]);
  t.equal(allowed.source, '127.0.0.1');
});
