/**
 * guardAccount on a local Base (anvil, chain id 8453, Circle's USDC) against the real service
 * started as a user starts it: a proceed mines; an unlimited approval, a Permit2 permit to a
 * drainer and a delegation to a sweeper each throw PreflightBlockedError with the reasons and
 * leave the nonce and balances as they were; a wait is retried and then given up; the service
 * down or an answer from another signer signs nothing; writeContract, sendCalls, deployContract
 * and executeThroughAccount go through the guard (counted at the service).
 */
import { Wallet } from 'ethers';
import t from 'tap';
import {
  type Chain,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  http,
  type LocalAccount,
  parseAbi,
  recoverTransactionAddress,
  verifyTypedData,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { base } from 'viem/chains';
import { compiled } from '../../../contracts/compile.js';
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
import {
  executeThroughAccount,
  guardAccount,
  PreflightAttestationError,
  PreflightBlockedError,
  PreflightRawSignError,
  PreflightWaitError,
} from '../src/index.js';

let world: WalletWorld;
let chain: Chain;
t.before(async () => {
  world = await startWalletWorld();
  chain = { ...base, rpcUrls: { default: { http: [world.chain.rpcUrl] } } } as Chain;
});
t.teardown(() => world?.close());

/** An inner account that counts what it is asked to sign. */
function counted(key: `0x${string}`) {
  const inner = privateKeyToAccount(key);
  const signed = { n: 0 };
  const count =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    (...a: A) => {
      signed.n++;
      return f(...a);
    };
  const account: LocalAccount = {
    ...inner,
    sign: count(inner.sign),
    signMessage: count(inner.signMessage),
    signTransaction: count(inner.signTransaction) as LocalAccount['signTransaction'],
    signTypedData: count(inner.signTypedData) as LocalAccount['signTypedData'],
    signAuthorization: count(inner.signAuthorization),
  };
  return { account, signed };
}

async function setup(options: Partial<Parameters<typeof guardAccount>[1]> = {}) {
  const { account: inner, signed } = counted(await world.fundedKey());
  const answers: string[] = [];
  const account = guardAccount(inner, {
    baseUrl: world.url,
    apiKey: world.apiKey,
    attester: world.attester,
    onAnswer: (a) => void answers.push(a.verdict),
    ...options,
  });
  const wallet = createWalletClient({ account, chain, transport: http(world.chain.rpcUrl) });
  const pub = createPublicClient({ chain, transport: http(world.chain.rpcUrl) });
  return { account, inner, signed, answers, wallet, pub };
}

const transferData = (to: string, amount: bigint) =>
  encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as `0x${string}`, amount] });

t.test('a proceed: the USDC transfer is signed, sent and mined', async (t) => {
  const { account, wallet, pub, answers } = await setup();
  const bob = randomAddress();
  const before = await world.guardCalls();
  const hash = await wallet.sendTransaction({ to: USDC_BASE as `0x${string}`, data: transferData(bob, 5_000_000n) });
  const receipt = await pub.waitForTransactionReceipt({ hash });
  t.equal(receipt.status, 'success');
  t.equal(await world.chain.balanceOf(bob), 5_000_000n, 'bob got 5 USDC');
  t.same(answers, ['proceed'], 'one answer, handed to onAnswer');
  t.equal((await world.guardCalls()) - before, 1, 'one guard call at the service');
  t.equal(
    await recoverTransactionAddress({ serializedTransaction: (await rawOf(hash)) as never }),
    account.address,
    'signed by the inner key (viem recovers it)',
  );
});

async function rawOf(hash: `0x${string}`): Promise<`0x${string}`> {
  return (await world.chain.provider.send('eth_getRawTransactionByHash', [hash])) as `0x${string}`;
}

t.test('an unlimited approval to a drainer throws, nothing signed, nonce and balances unchanged', async (t) => {
  const { account, wallet, signed } = await setup();
  const before = await world.state(account.address);
  const err = await wallet
    .writeContract({
      address: USDC_BASE as `0x${string}`,
      abi: erc20Abi,
      functionName: 'approve',
      args: [world.chain.drain as `0x${string}`, MAX_UINT256],
    })
    .catch((e: unknown) => e);
  const blocked = findCause(err, PreflightBlockedError);
  t.ok(blocked, `PreflightBlockedError (${String(err)})`);
  t.equal(blocked?.verdict, 'block');
  t.ok(blocked?.reasons.includes('transaction_simulation:unlimited_approval'), String(blocked?.reasons));
  t.ok(blocked?.attestation?.signature, 'the attestation travels with the error');
  t.equal(signed.n, 0, 'the key signed nothing');
  t.same(await world.state(account.address), before, 'nonce, ETH and USDC unchanged');
});

t.test('a Permit2 permit to a drainer throws before the signature', async (t) => {
  const { account, wallet, signed } = await setup();
  const before = await world.state(account.address);
  const err = await wallet.signTypedData(permit2ToDrainer(world.chain.drain) as never).catch((e: unknown) => e);
  t.ok(err instanceof PreflightBlockedError, String(err));
  t.ok((err as PreflightBlockedError).reasons.includes('signature_scan:unlimited_permit'));
  t.equal(signed.n, 0);
  t.same(await world.state(account.address), before);
});

t.test('a delegation to a sweeper throws before the authorization is signed', async (t) => {
  const { account, wallet, signed } = await setup();
  const before = await world.state(account.address);
  const err = await wallet
    .signAuthorization({ contractAddress: world.sweeper as `0x${string}`, executor: 'self' })
    .catch((e: unknown) => e);
  t.ok(err instanceof PreflightBlockedError, String(err));
  t.ok((err as PreflightBlockedError).reasons.includes('delegation_scan:delegate_sweeps_funds'));
  t.equal(signed.n, 0);
  t.same(await world.state(account.address), before);
  t.equal(await world.chain.provider.getCode(account.address), '0x', 'no code was delegated');
});

t.test('a transfer to a sanctioned address, or to a lookalike of a known one, throws', async (t) => {
  const { account, wallet, signed } = await setup({ request: { known_safe_addresses: [INTENDED] } });
  const before = await world.state(account.address);
  for (const [to, reason] of [
    [SANCTIONED, 'counterparty_screen:sanctioned_address'],
    [POISON, 'counterparty_screen:address_lookalike'],
  ] as const) {
    const err = await wallet
      .sendTransaction({ to: USDC_BASE as `0x${string}`, data: transferData(to, 1_000_000n) })
      .catch((e: unknown) => e);
    const blocked = findCause(err, PreflightBlockedError);
    t.ok(blocked?.reasons.includes(reason), `${to}: ${String(blocked?.reasons ?? err)}`);
  }
  t.equal(signed.n, 0);
  t.same(await world.state(account.address), before);
});

t.test(
  'wait: the retry proceeds once the service can answer; thrown at once by default; given up after maxWaitMs',
  async (t) => {
    // The stablecoin's price cannot be read: an error, which strict mode answers with wait (2 s).
    // The order keeps the price provider's circuit closed (it opens after 5 failures in a row).
    t.teardown(() => void world.cg.faultOn('/simple/price', null));
    const call = { to: USDC_BASE as `0x${string}`, data: transferData(randomAddress(), 1n) };

    world.cg.faultOn('/simple/price', { status: 500, times: 1 });
    world.cg.setPrice('usd-coin-wait-c', 'usd', 1);
    const recover = await setup({
      onWait: 'retry',
      maxWaitMs: 5_000,
      request: { stablecoin_asset_id: 'usd-coin-wait-c' },
    });
    const hash = await recover.wallet.sendTransaction(call);
    t.equal((await recover.pub.waitForTransactionReceipt({ hash })).status, 'success');
    t.same(recover.answers, ['wait', 'proceed'], 'a wait, then a proceed after retry_after_s');

    world.cg.faultOn('/simple/price', { status: 500 });
    const once = await setup({ request: { stablecoin_asset_id: 'usd-coin-wait-a' } });
    let before = await world.guardCalls();
    let err = await once.wallet.sendTransaction(call).catch((e: unknown) => e);
    const wait = findCause(err, PreflightWaitError);
    t.ok(wait, String(err));
    t.equal(wait?.retryAfterS, 2);
    t.ok(wait?.reasons.includes('price_deviation:upstream_http_error'), String(wait?.reasons));
    t.equal((await world.guardCalls()) - before, 1, 'asked once');
    t.equal(once.signed.n, 0);

    const retry = await setup({
      onWait: 'retry',
      maxWaitMs: 5_000,
      request: { stablecoin_asset_id: 'usd-coin-wait-b' },
    });
    const state = await world.state(retry.account.address);
    before = await world.guardCalls();
    const started = Date.now();
    err = await retry.wallet.sendTransaction(call).catch((e: unknown) => e);
    t.ok(findCause(err, PreflightWaitError), String(err));
    t.equal((await world.guardCalls()) - before, 3, 'asked at 0, 2 and 4 s, then the next wait would pass maxWaitMs');
    t.ok(Date.now() - started >= 4_000, 'it slept through retry_after_s');
    t.same(retry.answers, ['wait', 'wait', 'wait']);
    t.equal(retry.signed.n, 0);
    t.same(await world.state(retry.account.address), state);
  },
);

t.test('the service down: it throws and signs nothing', async (t) => {
  const { account, wallet, signed } = await setup({ baseUrl: 'http://127.0.0.1:1' });
  const before = await world.state(account.address);
  const err = await wallet
    .sendTransaction({ to: USDC_BASE as `0x${string}`, data: transferData(randomAddress(), 1n) })
    .catch((e: unknown) => e);
  t.ok(err instanceof Error, String(err));
  t.notOk(findCause(err, PreflightBlockedError), 'not a verdict: the guard could not be asked');
  t.equal(signed.n, 0);
  t.same(await world.state(account.address), before);
});

t.test('an answer signed by another attester is refused', async (t) => {
  const { account, wallet, signed } = await setup({ attester: randomAddress() });
  const before = await world.state(account.address);
  const err = await wallet
    .sendTransaction({ to: USDC_BASE as `0x${string}`, data: transferData(randomAddress(), 1n) })
    .catch((e: unknown) => e);
  const refused = findCause(err, PreflightAttestationError);
  t.ok(refused, String(err));
  t.equal(refused?.verdict, 'proceed', 'even a proceed');
  t.equal(signed.n, 0);
  t.same(await world.state(account.address), before);
});

t.test('a pinned policy hash: an answer signed for another policy is refused', async (t) => {
  const call = { to: USDC_BASE as `0x${string}`, data: transferData(randomAddress(), 1n) };
  const other = await setup({ policyHash: `0x${'11'.repeat(32)}` });
  const err = await other.wallet.sendTransaction(call).catch((e: unknown) => e);
  t.ok(findCause(err, PreflightAttestationError), String(err));
  t.equal(other.signed.n, 0);
  const none = await setup({ policyHash: `0x${'00'.repeat(32)}` });
  const hash = await none.wallet.sendTransaction(call);
  t.equal((await none.pub.waitForTransactionReceipt({ hash })).status, 'success', 'no policy, as pinned: signed');
});

t.test('a text message passes; a raw hash is refused unless allowed', async (t) => {
  const { account, signed } = await setup();
  const sig = await account.signMessage({ message: 'hello' });
  t.ok(sig.startsWith('0x'));
  const hash = `0x${'ab'.repeat(32)}` as const;
  await t.rejects(account.sign!({ hash }), PreflightRawSignError);
  await t.rejects(account.signMessage({ message: { raw: hash } }), PreflightRawSignError);
  t.equal(signed.n, 1, 'only the text message was signed');
  const allowed = await setup({ allowRawSign: true });
  t.ok(await allowed.account.sign!({ hash }));
});

t.test('writeContract, sendCalls and deployContract all go through the guard', async (t) => {
  const { account, wallet, pub, answers } = await setup();
  const bob = randomAddress();
  const before = await world.guardCalls();
  const h1 = await wallet.writeContract({
    address: USDC_BASE as `0x${string}`,
    abi: erc20Abi,
    functionName: 'transfer',
    args: [bob as `0x${string}`, 1_000_000n],
  });
  await pub.waitForTransactionReceipt({ hash: h1 });
  const { id } = await wallet.sendCalls({
    calls: [
      { to: USDC_BASE as `0x${string}`, data: transferData(bob, 2_000_000n) },
      { to: bob as `0x${string}`, value: 1000n },
    ],
    experimental_fallback: true,
  });
  const status = await wallet.waitForCallsStatus({ id });
  t.equal(
    status.status,
    'success',
    JSON.stringify(status, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
  );
  const token = compiled('TestToken');
  const h3 = await wallet.deployContract({
    abi: token.abi as never,
    bytecode: token.bytecode as `0x${string}`,
    args: ['Agent Token', 'AGT', 18],
  });
  t.equal((await pub.waitForTransactionReceipt({ hash: h3 })).status, 'success');
  t.equal(await world.chain.balanceOf(bob), 3_000_000n);
  t.equal((await world.guardCalls()) - before, 4, 'writeContract 1, sendCalls 2, deployContract 1');
  t.same(answers, ['proceed', 'proceed', 'proceed', 'proceed']);
  t.equal(await pub.getTransactionCount({ address: account.address }), 4);
});

t.test('typed data that is harmless is signed, and verifies with viem', async (t) => {
  const { wallet } = await setup();
  const typed = {
    domain: { name: 'Agent', version: '1', chainId: 8453 },
    types: { Note: [{ name: 'text', type: 'string' }] },
    primaryType: 'Note' as const,
    message: { text: 'hello' },
  };
  // An unrecognised message is a warn (we cannot say what it allows): strict mode waits.
  await t.rejects(wallet.signTypedData(typed), PreflightWaitError);
  const lax = await setup({ request: { strict_mode: false } });
  const sig = await lax.wallet.signTypedData(typed);
  t.ok(await verifyTypedData({ ...typed, address: lax.account.address, signature: sig }));
});

t.test('executeThroughAccount: the PreflightAccount executes with the attestation', async (t) => {
  const owner = new Wallet(await world.fundedKey(0n), world.chain.provider);
  const preflightAccount = await world.deployAccount(owner);
  const accountAddress = (await preflightAccount.getAddress()) as `0x${string}`;
  await (await world.chain.usdc.mint(accountAddress, 50_000_000n)).wait();
  const ownerWallet = createWalletClient({
    account: privateKeyToAccount(owner.privateKey as `0x${string}`),
    chain,
    transport: http(world.chain.rpcUrl),
  });
  const pub = createPublicClient({ chain, transport: http(world.chain.rpcUrl) });
  const bob = randomAddress();
  const { hash, answer } = await executeThroughAccount(
    { account: accountAddress, to: USDC_BASE as `0x${string}`, data: transferData(bob, 7_000_000n) },
    { baseUrl: world.url, apiKey: world.apiKey, attester: world.attester, wallet: ownerWallet },
  );
  t.equal(answer.verdict, 'proceed');
  t.equal((await pub.waitForTransactionReceipt({ hash })).status, 'success');
  t.equal(await world.chain.balanceOf(bob), 7_000_000n, 'the account paid bob');
  const id = answer.attestation?.typed_data.message.id as `0x${string}`;
  const used = await pub.readContract({
    address: accountAddress,
    abi: parseAbi(['function used(bytes32) view returns (bool)']),
    functionName: 'used',
    args: [id],
  });
  t.equal(used, true, 'the verdict is spent on chain');

  const drain = await executeThroughAccount(
    {
      account: accountAddress,
      to: USDC_BASE as `0x${string}`,
      data: encodeFunctionData({
        abi: erc20Abi,
        functionName: 'approve',
        args: [world.chain.drain as `0x${string}`, MAX_UINT256],
      }),
    },
    { baseUrl: world.url, apiKey: world.apiKey, wallet: ownerWallet },
  ).catch((e: unknown) => e);
  t.ok(drain instanceof PreflightBlockedError, 'a drain through the account is blocked before anything is sent');
});

/** viem wraps errors thrown inside an account: the guard's error is somewhere in the cause chain. */
function findCause<E>(err: unknown, type: new (...a: never[]) => E): E | undefined {
  for (let e = err; e; e = (e as { cause?: unknown }).cause) if (e instanceof type) return e as E;
  return undefined;
}
