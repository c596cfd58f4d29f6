/**
 * GuardedSigner on a local Base (anvil, chain id 8453, Circle's USDC) against the real service
 * started as a user starts it: a proceed mines; an unlimited approval, a Permit2 permit to a
 * drainer and a delegation to a sweeper each throw PreflightBlockedError with the reasons and
 * leave the nonce and balances as they were; a wait is retried and then given up; the service
 * down or an answer from another signer signs nothing; Contract calls, a type-4 transaction and
 * executeThroughAccount go through the guard (counted at the service).
 */
import { Contract, type JsonRpcProvider, MaxUint256, Wallet } from 'ethers';
import t from 'tap';
import { recoverTransactionAddress, verifyTypedData } from 'viem';
import {
  INTENDED,
  POISON,
  permit2ToDrainer,
  randomAddress,
  SANCTIONED,
  startWalletWorld,
  USDC_BASE,
  type WalletWorld,
} from '../../../test/helpers/wallets.js';
import {
  executeThroughAccount,
  GuardedSigner,
  PreflightAttestationError,
  PreflightBlockedError,
  PreflightWaitError,
  type WalletGuardOptions,
} from '../src/index.js';

const ERC20 = [
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
];

let world: WalletWorld;
let provider: JsonRpcProvider;
t.before(async () => {
  world = await startWalletWorld();
  provider = world.chain.provider;
});
t.teardown(() => world?.close());

/** A Wallet that counts what it is asked to sign. */
class CountingWallet extends Wallet {
  signed = 0;
  override signTransaction(tx: Parameters<Wallet['signTransaction']>[0]) {
    this.signed++;
    return super.signTransaction(tx);
  }
  override signTypedData(...a: Parameters<Wallet['signTypedData']>) {
    this.signed++;
    return super.signTypedData(...a);
  }
  override authorize(a: Parameters<Wallet['authorize']>[0]) {
    this.signed++;
    return super.authorize(a);
  }
}

async function setup(options: Partial<WalletGuardOptions> = {}) {
  const inner = new CountingWallet(await world.fundedKey(), provider);
  const answers: string[] = [];
  const signer = new GuardedSigner(inner, {
    baseUrl: world.url,
    apiKey: world.apiKey,
    attester: world.attester,
    onAnswer: (a) => void answers.push(a.verdict),
    ...options,
  });
  const usdc = new Contract(USDC_BASE, ERC20, signer);
  return { inner, signer, usdc, answers };
}

t.test('a proceed: a USDC transfer through a Contract is signed, sent and mined', async (t) => {
  const { signer, usdc, answers, inner } = await setup();
  const bob = randomAddress();
  const before = await world.guardCalls();
  const tx = await usdc.transfer(bob, 5_000_000n);
  const receipt = await tx.wait();
  t.equal(receipt?.status, 1);
  t.equal(await world.chain.balanceOf(bob), 5_000_000n);
  t.same(answers, ['proceed']);
  t.equal((await world.guardCalls()) - before, 1, 'one guard call at the service');
  t.equal(inner.signed, 1);
  const raw = (await provider.send('eth_getRawTransactionByHash', [tx.hash])) as `0x${string}`;
  t.equal(
    (await recoverTransactionAddress({ serializedTransaction: raw as never })).toLowerCase(),
    (await signer.getAddress()).toLowerCase(),
    'signed by the inner key (viem recovers it)',
  );
});

t.test('an unlimited approval to a drainer throws, nothing signed, nonce and balances unchanged', async (t) => {
  const { signer, usdc, inner } = await setup();
  const address = await signer.getAddress();
  const before = await world.state(address);
  const err = await usdc.approve(world.chain.drain, MaxUint256).catch((e: unknown) => e);
  t.ok(err instanceof PreflightBlockedError, String(err));
  const blocked = err as PreflightBlockedError;
  t.equal(blocked.verdict, 'block');
  t.ok(blocked.reasons.includes('transaction_simulation:unlimited_approval'), String(blocked.reasons));
  t.ok(blocked.attestation?.signature);
  t.equal(inner.signed, 0);
  t.same(await world.state(address), before);
});

t.test('a Permit2 permit to a drainer throws before the signature', async (t) => {
  const { signer, inner } = await setup();
  const address = await signer.getAddress();
  const before = await world.state(address);
  const p = permit2ToDrainer(world.chain.drain);
  const err = await signer.signTypedData(p.domain, p.types, p.message).catch((e: unknown) => e);
  t.ok(err instanceof PreflightBlockedError, String(err));
  t.ok((err as PreflightBlockedError).reasons.includes('signature_scan:unlimited_permit'));
  t.equal(inner.signed, 0);
  t.same(await world.state(address), before);
});

t.test('a delegation to a sweeper throws before the authorization is signed', async (t) => {
  const { signer, inner } = await setup();
  const address = await signer.getAddress();
  const before = await world.state(address);
  const err = await signer.authorize({ address: world.sweeper }).catch((e: unknown) => e);
  t.ok(err instanceof PreflightBlockedError, String(err));
  t.ok((err as PreflightBlockedError).reasons.includes('delegation_scan:delegate_sweeps_funds'));
  t.equal(inner.signed, 0);
  t.same(await world.state(address), before);
  t.equal(await provider.getCode(address), '0x');
});

t.test(
  'a type-4 transaction delegating to a sweeper throws, though its authorization was signed elsewhere',
  async (t) => {
    const { signer, inner } = await setup();
    const address = await signer.getAddress();
    // The authorization comes from the bare key (not through the guard); the transaction carries it.
    const auth = await (inner as Wallet).authorize({ address: world.sweeper, nonce: (await inner.getNonce()) + 1 });
    inner.signed = 0;
    const before = await world.state(address);
    const err = await signer
      .sendTransaction({ type: 4, to: address, value: 0n, authorizationList: [auth] })
      .catch((e: unknown) => e);
    t.ok(err instanceof PreflightBlockedError, String(err));
    t.ok(
      (err as PreflightBlockedError).reasons.includes('delegation_scan:delegate_sweeps_funds'),
      String((err as PreflightBlockedError).reasons),
    );
    t.equal(inner.signed, 0);
    t.same(await world.state(address), before);
  },
);

t.test('a transfer to a sanctioned address, or to a lookalike of a known one, throws', async (t) => {
  const { signer, usdc, inner } = await setup({ request: { known_safe_addresses: [INTENDED] } });
  const address = await signer.getAddress();
  const before = await world.state(address);
  for (const [to, reason] of [
    [SANCTIONED, 'counterparty_screen:sanctioned_address'],
    [POISON, 'counterparty_screen:address_lookalike'],
  ] as const) {
    const err = await usdc.transfer(to, 1_000_000n).catch((e: unknown) => e);
    t.ok(err instanceof PreflightBlockedError, String(err));
    t.ok((err as PreflightBlockedError).reasons.includes(reason), String((err as PreflightBlockedError).reasons));
  }
  t.equal(inner.signed, 0);
  t.same(await world.state(address), before);
});

t.test(
  'wait: the retry proceeds once the service can answer; thrown at once by default; given up after maxWaitMs',
  async (t) => {
    // The order keeps the price provider's circuit closed (it opens after 5 failures in a row).
    t.teardown(() => void world.cg.faultOn('/simple/price', null));
    const bob = randomAddress();

    world.cg.faultOn('/simple/price', { status: 500, times: 1 });
    world.cg.setPrice('usd-coin-wait-c', 'usd', 1);
    const recover = await setup({
      onWait: 'retry',
      maxWaitMs: 5_000,
      request: { stablecoin_asset_id: 'usd-coin-wait-c' },
    });
    t.equal((await (await recover.usdc.transfer(bob, 1n)).wait())?.status, 1);
    t.same(recover.answers, ['wait', 'proceed']);

    world.cg.faultOn('/simple/price', { status: 500 });
    const once = await setup({ request: { stablecoin_asset_id: 'usd-coin-wait-a' } });
    let before = await world.guardCalls();
    let err = await once.usdc.transfer(bob, 1n).catch((e: unknown) => e);
    t.ok(err instanceof PreflightWaitError, String(err));
    t.equal((err as PreflightWaitError).retryAfterS, 2);
    t.equal((await world.guardCalls()) - before, 1, 'asked once');

    const retry = await setup({
      onWait: 'retry',
      maxWaitMs: 5_000,
      request: { stablecoin_asset_id: 'usd-coin-wait-b' },
    });
    const address = await retry.signer.getAddress();
    const state = await world.state(address);
    before = await world.guardCalls();
    err = await retry.usdc.transfer(bob, 1n).catch((e: unknown) => e);
    t.ok(err instanceof PreflightWaitError, String(err));
    t.equal((await world.guardCalls()) - before, 3, 'asked at 0, 2 and 4 s');
    t.same(retry.answers, ['wait', 'wait', 'wait']);
    t.equal(retry.inner.signed, 0);
    t.same(await world.state(address), state);
  },
);

t.test('the service down: it throws and signs nothing', async (t) => {
  const { signer, usdc, inner } = await setup({ baseUrl: 'http://127.0.0.1:1' });
  const address = await signer.getAddress();
  const before = await world.state(address);
  const err = await usdc.transfer(randomAddress(), 1n).catch((e: unknown) => e);
  t.ok(err instanceof Error, String(err));
  t.notOk(err instanceof PreflightBlockedError);
  t.equal(inner.signed, 0);
  t.same(await world.state(address), before);
});

t.test('an answer signed by another attester is refused', async (t) => {
  const { signer, usdc, inner } = await setup({ attester: randomAddress() });
  const address = await signer.getAddress();
  const before = await world.state(address);
  const err = await usdc.transfer(randomAddress(), 1n).catch((e: unknown) => e);
  t.ok(err instanceof PreflightAttestationError, String(err));
  t.equal((err as PreflightAttestationError).verdict, 'proceed');
  t.equal(inner.signed, 0);
  t.same(await world.state(address), before);
});

t.test('a message passes; harmless typed data is signed and verifies with viem', async (t) => {
  const { signer } = await setup({ request: { strict_mode: false } });
  t.ok(await signer.signMessage('hello'));
  const domain = { name: 'Agent', version: '1', chainId: 8453 };
  const types = { Note: [{ name: 'text', type: 'string' }] };
  const sig = await signer.signTypedData(domain, types, { text: 'hello' });
  t.ok(
    await verifyTypedData({
      domain,
      types,
      primaryType: 'Note',
      message: { text: 'hello' },
      address: (await signer.getAddress()) as `0x${string}`,
      signature: sig as `0x${string}`,
    }),
  );
});

t.test('connect keeps the guard', async (t) => {
  const { signer } = await setup();
  const again = signer.connect(provider);
  t.ok(again instanceof GuardedSigner);
  t.equal(again.guard, signer.guard);
});

t.test('executeThroughAccount: the PreflightAccount executes with the attestation', async (t) => {
  const owner = new Wallet(await world.fundedKey(0n), provider);
  const account = await world.deployAccount(owner);
  const accountAddress = await account.getAddress();
  await (await world.chain.usdc.mint(accountAddress, 50_000_000n)).wait();
  const bob = randomAddress();
  const data = new Contract(USDC_BASE, ERC20).interface.encodeFunctionData('transfer', [bob, 7_000_000n]);
  const { tx, answer } = await executeThroughAccount(
    { account: accountAddress, to: USDC_BASE, data },
    { baseUrl: world.url, apiKey: world.apiKey, attester: world.attester, owner },
  );
  t.equal(answer.verdict, 'proceed');
  t.equal((await tx.wait())?.status, 1);
  t.equal(await world.chain.balanceOf(bob), 7_000_000n);
  t.equal(await account.used(answer.attestation?.typed_data.message.id), true);
});
