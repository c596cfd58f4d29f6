import t from 'tap';
import { evaluateRpc } from '../../src/checks/rpc.js';
import { evaluateTx } from '../../src/checks/tx.js';
import type { RpcReply } from '../../src/net/rpc.js';
import type { RpcCheck, TxCheck } from '../../src/generated/types.js';
import { fixture } from './helpers.js';

const reply = (name: string): RpcReply => {
  const r = JSON.parse(fixture(name)).response;
  return 'error' in r ? { error: r.error } : { result: r.result };
};
const rpc = (extra: Partial<RpcCheck> = {}): RpcCheck => ({
  type: 'rpc',
  rpc_url: 'https://rpc.example/',
  method_name: 'eth_getCode',
  expect_hex_result: false,
  ...extra,
});
const head = (n: number): RpcReply => ({ result: `0x${n.toString(16)}` });

t.test('rpc table', async (t) => {
  const code = reply('eth_getCode_contract.execution-apis.json');
  const rows: Array<[string, Partial<RpcCheck>, RpcReply, RpcReply | undefined, string, string | null]> = [
    ['hex result', { expect_hex_result: true }, code, undefined, 'pass', null],
    [
      '"0x" is valid hex',
      { expect_hex_result: true },
      reply('eth_getCode_eoa_or_unknown_0x.execution-apis.json'),
      undefined,
      'pass',
      null,
    ],
    [
      'JSON-RPC error',
      { method_name: 'invalid_method' },
      reply('error_-32601_method_not_found.geth-testdata.json'),
      undefined,
      'fail',
      'rpc_error',
    ],
    [
      'null result',
      { method_name: 'eth_getTransactionReceipt' },
      reply('eth_getTransactionReceipt_notfound_null.execution-apis.json'),
      undefined,
      'fail',
      'empty_result',
    ],
    [
      'object is not hex',
      { method_name: 'eth_getTransactionReceipt', expect_hex_result: true },
      reply('eth_getTransactionReceipt_dynamic_fee_status1.execution-apis.json'),
      undefined,
      'fail',
      'not_hex',
    ],
    ['decimal string is not hex', { expect_hex_result: true }, { result: '1234' }, undefined, 'fail', 'not_hex'],
    [
      'object without hex expectation passes',
      { method_name: 'eth_getTransactionReceipt' },
      reply('eth_getTransactionReceipt_dynamic_fee_status1.execution-apis.json'),
      undefined,
      'pass',
      null,
    ],
    [
      'head from the result of eth_blockNumber',
      { method_name: 'eth_blockNumber', min_block_number: 100 },
      head(99),
      undefined,
      'fail',
      'block_behind',
    ],
    [
      'eth_blockNumber at the minimum',
      { method_name: 'eth_blockNumber', min_block_number: 100 },
      head(100),
      undefined,
      'pass',
      null,
    ],
    ['head from the batched eth_blockNumber', { min_block_number: 5000 }, code, head(4000), 'fail', 'block_behind'],
    ['batched head ahead', { min_block_number: 5000 }, code, head(6000), 'pass', null],
    [
      'batched head is a JSON-RPC error',
      { min_block_number: 5000 },
      code,
      { error: { code: -32000, message: 'header not found' } },
      'error',
      'upstream_error',
    ],
    [
      'batched head not a number',
      { min_block_number: 5000 },
      code,
      { result: 'latest' },
      'error',
      'upstream_bad_response',
    ],
    [
      "rate-limit code is not the method's answer",
      {},
      { error: { code: -32016, message: 'over rate limit' } },
      undefined,
      'error',
      'upstream_rate_limited',
    ],
  ];
  for (const [name, extra, r, h, status, reason] of rows) {
    const out = evaluateRpc(rpc(extra), r, h, 'rpc.example');
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    if (status !== 'error') t.equal(out.ttl_s, 10, name);
    t.equal(out.source, 'rpc.example', name);
  }
  const err = evaluateRpc(
    rpc({ method_name: 'invalid_method' }),
    reply('error_-32601_method_not_found.geth-testdata.json'),
    undefined,
    'rpc.example',
  );
  t.same(err.observed, {
    rpc_error: { code: -32601, message: 'the method invalid_method does not exist/is not available' },
  });
  const behind = evaluateRpc(rpc({ min_block_number: 5000 }), code, head(4000), 'rpc.example');
  t.match(behind.observed, { head_block: 4000 });
  t.equal(behind.message, "The node's head is block 4000, 1000 behind the required 5000.");
  const big = evaluateRpc(rpc(), { result: `0x${'ab'.repeat(5000)}` }, undefined, 'rpc.example');
  t.match(big.observed, { result_chars: 10004 });
});

t.test('tx table', async (t) => {
  const hash = '0x205405746564cbcf1dd53fb5ac92c7622d3792d82f03c59d9baddf2443d91864';
  const tx = (require_success = true): TxCheck => ({
    type: 'tx',
    rpc_url: 'https://rpc.example/',
    tx_hash: hash,
    require_success,
  });
  const ok = reply('eth_getTransactionReceipt_dynamic_fee_status1.execution-apis.json'); // block 0x1b
  const reverted: RpcReply = { result: { ...(ok.result as object), status: '0x0' } };
  const legacy = reply('eth_getTransactionReceipt_legacy_pre_byzantium_root.execution-apis.json'); // block 0x3, root
  const pending = reply('eth_getTransactionReceipt_notfound_null.execution-apis.json');
  const rows: Array<[string, boolean, RpcReply, RpcReply, string, string | null, number]> = [
    ['mined and succeeded', true, ok, head(0x1b + 11), 'pass', null, 300],
    ['reverted', true, reverted, head(0x1b), 'fail', 'tx_reverted', 300],
    ['reverted without require_success', false, reverted, head(0x1b), 'pass', null, 300],
    ['pending', true, pending, head(100), 'warn', 'tx_pending', 5],
    ['pre-Byzantium receipt without status', true, legacy, head(3), 'warn', 'status_unknown', 300],
    ['pre-Byzantium receipt, success not required', false, legacy, head(3), 'pass', null, 300],
  ];
  for (const [name, req, r, h, status, reason, ttl] of rows) {
    const out = evaluateTx(tx(req), r, h, 'rpc.example');
    t.equal(out.status, status, name);
    t.equal(out.reason, reason, name);
    t.equal(out.ttl_s, ttl, name);
  }
  const out = evaluateTx(tx(), ok, head(0x1b + 11), 'rpc.example');
  t.same(out.observed, {
    mined: true,
    status: 'success',
    block_number: 27,
    head_block: 38,
    confirmations: 12,
    gas_used: 0xca9c,
  });
  t.equal(out.message, 'Transaction 0x20540574… was mined in block 27 with 12 confirmation(s), status success.');
  const old = evaluateTx(tx(), legacy, head(3), 'rpc.example');
  t.match(old.observed, {
    status: null,
    root: '0x09ebe9c3ee77cd8d23faf37c62cf702b3c00e71dcadbef4d21355f35921b49ca',
    confirmations: 1,
  });
  const noHead = evaluateTx(tx(), ok, { error: { code: -32000, message: 'busy' } }, 'rpc.example');
  t.equal(noHead.status, 'pass', 'a failed head lookup still judges the receipt');
  t.match(noHead.observed, { confirmations: null });
  const rpcErr = evaluateTx(
    tx(),
    { error: { code: -32602, message: 'invalid argument 0: hex string has length 4' } },
    head(1),
    'rpc.example',
  );
  t.equal(rpcErr.status, 'error');
  t.equal(rpcErr.reason, 'upstream_error');
  const junk = evaluateTx(tx(), { result: 'yes' }, head(1), 'rpc.example');
  t.equal(junk.reason, 'upstream_bad_response');
  const noBlock = evaluateTx(tx(), { result: { status: '0x1' } }, head(1), 'rpc.example');
  t.equal(noBlock.reason, 'upstream_bad_response');
});
