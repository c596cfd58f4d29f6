/**
 * GuardedEvmWalletProvider and the preflight tools with the real @coinbase/agentkit, over its own
 * ViemWalletProvider on a local Base (anvil, chain id 8453, Circle's USDC), against the real service
 * started as a user starts it. AgentKit phones home when a provider is built and on every action:
 * every non-loopback URL is refused (test/helpers/loopback-only.ts) before AgentKit is imported,
 * and the test sees its analytics call refused. A proceed mines; an unlimited approval, a Permit2
 * permit to a drainer and a type-4 delegation to a sweeper throw with the reasons and leave the
 * nonce and balances as they were; AgentKit's ERC-20 transfer and approve actions go through the
 * guard (counted at the service); a wait is retried then given up; the service down or another
 * signer signs nothing.
 */
import { createClient } from '@preflight/client';
import t from 'tap';
import { type Chain, createWalletClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { base } from 'viem/chains';
import { installLoopbackOnly } from '../../../test/helpers/loopback-only.js';
import {
  INTENDED,
  MAX_UINT256,
  POISON,
  permit2ToDrainer,
  SANCTIONED,
  randomAddress,
  startWalletWorld,
  USDC_BASE,
  type WalletWorld,
} from '../../../test/helpers/wallets.js';

// Before AgentKit (or this package, which imports it) is loaded.
const refusal = installLoopbackOnly();
t.teardown(() => refusal.restore());
const agentkit = await import('@coinbase/agentkit');
const guarded = await import('../src/index.js');
const { GuardedEvmWalletProvider, PreflightBlockedError, PreflightWaitError, PreflightAttestationError } = guarded;
type Options = ConstructorParameters<typeof GuardedEvmWalletProvider>[1];

let world: WalletWorld;
let chain: Chain;
t.before(async () => {
  world = await startWalletWorld();
  chain = { ...base, rpcUrls: { default: { http: [world.chain.rpcUrl] } } } as Chain;
});
t.teardown(() => world?.close());

async function setup(options: Partial<Options> = {}) {
  const key = await world.fundedKey();
  const account = privateKeyToAccount(key);
  const signed = { n: 0 };
  const counting = {
    ...account,
    signTransaction: ((...a: Parameters<typeof account.signTransaction>) => {
      signed.n++;
      return account.signTransaction(...a);
    }) as typeof account.signTransaction,
    signTypedData: ((...a: Parameters<typeof account.signTypedData>) => {
      signed.n++;
      return account.signTypedData(...a);
    }) as typeof account.signTypedData,
  };
  const walletClient = createWalletClient({ account: counting, chain, transport: http(world.chain.rpcUrl) });
  const inner = new agentkit.ViemWalletProvider(walletClient as never, { rpcUrl: world.chain.rpcUrl });
  const answers: string[] = [];
  const provider = new GuardedEvmWalletProvider(inner, {
    baseUrl: world.url,
    apiKey: world.apiKey,
    attester: world.attester,
    onAnswer: (a) => void answers.push(a.verdict),
    ...options,
  });
  return { provider, inner, signed, answers, address: account.address, key };
}

t.test('a real subclass: AgentKit sees an EvmWalletProvider with the inner name, address and network', async (t) => {
  const { provider, inner, address } = await setup();
  t.ok(provider instanceof agentkit.EvmWalletProvider);
  t.ok(provider instanceof agentkit.WalletProvider);
  t.equal(provider.getName(), inner.getName());
  t.equal(provider.getName(), 'viem_wallet_provider');
  t.equal(provider.getAddress(), address);
  t.same(provider.getNetwork(), inner.getNetwork());
  t.equal(provider.getNetwork().chainId, '8453');
  // The inner provider's announcement went out on the next tick and was refused, not sent.
  await new Promise((r) => setTimeout(r, 50));
  t.ok(
    refusal.refused.some((u) => u.startsWith('https://cca-lite.coinbase.com/')),
    `AgentKit tried to phone home and was refused (${refusal.refused.join(', ')})`,
  );
});

t.test("AgentKit's ERC-20 transfer action goes through the guard and is mined", async (t) => {
  const { provider, answers } = await setup();
  const transfer = agentkit
    .erc20ActionProvider()
    .getActions(provider)
    .find((a) => a.name.endsWith('_transfer'));
  const bob = randomAddress();
  const before = await world.guardCalls();
  const refusedBefore = refusal.refused.length;
  const out = await transfer!.invoke({ amount: '2.5', tokenAddress: USDC_BASE, destinationAddress: bob });
  t.match(out, /^Transferred 2\.5 of USD Coin/, out);
  t.equal(await world.chain.balanceOf(bob), 2_500_000n, 'bob got 2.5 USDC');
  t.equal((await world.guardCalls()) - before, 1, 'one guard call at the service');
  t.same(answers, ['proceed']);
  t.ok(refusal.refused.length > refusedBefore, "the action's analytics call was refused");
});

t.test("AgentKit's approve action for an unlimited amount to a drainer is blocked; nothing signed", async (t) => {
  const { provider, signed, address } = await setup();
  const approve = agentkit
    .erc20ActionProvider()
    .getActions(provider)
    .find((a) => a.name.endsWith('_approve'));
  const before = await world.state(address);
  const calls = await world.guardCalls();
  const out = await approve!.invoke({
    amount: '100000000000000000000000',
    tokenAddress: USDC_BASE,
    spenderAddress: world.chain.drain,
  });
  t.match(out, /PreflightBlockedError|preflight blocked/, out);
  t.match(out, /unlimited_approval/);
  t.equal((await world.guardCalls()) - calls, 1);
  t.equal(signed.n, 0);
  t.same(await world.state(address), before);
});

t.test(
  "AgentKit's ERC-20 transfer to a sanctioned address, or to a lookalike of a known one, is refused",
  async (t) => {
    const { provider, signed, address } = await setup({ request: { known_safe_addresses: [INTENDED] } });
    const transfer = agentkit
      .erc20ActionProvider()
      .getActions(provider)
      .find((a) => a.name.endsWith('_transfer'));
    const before = await world.state(address);
    for (const [to, reason] of [
      [SANCTIONED, 'sanctioned_address'],
      [POISON, 'address_lookalike'],
    ] as const) {
      const out = await transfer!.invoke({ amount: '1', tokenAddress: USDC_BASE, destinationAddress: to });
      t.match(out, /PreflightBlockedError/, out);
      t.match(out, new RegExp(`counterparty_screen:${reason}`));
    }
    t.equal(signed.n, 0);
    t.same(await world.state(address), before);
  },
);

t.test('sendTransaction of an unlimited approval throws the blocked error with the reasons', async (t) => {
  const { provider, signed, address } = await setup();
  const before = await world.state(address);
  const data =
    `0x095ea7b3${world.chain.drain.slice(2).toLowerCase().padStart(64, '0')}${MAX_UINT256.toString(16)}` as const;
  const err = await provider.sendTransaction({ to: USDC_BASE as `0x${string}`, data }).catch((e: unknown) => e);
  t.ok(err instanceof PreflightBlockedError, String(err));
  t.ok(
    (err as InstanceType<typeof PreflightBlockedError>).reasons.includes('transaction_simulation:unlimited_approval'),
  );
  t.equal(signed.n, 0);
  t.same(await world.state(address), before);
});

t.test('a Permit2 permit to a drainer throws before the signature', async (t) => {
  const { provider, signed, address } = await setup();
  const before = await world.state(address);
  const err = await provider.signTypedData(permit2ToDrainer(world.chain.drain) as never).catch((e: unknown) => e);
  t.ok(err instanceof PreflightBlockedError, String(err));
  t.ok((err as InstanceType<typeof PreflightBlockedError>).reasons.includes('signature_scan:unlimited_permit'));
  t.equal(signed.n, 0);
  t.same(await world.state(address), before);
});

t.test('a type-4 transaction delegating to a sweeper throws', async (t) => {
  const { provider, signed, address, key } = await setup();
  const nonce = await world.chain.provider.getTransactionCount(address);
  const auth = await privateKeyToAccount(key).signAuthorization({
    address: world.sweeper as `0x${string}`,
    chainId: 8453,
    nonce: nonce + 1,
  });
  const before = await world.state(address);
  const err = await provider
    .sendTransaction({ to: address, value: 0n, authorizationList: [auth] } as never)
    .catch((e: unknown) => e);
  t.ok(err instanceof PreflightBlockedError, String(err));
  t.ok((err as InstanceType<typeof PreflightBlockedError>).reasons.includes('delegation_scan:delegate_sweeps_funds'));
  t.equal(signed.n, 0);
  t.same(await world.state(address), before);
});

t.test('a native transfer is guarded and mined; a raw hash is refused', async (t) => {
  const { provider } = await setup();
  const bob = randomAddress();
  const before = await world.guardCalls();
  const hash = await provider.nativeTransfer(bob, '1000');
  await provider.waitForTransactionReceipt(hash as `0x${string}`);
  t.equal(await world.chain.provider.getBalance(bob), 1000n);
  t.equal((await world.guardCalls()) - before, 1);
  await t.rejects(provider.sign(`0x${'ab'.repeat(32)}`), { name: 'PreflightRawSignError' });
  t.ok(await provider.signMessage('hello'), 'a message passes');
});

t.test(
  'wait: the retry proceeds once the service can answer; thrown at once by default; given up after maxWaitMs',
  async (t) => {
    t.teardown(() => void world.cg.faultOn('/simple/price', null));
    const tx = () => ({
      to: USDC_BASE as `0x${string}`,
      data: `0xa9059cbb${randomAddress().slice(2).toLowerCase().padStart(64, '0')}${'1'.padStart(64, '0')}` as `0x${string}`,
    });

    world.cg.faultOn('/simple/price', { status: 500, times: 1 });
    world.cg.setPrice('usd-coin-wait-c', 'usd', 1);
    const recover = await setup({
      onWait: 'retry',
      maxWaitMs: 5_000,
      request: { stablecoin_asset_id: 'usd-coin-wait-c' },
    });
    await recover.provider.waitForTransactionReceipt(await recover.provider.sendTransaction(tx()));
    t.same(recover.answers, ['wait', 'proceed']);

    world.cg.faultOn('/simple/price', { status: 500 });
    const once = await setup({ request: { stablecoin_asset_id: 'usd-coin-wait-a' } });
    await t.rejects(once.provider.sendTransaction(tx()), PreflightWaitError);
    t.same(once.answers, ['wait']);

    const retry = await setup({
      onWait: 'retry',
      maxWaitMs: 5_000,
      request: { stablecoin_asset_id: 'usd-coin-wait-b' },
    });
    const before = await world.state(retry.address);
    await t.rejects(retry.provider.sendTransaction(tx()), PreflightWaitError);
    t.same(retry.answers, ['wait', 'wait', 'wait']);
    t.equal(retry.signed.n, 0);
    t.same(await world.state(retry.address), before);
  },
);

t.test('the service down, or an answer from another signer: it throws and signs nothing', async (t) => {
  for (const options of [{ baseUrl: 'http://127.0.0.1:1' }, { attester: randomAddress() }]) {
    const { provider, signed, address } = await setup(options);
    const before = await world.state(address);
    const err = await provider.nativeTransfer(randomAddress(), '1').catch((e: unknown) => e);
    t.ok(err instanceof Error, String(err));
    t.notOk(err instanceof PreflightBlockedError);
    if (options.attester) t.ok(err instanceof PreflightAttestationError);
    t.equal(signed.n, 0);
    t.same(await world.state(address), before);
  }
});

t.test('the preflight tools: preflight_guard, preflight_screen, preflight_usage', async (t) => {
  const { provider } = await setup();
  const tools = guarded.preflightActionProvider({ baseUrl: world.url, apiKey: world.apiKey });
  const actions = tools.getActions(provider);
  t.same(
    actions.map((a) => a.name),
    [
      'PreflightActionProvider_preflight_guard',
      'PreflightActionProvider_preflight_screen',
      'PreflightActionProvider_preflight_usage',
    ],
    'AgentKit names an action after its provider class',
  );
  t.ok(tools.supportsNetwork(provider.getNetwork()));
  const [guardTool, screenTool, usageTool] = actions;
  const calls = await world.guardCalls();
  const block = JSON.parse(
    await guardTool.invoke({
      action: 'approve',
      to: USDC_BASE,
      data: `0x095ea7b3${world.chain.drain.slice(2).toLowerCase().padStart(64, '0')}${MAX_UINT256.toString(16)}`,
      spender: world.chain.drain,
      approval_amount: MAX_UINT256.toString(),
    }),
  );
  t.equal(block.verdict, 'block');
  t.ok(block.reasons.includes('transaction_simulation:unlimited_approval'), String(block.reasons));
  t.equal((await world.guardCalls()) - calls, 1);
  const proceed = JSON.parse(
    await guardTool.invoke({
      action: 'transfer',
      to: USDC_BASE,
      data: `0xa9059cbb${randomAddress().slice(2).toLowerCase().padStart(64, '0')}${'1'.padStart(64, '0')}`,
    }),
  );
  t.equal(proceed.verdict, 'proceed', JSON.stringify(proceed));
  // A bad argument is the schema's error as text, and no call.
  const before = await world.guardCalls();
  t.match(await guardTool.invoke({ action: 'teleport' }), /^Error: invalid arguments: action: /);
  t.equal(await world.guardCalls(), before);
  const fresh = randomAddress();
  const screen = JSON.parse(await screenTool.invoke({ addresses: [fresh, SANCTIONED] }));
  t.same(
    screen.results.map((r: { status: string }) => r.status),
    ['pass', 'fail'],
    'preflight_screen: a fresh address passes, a sanctioned one fails',
  );
  t.ok(screen.results[1].reasons.includes('sanctioned_address'), JSON.stringify(screen.results[1]));

  // preflight_usage reads a policy the account's owner wrote.
  const owner = createClient({ baseUrl: world.url, apiKey: world.apiKey });
  await owner.putPolicy('agent-payments', { default: 'allow', limits: [{ id: 'daily', window: 'day', max_usd: 100 }] });
  const usage = JSON.parse(await usageTool.invoke({ policy: 'agent-payments' }));
  t.equal(usage.name, 'agent-payments');
  t.same(
    usage.limits.map((l: { id: string; max_usd: number; remaining_usd: number }) => [l.id, l.max_usd, l.remaining_usd]),
    [['daily', 100, 100]],
  );
  t.match(
    await usageTool.invoke({ policy: 'no-such-policy' }),
    /^Error: preflight answered 404/,
    'an unknown policy, as text',
  );
});
