import t from 'tap';
import { rpc } from '../../src/checks/rpc.js';
import { tx } from '../../src/checks/tx.js';
import { contractVerified } from '../../src/checks/contract_verified.js';
import type { RpcCheck, TxCheck } from '../../src/generated/types.js';
import { startAnvil, deployReverter, revertedTxHash, successfulTxHash } from '../helpers/anvil.js';
import { startJsonRpc } from '../emulators/jsonrpc.js';
import { startSourcify } from '../emulators/sourcify.js';
import { closePools, ctx, testConfig } from './helpers.js';

t.teardown(closePools);

const rpcCheck = (rpc_url: string, extra: Partial<RpcCheck> = {}): RpcCheck => ({
  type: 'rpc',
  rpc_url,
  method_name: 'eth_blockNumber',
  expect_hex_result: true,
  ...extra,
});
const txCheck = (rpc_url: string, tx_hash: string, require_success = true): TxCheck => ({
  type: 'tx',
  rpc_url,
  tx_hash,
  require_success,
});

t.test('rpc, tx and contract_verified against a real chain (anvil)', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.close());
  const config = testConfig();
  // ethers reuses an identical eth_getTransactionCount answer for 250 ms, so back-to-back sends
  // from one wallet would reuse a nonce; space them out.
  const settle = () => new Promise((r) => setTimeout(r, 300));
  const ok = await successfulTxHash(anvil);
  await settle();
  const reverter = await deployReverter(anvil);
  await settle();
  const bad = await revertedTxHash(anvil, reverter);
  const head = await anvil.provider.getBlockNumber();

  t.test('rpc', async (t) => {
    const a = await rpc.run(rpcCheck(anvil.url), ctx(config));
    t.equal(a.status, 'pass', a.message);
    t.equal(a.source, '127.0.0.1');
    t.same(a.observed, { result: `0x${head.toString(16)}` });
    const b = await rpc.run(rpcCheck(anvil.url, { method_name: 'eth_chainId' }), ctx(config));
    t.match(b.observed, { result: '0x2105' });
    const c = await rpc.run(rpcCheck(anvil.url, { min_block_number: head + 10 }), ctx(config));
    t.equal(c.reason, 'block_behind');
    t.match(c.observed, { head_block: head });
    const d = await rpc.run(
      rpcCheck(anvil.url, {
        method_name: 'eth_getBalance',
        params: [anvil.accounts[0], 'latest'],
        min_block_number: head,
      }),
      ctx(config),
    );
    t.equal(d.status, 'pass', 'head fetched in the same batch');
    t.match(d.observed, { head_block: head });
    const e = await rpc.run(
      rpcCheck(anvil.url, {
        method_name: 'eth_getBalance',
        params: [anvil.accounts[0], 'latest'],
        min_block_number: head + 1,
      }),
      ctx(config),
    );
    t.equal(e.reason, 'block_behind');
    const f = await rpc.run(
      rpcCheck(anvil.url, {
        method_name: 'eth_getTransactionReceipt',
        params: [`0x${'ab'.repeat(32)}`],
        expect_hex_result: false,
      }),
      ctx(config),
    );
    t.equal(f.reason, 'empty_result');
    const g = await rpc.run(rpcCheck(anvil.url, { method_name: 'no_such_method' }), ctx(config));
    t.equal(g.status, 'fail');
    t.equal(g.reason, 'rpc_error');
    t.match(g.observed, { rpc_error: { code: Number } });
    const h = await rpc.run(
      rpcCheck(anvil.url, { method_name: 'eth_getBlockByNumber', params: ['latest', false] }),
      ctx(config),
    );
    t.equal(h.reason, 'not_hex');
  });

  t.test('tx', async (t) => {
    const a = await tx.run(txCheck(anvil.url, ok), ctx(config));
    t.equal(a.status, 'pass', a.message);
    t.equal(a.ttl_s, 300);
    t.match(a.observed, { mined: true, status: 'success', confirmations: Number });
    t.ok((a.observed as { confirmations: number }).confirmations >= 3, 'two later blocks count as confirmations');
    const b = await tx.run(txCheck(anvil.url, bad), ctx(config));
    t.equal(b.status, 'fail');
    t.equal(b.reason, 'tx_reverted');
    t.match(b.observed, { status: 'reverted', confirmations: 1 });
    const c = await tx.run(txCheck(anvil.url, bad, false), ctx(config));
    t.equal(c.status, 'pass');
    const d = await tx.run(txCheck(anvil.url, `0x${'12'.repeat(32)}`), ctx(config));
    t.equal(d.status, 'warn');
    t.equal(d.reason, 'tx_pending');
    t.equal(d.ttl_s, 5);
  });

  t.test('contract_verified: the operator RPC tells contracts from empty addresses', async (t) => {
    const sourcify = await startSourcify();
    t.teardown(() => sourcify.close());
    sourcify.setVerified(8453, reverter);
    const cfg = testConfig({ SOURCIFY_URL: sourcify.url, RPC_URLS: `base=${anvil.url}` });
    const a = await contractVerified.run(
      { type: 'contract_verified', chain: 'base', contract_address: reverter },
      ctx(cfg),
    );
    t.equal(a.status, 'pass');
    t.match(a.observed, { has_code: true });
    const b = await contractVerified.run(
      { type: 'contract_verified', chain: 'base', contract_address: anvil.accounts[2] },
      ctx(cfg),
    );
    t.equal(b.reason, 'not_a_contract');
  });
});

t.test('rpc and tx node failures (JSON-RPC emulator)', async (t) => {
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  const config = testConfig();
  const hash = `0x${'cd'.repeat(32)}`;

  node.blockNumber = 500;
  node.setResult('eth_getTransactionReceipt', { blockNumber: '0x1f4', status: '0x1', gasUsed: '0x5208' });
  node.reverseBatch = true;
  const a = await tx.run(txCheck(node.url, hash), ctx(config));
  t.equal(a.status, 'pass', 'a reordered batch is matched by id');
  t.match(a.observed, { block_number: 500, head_block: 500, confirmations: 1 });
  node.reverseBatch = false;

  node.setError('eth_getTransactionReceipt', -32016, 'over rate limit');
  const b = await tx.run(txCheck(node.url, hash), ctx(config));
  t.equal(b.status, 'error');
  t.equal(b.reason, 'upstream_rate_limited');
  t.ok((b.retry_after_s ?? 0) > 0);

  node.batchError = { code: -32600, message: 'batch requests are not supported' };
  node.resetStats();
  const c = await rpc.run(rpcCheck(node.url, { method_name: 'eth_chainId', min_block_number: 1 }), ctx(config));
  t.equal(c.status, 'pass', 'a node refusing batches is asked again with single calls');
  t.equal(node.stats.requests, 3, 'the refused batch, then one request per call');
  const single = await rpc.run(rpcCheck(node.url, { method_name: 'eth_chainId' }), ctx(config));
  t.equal(single.status, 'pass', 'a lone call is not batched');
  node.batchError = null;

  for (const [name, fault, reason] of [
    ['HTTP 503', { status: 503, body: 'Service Unavailable', times: 1 }, 'upstream_http_error'],
    ['HTTP 429', { status: 429, retryAfter: 9, times: 1 }, 'upstream_rate_limited'],
    ['not JSON', { garbage: true, times: 1 }, 'upstream_bad_response'],
    ['connection reset', { reset: true, times: 2 }, 'upstream_unreachable'],
  ] as const) {
    for (const run of [
      () => tx.run(txCheck(node.url, hash), ctx(config)),
      () => rpc.run(rpcCheck(node.url), ctx(config)),
    ]) {
      node.fault = { ...fault };
      const out = await run();
      t.equal(out.status, 'error', name);
      t.equal(out.reason, reason, name);
    }
  }
  node.fault = { hang: true, times: 1 };
  const started = Date.now();
  const d = await rpc.run(rpcCheck(node.url), ctx(config, 150));
  t.equal(d.reason, 'upstream_timeout');
  t.ok(Date.now() - started < 1000);

  node.resetStats();
  const e = await rpc.run(rpcCheck(node.url), ctx(testConfig({ ALLOW_PRIVATE_TARGETS: 'false' })));
  t.equal(e.status, 'fail', 'a request-supplied RPC URL on loopback is refused');
  t.equal(e.reason, 'target_forbidden');
  t.equal(node.stats.requests, 0, 'no packet reached the node');
});
