/**
 * The paid path's hand-made parts against the references they replace: calldata against ethers'
 * ABI coder, the EIP-712 digest against TypedDataEncoder, the native curve against ethers' curve;
 * then the JSON-RPC client against an emulated node (batches, nodes refusing them, errors, URL
 * credentials) and the settlement sender's limit on sends under way at once.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { SigningKey, Transaction, TypedDataEncoder, Wallet, getAddress, getBytes, hexlify } from 'ethers';
import { USDC_ABI, UsdcChain, calldata } from '../../../src/billing/x402/chain.js';
import {
  EIP712_DOMAIN,
  PRICE_ATOMIC,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
  USDC_BASE,
} from '../../../src/billing/x402/constants.js';
import { transferDigest } from '../../../src/billing/x402/verify.js';
import { SECP_BACKEND, recoverSigner, signDigestBytes, useJsCurve } from '../../../src/billing/x402/secp.js';
import { rpcCall } from '../../../src/net/rpc.js';
import { closeDispatchers } from '../../../src/net/dispatchers.js';
import { LocalSender } from '../../../src/billing/x402/settle-local.js';
import type { PaymentRecord } from '../../../src/store/types.js';
import { startJsonRpc } from '../../emulators/jsonrpc.js';
import { senderNode } from './fixture.js';

const hex = (n: number): string => hexlify(randomBytes(n));
const uint = (): string => BigInt(hex(8)).toString();

function authorization() {
  return {
    from: getAddress(hex(20)),
    to: getAddress(hex(20)),
    value: uint(),
    validAfter: uint(),
    validBefore: uint(),
    nonce: hex(32),
  };
}

t.test("calldata matches ethers' ABI coder for the three USDC calls", async (t) => {
  for (let i = 0; i < 25; i++) {
    const a = authorization();
    const sig = new SigningKey(hex(32)).sign(hex(32));
    t.equal(calldata.balanceOf(a.from), USDC_ABI.encodeFunctionData('balanceOf', [a.from]));
    t.equal(
      calldata.authorizationState(a.from, a.nonce),
      USDC_ABI.encodeFunctionData('authorizationState', [a.from, a.nonce]),
    );
    t.equal(
      calldata.transferWithAuthorization(a, sig.v, sig.r, sig.s),
      USDC_ABI.encodeFunctionData('transferWithAuthorization', [
        a.from,
        a.to,
        a.value,
        a.validAfter,
        a.validBefore,
        a.nonce,
        sig.v,
        sig.r,
        sig.s,
      ]),
    );
  }
  t.throws(
    () =>
      calldata.transferWithAuthorization({ ...authorization(), value: (1n << 256n).toString() }, 27, hex(32), hex(32)),
    RangeError,
    'a value past uint256 is refused',
  );
});

t.test('the EIP-712 digest matches TypedDataEncoder on our domain', async (t) => {
  for (let i = 0; i < 25; i++) {
    const a = authorization();
    t.equal(transferDigest(a), TypedDataEncoder.hash(EIP712_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, a));
  }
  t.throws(() => transferDigest({ ...authorization(), validBefore: '9'.repeat(78) }), RangeError);
});

/** A signature as a payer sends it: r ‖ s ‖ v (27 or 28), hex. */
function signDigest(digest: string, privateKey: string): { serialized: string } {
  const { r, s, yParity } = signDigestBytes(getBytes(digest), getBytes(privateKey));
  return { serialized: `0x${Buffer.concat([r, s, Uint8Array.of(27 + yParity)]).toString('hex')}` };
}

t.test("recovery and signing give the same answers on the native curve and on ethers' curve", async (t) => {
  t.equal(SECP_BACKEND, 'native', 'the prebuilt binding loads on this machine');
  t.teardown(() => useJsCurve(false));
  for (let i = 0; i < 10; i++) {
    const wallet = Wallet.createRandom();
    const digest = hex(32);
    useJsCurve(false);
    const nativeSig = signDigest(digest, wallet.privateKey);
    const nativeSigner = recoverSigner(digest, nativeSig.serialized);
    useJsCurve(true);
    const jsSig = signDigest(digest, wallet.privateKey);
    const jsSigner = recoverSigner(digest, jsSig.serialized);
    t.equal(nativeSig.serialized, jsSig.serialized, 'RFC 6979: the same signature');
    t.equal(nativeSigner, wallet.address.toLowerCase());
    t.equal(jsSigner, wallet.address.toLowerCase());
    // A signature over another digest recovers to someone else on both curves.
    const other = hex(32);
    useJsCurve(false);
    const n2 = recoverSigner(other, nativeSig.serialized);
    useJsCurve(true);
    t.equal(recoverSigner(other, nativeSig.serialized), n2);
    t.not(n2, wallet.address);
  }
  useJsCurve(false);
  const sig = signDigest(hex(32), Wallet.createRandom().privateKey).serialized;
  t.throws(() => recoverSigner(hex(32), sig.slice(0, -2) + '1d'), /v must be 27 or 28/);
  t.throws(() => recoverSigner(hex(32), sig.slice(0, -4)), /65 bytes/);
  // Node's hex decoder stops at the first character that is not hex; the recovery refuses it first.
  t.throws(() => recoverSigner(hex(32), `${sig.slice(0, 10)}zz${sig.slice(12)}`), /65 bytes of hex/);
  t.throws(() => recoverSigner(`${hex(32).slice(0, -2)}g0`, sig), /32 bytes of hex/);
  t.throws(() => recoverSigner(hex(31), sig), /32 bytes of hex/);
});

t.teardown(closeDispatchers);

t.test('JSON-RPC client: batches, nodes that refuse them, errors and URL credentials', async (t) => {
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  const word = (n: bigint): string => `0x${n.toString(16).padStart(64, '0')}`;
  node.setHandler('eth_call', (params) => {
    const data = String((params[0] as { data: string }).data);
    return { result: data.startsWith(calldata.balanceOf(USDC_BASE).slice(0, 10)) ? word(123456n) : word(1n) };
  });
  const chain = UsdcChain.connect(`${node.url.replace('http://', 'http://alice:s%3Acret@')}/v2/some-key`, USDC_BASE);
  const a = authorization();

  t.same(await chain.payerState(a.from, a.nonce), { balance: 123456n, nonceUsed: true });
  t.equal(node.stats.requests, 1, 'both reads in one HTTP request');
  t.equal(node.received[0].path, '/v2/some-key', 'the URL path (often an API key) is kept');
  t.equal(
    node.received[0].headers.authorization,
    `Basic ${Buffer.from('alice:s:cret').toString('base64')}`,
    'credentials in the URL go as Basic auth',
  );

  node.batchError = { code: -32600, message: 'batch requests are not supported' };
  t.same(
    await chain.payerState(a.from, a.nonce),
    { balance: 123456n, nonceUsed: true },
    'a node refusing batches still answers',
  );
  node.resetStats();
  node.batchError = null;
  await chain.payerState(a.from, a.nonce);
  t.equal(node.stats.requests, 2, 'after a refusal the reads go as two single calls');

  node.setError('eth_call', 3, 'execution reverted');
  await t.rejects(chain.payerState(a.from, a.nonce), /JSON-RPC error 3: execution reverted/);
  const opts = { safe: false, timeoutMs: 500 };
  const missing = await rpcCall(node.url, 'no_such_method', [], opts);
  t.equal(missing.ok && missing.data.error?.code, -32601, 'a JSON-RPC error is data');
  node.fault = { status: 502, times: 1 };
  const bad = await rpcCall(node.url, 'eth_blockNumber', [], opts);
  t.match(!bad.ok && bad, { reason: 'upstream_http_error', status: 502 });
  node.fault = { hang: true, times: 1 };
  const hung = await rpcCall(node.url, 'eth_blockNumber', [], opts);
  t.equal(!hung.ok && hung.reason, 'upstream_timeout', 'a node that never answers times out');
  const next = await rpcCall(node.url, 'eth_blockNumber', [], opts);
  t.equal(next.ok && next.data.result, '0x1234', 'and the next call works');
});

/** `n` stored payments to `to`, each signed by one payer as a client would. */
async function paymentRecords(n: number, to: string): Promise<PaymentRecord[]> {
  const payer = Wallet.createRandom();
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const a = {
        from: payer.address,
        to,
        value: PRICE_ATOMIC,
        validAfter: '0',
        validBefore: '99999999999',
        nonce: hex(32),
      };
      const signature = await payer.signTypedData(EIP712_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, a);
      return {
        id: `p${i}`,
        asset: USDC_BASE,
        payer: a.from,
        nonce: a.nonce,
        payTo: a.to,
        value: a.value,
        network: 'eip155:8453',
        x402Version: 1,
        payload: JSON.stringify({ payload: { signature, authorization: a } }),
        validBefore: Number(a.validBefore),
        resource: 'r',
        state: 'settling',
        txHash: null,
        attempts: 1,
        lastError: null,
        createdAt: new Date(),
        updatedAt: new Date(),
      } as PaymentRecord;
    }),
  );
}

/** A settler's key and a sender on `node`, rounds of at most `sending`. */
function senderOn(node: Awaited<ReturnType<typeof startJsonRpc>>, sending?: number) {
  const settler = Wallet.createRandom();
  const chain = UsdcChain.connect(node.url, USDC_BASE, { pollingMs: 10 });
  return { settler, sender: new LocalSender(chain, settler.privateKey, { sending }) };
}

t.test(
  'local settlement: a round sends what waited in two requests; a refused nonce below a taken one is filled',
  async (t) => {
    const node = await startJsonRpc();
    t.teardown(() => node.close());
    senderNode(node, 7).setHandler('eth_sendRawTransaction', (params) => {
      const tx = Transaction.from(String(params[0]));
      if (tx.nonce === 9 && tx.data !== '0x')
        return { error: { code: -32000, message: 'replacement transaction underpriced' } };
      return { result: tx.hash };
    });
    const { settler, sender } = senderOn(node, 8);
    const records = await paymentRecords(4, settler.address);
    const broadcast: string[] = [];
    const results = await Promise.all(records.map((r) => sender.send(r, async (h) => void broadcast.push(h))));

    // The first goes alone (nothing waited with it); the other three wait for it and go together.
    const sent = (body: string) => [JSON.parse(body)].flat().filter((c) => c.method === 'eth_sendRawTransaction');
    const sends = node.received.map((r) => sent(r.body)).filter((b) => b.length > 0);
    t.same(
      sends.map((b) => b.length),
      [1, 3, 1],
      'one request for the first, one for the next three, one for the filler',
    );
    const txs = sends.flat().map((c) => Transaction.from(c.params[0]));
    t.same(
      txs.map((tx) => tx.nonce),
      [7, 8, 9, 10, 9],
      'consecutive nonces, then the refused one again',
    );
    for (const tx of txs) t.equal(tx.from, settler.address, 'signed by the settler');
    const filler = txs[4];
    t.match(
      { to: filler.to, value: filler.value, gasLimit: filler.gasLimit, data: filler.data },
      { to: settler.address, value: 0n, gasLimit: 21000n, data: '0x' },
      'the gap is filled with a transfer of nothing to ourselves',
    );
    t.same(
      results.map((r) => r.ok),
      [true, true, false, true],
    );
    t.match(results[2], { ok: false, error: /send failed: .*underpriced/ });
    t.same(broadcast, [txs[0].hash, txs[1].hash, txs[3].hash], 'the hashes the node gave, recorded before the receipt');
    t.equal(node.calls.filter((c) => c.method === 'eth_estimateGas').length, 4);
    t.equal(
      node.received.filter((r) => sent(r.body).length === 0 && r.body.includes('eth_estimateGas')).length,
      2,
      'estimates: one request a round',
    );

    // After a refusal the nonce is read again, not guessed.
    const [next] = await paymentRecords(1, settler.address);
    t.equal((await sender.send(next, async () => undefined)).ok, true);
    t.equal(node.calls.filter((c) => c.method === 'eth_getTransactionCount').length, 2);
  },
);

t.test('local settlement: a settlement that starts just as a round ends still goes out', async (t) => {
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  senderNode(node, 0).setHandler('eth_sendRawTransaction', (params) => ({
    result: Transaction.from(String(params[0])).hash,
  }));
  // The second send starts from the first one's broadcast, a few microtasks later each time, so
  // one of them lands between the round's last look at its queue and the round's end.
  for (let hops = 0; hops < 12; hops++) {
    const { settler, sender } = senderOn(node);
    const [first, second] = await paymentRecords(2, settler.address);
    let later: Promise<unknown> | null = null;
    await sender.send(first, async () => {
      void (async () => {
        for (let i = 0; i < hops; i++) await null;
        later = sender.send(second, async () => undefined);
      })();
    });
    while (later === null) await new Promise((r) => setImmediate(r));
    const timeout = new Promise((r) => setTimeout(() => r('still waiting after 2 s'), 2000).unref());
    t.match(await Promise.race([later, timeout]), { ok: true }, `${hops} microtasks after the broadcast`);
  }
});

t.test('local settlement: a broadcast with no answer keeps the hash its transaction would have', async (t) => {
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  senderNode(node, 3).setHandler('eth_getTransactionCount', () => {
    node.fault = { status: 502, times: 1 }; // the next request, the broadcast, fails
    return { result: '0x3' };
  });
  const { settler, sender } = senderOn(node);
  const [rec] = await paymentRecords(1, settler.address);
  const result = await sender.send(rec, async () => {
    t.fail('nothing was broadcast');
  });
  const body = node.received.at(-1)?.body ?? '';
  const raw = (JSON.parse(body) as { method: string; params: string[] }).params[0];
  t.match(result, { ok: false, error: /send failed/, txHash: Transaction.from(raw).hash });
});

t.test('local settlement: at most `sending` settlements between gas estimate and broadcast', async (t) => {
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  const DELAY = 40;
  node.fault = { delayMs: DELAY };
  const estimates: number[] = [];
  let txs = 0;
  senderNode(node, 0)
    .setHandler('eth_estimateGas', () => {
      estimates.push(performance.now());
      return { result: '0x15f90' };
    })
    .setHandler('eth_sendRawTransaction', () => ({ result: `0x${(++txs).toString(16).padStart(64, '0')}` }));
  const { settler, sender } = senderOn(node, 2);

  const records = await paymentRecords(6, settler.address);
  const broadcast: string[] = [];
  const results = await Promise.all(records.map((r) => sender.send(r, async (h) => void broadcast.push(h))));
  t.ok(
    results.every((r) => r.ok),
    JSON.stringify(results),
  );
  t.equal(new Set(broadcast).size, 6, 'six transactions sent');
  const nonces = node.calls.filter((c) => c.method === 'eth_sendRawTransaction').length;
  t.equal(nonces, 6);
  estimates.sort((x, y) => x - y);
  t.equal(estimates.length, 6);
  for (let i = 2; i < estimates.length; i++) {
    t.ok(
      estimates[i] - estimates[i - 2] >= DELAY * 1.5,
      `estimate ${i} waited for a turn (${(estimates[i] - estimates[i - 2]).toFixed(0)} ms after estimate ${i - 2})`,
    );
  }
  t.equal(node.calls.filter((c) => c.method === 'eth_getBlockByNumber').length, 1, 'one fee reading served the burst');
  // Nodes differ on an estimate that names no block (geth: latest; anvil: pending, replaying its pool).
  t.same(
    [...new Set(node.calls.filter((c) => c.method === 'eth_estimateGas').map((c) => c.params[1]))],
    ['latest'],
    'every estimate names the latest block',
  );
});

t.test('receipts awaited together are asked for in one batch a poll', async (t) => {
  const node = await startJsonRpc();
  t.teardown(() => node.close());
  // A transaction is mined when the node is asked for it the third time; one is never mined.
  const asked = new Map<string, number>();
  const NEVER = `0x${'ee'.repeat(32)}`;
  const BROKEN = `0x${'bb'.repeat(32)}`;
  node.setHandler('eth_getTransactionReceipt', (params) => {
    const hash = String(params[0]);
    const n = (asked.get(hash) ?? 0) + 1;
    asked.set(hash, n);
    if (hash === BROKEN) return { error: { code: -32000, message: 'header not found' } };
    return { result: hash !== NEVER && n >= 3 ? { status: '0x1', blockNumber: `0x${n.toString(16)}` } : null };
  });
  const chain = UsdcChain.connect(node.url, USDC_BASE, { pollingMs: 30 });
  const hashes = Array.from({ length: 250 }, () => hex(32));
  const waits = hashes.map((h) => chain.waitForReceipt(h, 5000));
  const twice = chain.waitForReceipt(hashes[0], 5000);
  const never = chain.waitForReceipt(NEVER, 100);
  const broken = chain.waitForReceipt(BROKEN, 5000).then(
    () => 'resolved',
    (err: Error) => err.message,
  );
  const receipts = await Promise.all(waits);
  t.ok(
    receipts.every((r) => r?.status === 1 && r.blockNumber === 3),
    'each receipt is found, at the poll that finds it',
  );
  t.same(await twice, receipts[0], 'two waits for one transaction share its polls');
  t.equal(await never, null, 'a transaction never mined: null at its timeout');
  t.match(await broken, /header not found/, "the node's error reaches the one waiting for that receipt");
  t.equal(asked.get(BROKEN), 1, 'a receipt the node failed is not asked for again');
  t.ok(
    hashes.every((h) => asked.get(h) === 3),
    'each mined transaction asked for once a poll, three times in all',
  );
  // 252 transactions at most 100 to a batch: three requests a poll for the three polls until they
  // are mined, then the one never mined on its own until its timeout (100 ms, polls 30 ms apart).
  t.ok(node.stats.requests <= 3 * 3 + 4, `${node.stats.requests} requests for ${node.calls.length} receipts`);
  const later = await chain.waitForReceipt(hashes[1], 5000);
  t.equal(later?.blockNumber, 4, 'a wait after the others have settled polls at once, on its own');
});
