import t from 'tap';
import { rpcBatch } from '../../src/net/rpc.js';
import { deployReverter, revertedTxHash, startAnvil, successfulTxHash } from '../helpers/anvil.js';

t.test('a real chain: chain id, head, receipts of a success and a revert, contract code', async (t) => {
  const started = Date.now();
  const anvil = await startAnvil();
  t.teardown(() => anvil.close());
  t.ok(Date.now() - started < 10_000, `anvil ready in ${Date.now() - started} ms`);
  t.equal(anvil.accounts.length, 3);

  const reverter = await deployReverter(anvil);
  const ok = await successfulTxHash(anvil);
  const bad = await revertedTxHash(anvil, reverter);
  const r = await rpcBatch(
    anvil.url,
    [
      { method: 'eth_chainId', params: [] },
      { method: 'eth_blockNumber', params: [] },
      { method: 'eth_getTransactionReceipt', params: [ok] },
      { method: 'eth_getTransactionReceipt', params: [bad] },
      { method: 'eth_getCode', params: [reverter, 'latest'] },
      { method: 'eth_getCode', params: [anvil.accounts[1], 'latest'] },
      { method: 'eth_getTransactionReceipt', params: [`0x${'00'.repeat(31)}01`] },
    ],
    { safe: false },
  );
  t.ok(r.ok, r.ok ? 'batch answered' : r.message);
  if (!r.ok) return;
  const [chainId, head, okReceipt, badReceipt, code, eoaCode, missing] = r.data;
  t.equal(chainId.result, '0x2105', 'chain id 8453');
  t.ok(Number(head.result) >= 3, 'three blocks mined');
  t.equal((okReceipt.result as { status: string }).status, '0x1');
  t.equal((badReceipt.result as { status: string }).status, '0x0');
  t.equal(code.result, '0x60006000fd');
  t.equal(eoaCode.result, '0x');
  t.equal(missing.result, null);
});
