/**
 * The simulation core on a real anvil: the same transaction read through eth_simulateV1,
 * debug_traceCall (a proxy refusing eth_simulateV1) and eth_call gives the same effects, reverts
 * come back decoded, and state overrides reach both simulating methods.
 */
import { MaxUint256 } from 'ethers';
import t from 'tap';
import { compiled } from '../../contracts/compile.js';
import { approvalChanges, assetChanges, PERMIT2 } from '../../src/scan/changes.js';
import { type SimMethod, type SimTransaction, decodeRevert, simulate } from '../../src/scan/simulate.js';
import { startRpcProxy } from '../helpers/rpc-proxy.js';
import { startScanChain } from '../helpers/scan-chain.js';

const opts = { safe: false, timeoutMs: 10_000 };

t.test('simulation core on anvil', async (t) => {
  const chain = await startScanChain();
  t.teardown(() => chain.close());
  const noSimulate = await startRpcProxy(chain.rpcUrl, ['eth_simulateV1']);
  t.teardown(() => noSimulate.close());
  const callOnly = await startRpcProxy(chain.rpcUrl, ['eth_simulateV1', 'debug_traceCall']);
  t.teardown(() => callOnly.close());
  const nothing = await startRpcProxy(chain.rpcUrl, ['eth_simulateV1', 'debug_traceCall', 'eth_call']);
  t.teardown(() => nothing.close());
  const usdc = (await chain.usdc.getAddress()).toLowerCase();
  const alice = await chain.wallet(500_000_000n, 10n ** 18n);
  const bob = '0x000000000000000000000000000000000000b0b0';
  const me = alice.address.toLowerCase();
  // The swaps pull USDC with transferFrom: the allowance is real state on the chain.
  await (await (chain.usdc.connect(alice) as typeof chain.usdc).approve(chain.fair, MaxUint256)).wait();
  await (await (chain.usdc.connect(alice) as typeof chain.usdc).approve(chain.drain, MaxUint256)).wait();

  const nodes: Array<[SimMethod, string]> = [
    ['eth_simulateV1', chain.rpcUrl],
    ['debug_traceCall', noSimulate.url],
  ];

  t.test('a USDC transfer: the same outflow through both simulating methods', async (t) => {
    const tx: SimTransaction = {
      from: alice.address,
      to: usdc,
      data: chain.iface.token.encodeFunctionData('transfer', [bob, 100_000_000n]),
    };
    for (const [method, url] of nodes) {
      const r = await simulate(url, tx, opts);
      if (!r.ok) throw new Error(r.message);
      t.equal(r.data.method, method, `${method} answered`);
      t.equal(r.data.reverted, false);
      t.type(r.data.block, 'number');
      t.same(assetChanges(alice.address, r.data.logs, r.data.nativeTransfers), [
        { asset: usdc, standard: 'erc20', direction: 'out', counterparty: bob, amount: '100000000', usd: null },
      ]);
    }
  });

  t.test('a swap that pays back in native coin: both sides, native from the trace', async (t) => {
    const tx: SimTransaction = {
      from: alice.address,
      to: chain.fair,
      data: chain.iface.swap.encodeFunctionData('swap', [
        usdc,
        50_000_000n,
        '0x0000000000000000000000000000000000000000',
        10n ** 16n,
      ]),
    };
    for (const [method, url] of nodes) {
      const r = await simulate(url, tx, opts);
      if (!r.ok) throw new Error(r.message);
      const changes = assetChanges(alice.address, r.data.logs, r.data.nativeTransfers);
      t.same(
        changes.map((c) => [c.asset, c.direction, c.amount, c.counterparty]).sort(),
        [
          ['native', 'in', String(10n ** 16n), chain.fair.toLowerCase()],
          [usdc, 'out', '50000000', chain.fair.toLowerCase()],
        ].sort(),
        `${method}: USDC out, native in`,
      );
    }
  });

  t.test('native value sent is a native outflow', async (t) => {
    const tx: SimTransaction = { from: alice.address, to: bob, value: '12345' };
    for (const [method, url] of nodes) {
      const r = await simulate(url, tx, opts);
      if (!r.ok) throw new Error(r.message);
      t.same(
        assetChanges(alice.address, r.data.logs, r.data.nativeTransfers),
        [
          {
            asset: 'native',
            standard: 'native',
            direction: 'out',
            counterparty: bob,
            amount: '12345',
            decimals: 18,
            usd: null,
          },
        ],
        method,
      );
    }
  });

  t.test('reverts come back decoded', async (t) => {
    const cases: Array<[string, unknown[], RegExp]> = [
      ['failWithReason', [], /^Reverter: always fails$/],
      ['failWithCustom', [], /^custom error 0x8e4a23d6$/],
      ['failWithPanic', [0n], /^Panic\(0x12\): division or modulo by zero$/],
    ];
    for (const [fn, args, want] of cases) {
      const tx: SimTransaction = {
        from: alice.address,
        to: chain.reverter,
        data: chain.iface.reverter.encodeFunctionData(fn, args),
      };
      for (const [method, url] of [...nodes, ['eth_call', callOnly.url] as [SimMethod, string]]) {
        const r = await simulate(url, tx, opts);
        if (!r.ok) throw new Error(r.message);
        t.equal(r.data.method, method);
        t.equal(r.data.reverted, true, `${fn} via ${method} reverts`);
        t.match(r.data.revertReason, want, `${fn} via ${method}: ${r.data.revertReason}`);
      }
    }
    t.equal(decodeRevert('0x'), null);
  });

  t.test('a sender that cannot pay the value: the transaction cannot succeed', async (t) => {
    const poor = '0x0000000000000000000000000000000000000dd1';
    for (const [method, url] of [...nodes, ['eth_call', callOnly.url] as [SimMethod, string]]) {
      const r = await simulate(url, { from: poor, to: bob, value: '4096' }, opts);
      if (!r.ok) throw new Error(r.message);
      t.equal(r.data.reverted, true, `${method}: reported as a revert`);
      t.match(r.data.revertReason, /^the sender cannot pay: .*insufficient funds/i);
    }
  });

  t.test('eth_call alone: no effects known, a success is only a success', async (t) => {
    const r = await simulate(callOnly.url, { from: alice.address, to: bob, value: '1' }, opts);
    if (!r.ok) throw new Error(r.message);
    t.equal(r.data.method, 'eth_call');
    t.equal(r.data.effectsKnown, false);
    t.equal(r.data.reverted, false);
  });

  t.test('a node with none of the three is an upstream error', async (t) => {
    const r = await simulate(nothing.url, { from: alice.address, to: bob }, opts);
    t.equal(r.ok, false);
    if (!r.ok) t.match(r.message, /offers none of eth_simulateV1, debug_traceCall, eth_call/);
  });

  t.test('approvals: ERC-20 unlimited, ApprovalForAll and Permit2', async (t) => {
    const spender = '0x000000000000000000000000000000000000beef';
    const cases: Array<[SimTransaction, object]> = [
      [
        { from: alice.address, to: usdc, data: chain.iface.token.encodeFunctionData('approve', [spender, MaxUint256]) },
        { token: usdc, spender, amount: MaxUint256.toString(), unlimited: true, kind: 'erc20' },
      ],
      [
        {
          from: alice.address,
          to: await chain.nft.getAddress(),
          data: chain.iface.nft.encodeFunctionData('setApprovalForAll', [spender, true]),
        },
        {
          token: (await chain.nft.getAddress()).toLowerCase(),
          spender,
          amount: '1',
          unlimited: true,
          kind: 'erc721_all',
        },
      ],
      [
        {
          from: alice.address,
          to: PERMIT2,
          data: chain.iface.permit2.encodeFunctionData('approve', [usdc, spender, (1n << 160n) - 1n, 2_000_000_000]),
        },
        {
          token: usdc,
          spender,
          amount: ((1n << 160n) - 1n).toString(),
          unlimited: true,
          kind: 'permit2',
          expiration: 2_000_000_000,
        },
      ],
    ];
    for (const [tx, want] of cases)
      for (const [method, url] of nodes) {
        const r = await simulate(url, tx, opts);
        if (!r.ok) throw new Error(r.message);
        t.same(approvalChanges(alice.address, r.data.logs), [want], method);
      }
  });

  t.test('ERC-721 and ERC-1155 transfers', async (t) => {
    const nft = (await chain.nft.getAddress()).toLowerCase();
    const multi = (await chain.multi.getAddress()).toLowerCase();
    await (await chain.nft.mint(alice.address, 7n)).wait();
    await (await chain.multi.mint(alice.address, 3n, 10n)).wait();
    await (await chain.multi.mint(alice.address, 4n, 10n)).wait();
    const t721: SimTransaction = {
      from: alice.address,
      to: nft,
      data: chain.iface.nft.encodeFunctionData('transferFrom', [alice.address, bob, 7n]),
    };
    const t1155: SimTransaction = {
      from: alice.address,
      to: multi,
      data: chain.iface.multi.encodeFunctionData('safeBatchTransferFrom', [
        alice.address,
        bob,
        [3n, 4n],
        [2n, 5n],
        '0x',
      ]),
    };
    for (const [method, url] of nodes) {
      const a = await simulate(url, t721, opts);
      const b = await simulate(url, t1155, opts);
      if (!a.ok || !b.ok) throw new Error('simulation failed');
      t.same(
        assetChanges(me, a.data.logs, a.data.nativeTransfers),
        [
          {
            asset: nft,
            standard: 'erc721',
            direction: 'out',
            counterparty: bob,
            amount: '1',
            token_id: '7',
            usd: null,
          },
        ],
        `${method}: the NFT leaves`,
      );
      t.same(
        assetChanges(me, b.data.logs, b.data.nativeTransfers).map((c) => [c.standard, c.token_id, c.amount]),
        [
          ['erc1155', '3', '2'],
          ['erc1155', '4', '5'],
        ],
        `${method}: both 1155 ids leave`,
      );
    }
  });

  t.test('state overrides reach eth_simulateV1 and debug_traceCall alike', async (t) => {
    // Code that does not exist on the chain: the Reverter's runtime at a fresh address.
    const ghost = '0x00000000000000000000000000000000000c0de0';
    const tx: SimTransaction = {
      from: alice.address,
      to: ghost,
      data: chain.iface.reverter.encodeFunctionData('failWithReason'),
    };
    const overrides = { [ghost]: { code: compiled('Reverter').deployedBytecode } };
    for (const [method, url] of nodes) {
      const plain = await simulate(url, tx, opts);
      const over = await simulate(url, tx, { ...opts, overrides });
      if (!plain.ok || !over.ok) throw new Error('simulation failed');
      t.equal(plain.data.reverted, false, `${method}: no code, no revert`);
      t.equal(over.data.reverted, true, `${method}: the override's code ran`);
      t.equal(over.data.revertReason, 'Reverter: always fails');
    }
    // A balance override: a sender with nothing can send value once given the coin.
    const poor = '0x0000000000000000000000000000000000000dd0';
    for (const [method, url] of nodes) {
      const r = await simulate(
        url,
        { from: poor, to: bob, value: '1000' },
        { ...opts, overrides: { [poor]: { balance: 10n ** 18n } } },
      );
      if (!r.ok) throw new Error(r.message);
      t.equal(r.data.reverted, false, `${method}: funded by the override`);
      t.equal(assetChanges(poor, r.data.logs, r.data.nativeTransfers)[0]?.amount, '1000');
    }
  });
});
