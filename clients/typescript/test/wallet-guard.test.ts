/**
 * The guard every wallet package shares (docs/wallets.md §2–3), on its own: the action and the
 * approval fields it infers from calldata and typed data; a gateway in front of the service that
 * answers 5xx, an answer that is not one, a hook that throws, an unknown chain: each throws before
 * anything could be signed; `executeArgs` follows the signed Verdict's own field order (so a later
 * version of the struct needs no change); bad options are refused at construction.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { encodeFunctionData, erc20Abi, parseAbi } from 'viem';
import {
  type DecideResponse,
  executeArgs,
  inferTransactionAction,
  inferTypedDataAction,
  PreflightBlockedError,
  PreflightError,
  WalletGuard,
} from '../src/index.js';
import { approvalOfCall, approvalOfTypedData } from '../src/wallet-guard.js';

const A = '0x00000000000000000000000000000000000000aa';
const MAX = 2n ** 256n - 1n;

t.test('the action and the approval fields, from calldata and typed data', async (t) => {
  const transfer = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [A, 5n] });
  const approve = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [A, MAX] });
  const permit2 = encodeFunctionData({
    abi: parseAbi(['function approve(address token, address spender, uint160 amount, uint48 expiration)']),
    functionName: 'approve',
    args: [A, '0x00000000000000000000000000000000000000bb', 7n, 0],
  });
  t.equal(inferTransactionAction({ value: 10n, data: '0x' }), 'transfer', 'plain value');
  t.equal(inferTransactionAction({ data: transfer }), 'transfer', 'an ERC-20 transfer');
  t.equal(inferTransactionAction({ data: approve }), 'approve');
  t.equal(inferTransactionAction({ data: permit2 }), 'approve', "Permit2's approve");
  t.equal(inferTransactionAction({ value: 10n, data: '0xd0e30db0' }), 'contract_call', 'value with calldata');
  t.equal(inferTransactionAction({ value: 0n, data: '0x' }), 'contract_call', 'nothing at all');
  t.same(approvalOfCall(approve), { spender: A, approval_amount: MAX.toString() });
  t.same(approvalOfCall(permit2), { spender: '0x00000000000000000000000000000000000000bb', approval_amount: '7' });
  const forAll = (on: boolean) =>
    encodeFunctionData({
      abi: parseAbi(['function setApprovalForAll(address operator, bool approved)']),
      functionName: 'setApprovalForAll',
      args: [A, on],
    });
  t.equal(inferTransactionAction({ data: forAll(true) }), 'approve');
  t.same(approvalOfCall(forAll(true)), { spender: A, approval_amount: MAX.toString() }, 'approval for all: unlimited');
  t.same(approvalOfCall(forAll(false)), { spender: A, approval_amount: '0' }, 'revoked: nothing');
  t.same(approvalOfCall(transfer), {});
  t.same(approvalOfCall('0x095ea7b3'), {}, 'a truncated approve names nothing');

  const permit = {
    types: { Permit: [{ name: 'spender', type: 'address' }] },
    primaryType: 'Permit',
    message: { spender: A, value: 12n },
  };
  t.equal(inferTypedDataAction(permit), 'approve');
  t.same(approvalOfTypedData(permit), { spender: A, approval_amount: '12' });
  t.same(
    approvalOfTypedData({ ...permit, message: { spender: A, details: { amount: '9' } } }),
    { spender: A, approval_amount: '9' },
    'Permit2 details',
  );
  t.same(
    approvalOfTypedData({ ...permit, message: { spender: A, allowed: true } }),
    { spender: A, approval_amount: MAX.toString() },
    'a DAI permit is all or nothing',
  );
  t.equal(
    inferTypedDataAction({
      types: { TransferWithAuthorization: [] },
      primaryType: 'TransferWithAuthorization',
      message: {},
    }),
    'transfer',
  );
  t.equal(inferTypedDataAction({ types: { Note: [] }, primaryType: 'Note', message: {} }), 'contract_call');
});

/** A gateway in front of the service answering every guard call with `status` and `body`. */
async function gateway(status: number, body: unknown) {
  const seen: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const server = http.createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += String(c);
    seen.push({ headers: req.headers, body: text });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const tx = { from: A, to: A, value: 1n, data: '0x', chainId: 8453 };

t.test('a 5xx, an answer that is not one, a throwing hook: thrown, never a proceed', async (t) => {
  const down = await gateway(502, { detail: 'Bad Gateway' });
  t.teardown(down.close);
  const err = await new WalletGuard({ baseUrl: down.url }).transaction(tx).catch((e: unknown) => e);
  t.ok(err instanceof PreflightError, String(err));
  t.equal((err as PreflightError).status, 502);
  const sent = JSON.parse(down.seen[0].body);
  t.same(
    sent.transaction,
    { from: A, to: A, value: '1', data: '0x', gas: null },
    'the transaction as it will be signed',
  );
  t.equal(sent.action, 'transfer');
  t.equal(sent.chain, 'base');
  t.match(down.seen[0].headers['idempotency-key'], /^[0-9a-f-]{36}$/, 'an Idempotency-Key');

  const odd = await gateway(200, { verdict: 'maybe', failure_modes: [], decision: {} });
  t.teardown(odd.close);
  await t.rejects(new WalletGuard({ baseUrl: odd.url }).transaction(tx), PreflightBlockedError, 'an unknown verdict');

  const proceed = await gateway(200, { verdict: 'proceed', failure_modes: [], decision: {} });
  t.teardown(proceed.close);
  await t.rejects(
    new WalletGuard({
      baseUrl: proceed.url,
      onAnswer: () => {
        throw new Error('the log is down');
      },
    }).transaction(tx),
    { message: 'the log is down' },
    "the hook's error, before the proceed is returned",
  );
  const g = new WalletGuard({ baseUrl: proceed.url, request: { known_safe_addresses: [A], strict_mode: false } });
  await g.transaction(tx);
  await g.transaction(tx);
  const [k1, k2] = proceed.seen.slice(-2).map((s) => s.headers['idempotency-key']);
  t.not(k1, k2, 'each question its own key');
  t.same(JSON.parse(proceed.seen.at(-1)!.body).known_safe_addresses, [A], '`request` fields go along');
});

t.test('the chain: named by the id, or by `chain`; an id without a name is an error before any call', async (t) => {
  const g = new WalletGuard({ baseUrl: 'http://127.0.0.1:1' });
  t.equal(g.chainName(8453), 'base');
  t.equal(g.chainName(1n), 'ethereum');
  t.equal(g.chainName('0xa'), 'optimism');
  t.throws(() => g.chainName(31337), /chain id 31337 has no guard chain name/);
  t.throws(() => g.chainName(undefined), /pass the `chain` option/);
  t.equal(new WalletGuard({ baseUrl: 'x', chain: 'sepolia' }).chainName(31337), 'sepolia');
  t.throws(() => new WalletGuard({}), /give `baseUrl` or `client`/);
  t.throws(() => new WalletGuard({ baseUrl: 'x', onWait: 'later' as never }), /onWait is "throw" or "retry"/);
});

t.test("executeArgs follows the signed Verdict's own fields, in their order", async (t) => {
  const answer = (fields: Array<{ name: string; type: string }>, message: Record<string, string>) =>
    ({
      verdict: 'proceed',
      attestation: { signer: A, signature: '0x12', typed_data: { types: { Verdict: fields }, message } },
    }) as unknown as DecideResponse;
  const v1 = [
    { name: 'id', type: 'bytes32' },
    { name: 'verdict', type: 'uint8' },
    { name: 'expiresAt', type: 'uint64' },
  ];
  const { abi, args } = executeArgs(answer(v1, { id: '0x01', verdict: '0', expiresAt: '99' }), {
    to: A,
    value: 3n,
    data: '0xabcd',
  });
  t.same(
    (abi[0].inputs as Array<{ components?: unknown }>)[3].components,
    v1,
    'the tuple is the Verdict type as signed',
  );
  t.same(args, [A, 3n, '0xabcd', { id: '0x01', verdict: 0n, expiresAt: 99n }, '0x12']);
  const v2 = [...v1.slice(0, 2), { name: 'policyHash', type: 'bytes32' }, v1[2]];
  const later = executeArgs(answer(v2, { id: '0x01', verdict: '0', policyHash: '0x02', expiresAt: '99' }), { to: A });
  t.same(Object.keys(later.args[3]), ['id', 'verdict', 'policyHash', 'expiresAt'], 'a field added later is carried');
  t.throws(() => executeArgs({ verdict: 'proceed' } as DecideResponse, { to: A }), /no attestation/);
});
