/**
 * The project's PreflightAccount (contracts/build/PreflightAccount.json) on a real local Base
 * (anvil, chain id 8453, Circle's USDC at its Base address), fed with answers of the real service:
 * a USDC transfer goes through with a fresh `proceed` for exactly that call, and every refusal of
 * docs/attestations.md §4 reverts with its named error, moving nothing. This account is pinned to
 * no policy (zero); the pinned account is test/attest/policy-pin.test.ts.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { Contract, ContractFactory, Interface, Wallet, ZeroHash, type InterfaceAbi, type Log } from 'ethers';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { post, startTestApp, type TestApp } from '../helpers/app.js';
import { USDC_BASE } from '../../src/billing/x402/constants.js';

const ARTIFACT = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../../contracts/build/PreflightAccount.json', import.meta.url)), 'utf8'),
) as { abi: InterfaceAbi; bytecode: string };
const ERC20 = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);

let chain: UsdcChain;
let cg: CoinGeckoEmulator;
let app: TestApp;
let owner: Wallet;
let account: Contract;
let accountAddress: string;
let signer: string;
const bob = Wallet.createRandom().address;

t.before(async () => {
  [chain, cg] = await Promise.all([startUsdcChain(), startCoinGecko()]);
  cg.setPrice('usd-coin', 'usd', 0.9999);
  // The guard simulates each call on the chain and prices what leaves the account.
  cg.setTokenPrice('base', USDC_BASE, 1);
  app = await startTestApp({
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    REQUEST_DEADLINE_MS: '3000',
    HEAD_STALE_SECONDS: '86400',
  });
  signer = ((await (await fetch(`${app.url}/v1/capabilities`)).json()) as any).attestation.signer;
  // The owner holds USDC too, so a transfer sent from it simulates fine (see 'another sender').
  owner = await chain.wallet(1_000_000_000n, 10n ** 20n);
  const deployed = await new ContractFactory(ARTIFACT.abi, ARTIFACT.bytecode, owner).deploy(
    owner.address,
    signer,
    ZeroHash,
  );
  await deployed.waitForDeployment();
  accountAddress = await deployed.getAddress();
  account = new Contract(accountAddress, ARTIFACT.abi, owner);
  await (await chain.usdc.mint(accountAddress, 1_000_000_000n)).wait();
  await chain.provider.send('anvil_setBalance', [accountAddress, '0xde0b6b3a7640000']);
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([chain?.close(), cg?.close()]);
});

interface Call {
  to: string;
  value: bigint;
  data: string;
}
const transfer = (amount: bigint, to = bob): Call => ({
  to: USDC_BASE,
  value: 0n,
  data: ERC20.encodeFunctionData('transfer', [to, amount]),
});

/** Asks the service about `call` sent from the account; the answer and its attestation as the contract takes it. */
async function ask(call: Call, over: Record<string, unknown> = {}) {
  const res = await post(`${app.url}/v1/guard`, {
    action: 'transfer',
    chain: 'base',
    amount_usd: 10,
    transaction: { from: accountAddress, to: call.to, value: call.value.toString(), data: call.data },
    ...over,
  });
  if (res.status !== 200) throw new Error(`guard answered ${res.status}: ${JSON.stringify(res.body)}`);
  const a = res.body.attestation;
  const m = a.typed_data.message;
  const verdict = [
    m.id,
    m.verdict,
    m.risk,
    m.confidenceBps,
    m.requestHash,
    m.actionHash,
    m.policyHash,
    m.issuedAt,
    m.expiresAt,
  ];
  return { body: res.body, verdict, signature: a.signature as string, typed: a.typed_data };
}

/** The named custom error `execute` reverts with (from a simulation), and a mined attempt that moves nothing. */
async function refusal(t: Test, call: Call, verdict: unknown[], signature: string, from: Wallet = owner) {
  const c = account.connect(from) as Contract;
  let name = '';
  try {
    await c.execute.staticCall(call.to, call.value, call.data, verdict, signature);
  } catch (err) {
    name = (err as { revert?: { name?: string } }).revert?.name ?? `unnamed: ${(err as Error).message}`;
  }
  const before = await chain.balanceOf(accountAddress);
  const tx = await c.execute(call.to, call.value, call.data, verdict, signature, { gasLimit: 300_000 });
  const receipt = await chain.provider.waitForTransaction(tx.hash);
  t.equal(receipt?.status, 0, 'the mined attempt reverts');
  t.equal(await chain.balanceOf(accountAddress), before, 'no USDC moved');
  return name;
}

t.test('a fresh proceed for exactly this transfer executes it, once', async (t) => {
  const call = transfer(10_000_000n);
  const { body, verdict, signature } = await ask(call);
  t.equal(body.verdict, 'proceed', `the service proceeds (${JSON.stringify(body.checks)})`);
  const before = await chain.balanceOf(bob);
  const receipt = await (await account.execute(call.to, call.value, call.data, verdict, signature)).wait();
  t.equal(receipt?.status, 1);
  t.equal(await chain.balanceOf(bob), before + 10_000_000n, 'bob received exactly 10 USDC');
  const event = receipt!.logs
    .map((l: Log) => {
      try {
        return account.interface.parseLog(l);
      } catch {
        return null;
      }
    })
    .find((e: { name: string } | null) => e?.name === 'Executed') as { args: { id: string } } | undefined;
  t.equal(event?.args.id, verdict[0], 'the execution is recorded with the verdict id');
  t.equal(await account.used(verdict[0]), true);

  t.equal(await refusal(t, call, verdict, signature), 'VerdictAlreadyUsed', 'the same verdict again: replay refused');
});

t.test('a block verdict is refused', async (t) => {
  const call = transfer(1n);
  // An unlimited approval to an unknown spender blocks.
  const { body, verdict, signature } = await ask(call, {
    action: 'approve',
    approval_amount: (2n ** 256n - 1n).toString(),
    spender: Wallet.createRandom().address,
  });
  t.equal(body.verdict, 'block');
  t.equal(await refusal(t, call, verdict, signature), 'NotProceed');
});

t.test('a wait verdict is refused', async (t) => {
  const call = transfer(1n);
  // A stablecoin 1 % off its peg: a warning, which strict mode waits on.
  cg.setPrice('sliding-usd', 'usd', 0.99);
  const { body, verdict, signature } = await ask(call, { stablecoin_asset_id: 'sliding-usd' });
  t.equal(body.verdict, 'wait', JSON.stringify(body.checks));
  t.equal(await refusal(t, call, verdict, signature), 'NotProceed');
});

t.test('a proceed for another call is refused: other calldata, value or target', async (t) => {
  const call = transfer(5n);
  const { body, verdict, signature } = await ask(call);
  t.equal(body.verdict, 'proceed');
  t.equal(await refusal(t, transfer(6n), verdict, signature), 'ActionMismatch', 'another amount');
  t.equal(await refusal(t, transfer(5n, owner.address), verdict, signature), 'ActionMismatch', 'another recipient');
  t.equal(await refusal(t, { ...call, value: 1n }, verdict, signature), 'ActionMismatch', 'with value');
  t.equal(
    await refusal(t, { ...call, to: Wallet.createRandom().address }, verdict, signature),
    'ActionMismatch',
    'another target',
  );
  const forOwner = await ask(call, { transaction: { from: owner.address, to: call.to, data: call.data } });
  t.equal(forOwner.body.verdict, 'proceed', 'a proceed, but for the owner key as sender');
  t.equal(
    await refusal(t, call, forOwner.verdict, forOwner.signature),
    'ActionMismatch',
    'a proceed for the same call sent from another sender',
  );
});

t.test('a verdict signed by anyone but the attester is refused', async (t) => {
  const call = transfer(7n);
  const { verdict, typed } = await ask(call);
  const other = privateKeyToAccount(generatePrivateKey());
  const forged = await other.signTypedData(typed);
  t.equal(await refusal(t, call, verdict, forged), 'WrongSigner');
  const real = await ask(call);
  t.equal(
    await refusal(t, call, [...real.verdict.slice(0, 3), '1', ...real.verdict.slice(4)], real.signature),
    'WrongSigner',
    'a field changed after signing',
  );
});

t.test('a malformed or malleated signature is refused as invalid', async (t) => {
  const call = transfer(3n);
  const { verdict, signature } = await ask(call);
  const sig = Buffer.from(signature.slice(2), 'hex');
  const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  // The same signature's twin (n - s, the other v): ecrecover accepts it, the account must not.
  const highS = (N - BigInt(`0x${sig.subarray(32, 64).toString('hex')}`)).toString(16).padStart(64, '0');
  const twin = `0x${sig.subarray(0, 32).toString('hex')}${highS}${(55 - sig[64]).toString(16)}`;
  t.equal(await refusal(t, call, verdict, twin), 'InvalidSignature', 'high s');
  t.equal(await refusal(t, call, verdict, signature.slice(0, -2)), 'InvalidSignature', '64 bytes');
  t.equal(await refusal(t, call, verdict, `${signature.slice(0, -2)}1d`), 'InvalidSignature', 'v = 29');
  const receipt = await (await account.execute(call.to, call.value, call.data, verdict, signature)).wait();
  t.equal(receipt?.status, 1, 'the genuine signature still executes');
});

t.test("the call's own revert is passed on unchanged", async (t) => {
  // A proceed for sending the whole balance, made stale by another attested transfer first.
  const balance = await chain.balanceOf(accountAddress);
  const all = transfer(balance);
  const first = await ask(all, { amount_usd: Number(balance) / 1e6 });
  t.equal(first.body.verdict, 'proceed', JSON.stringify(first.body.checks));
  const some = transfer(1n);
  const second = await ask(some);
  await (await account.execute(some.to, some.value, some.data, second.verdict, second.signature)).wait();
  let message = '';
  try {
    await account.execute.staticCall(all.to, all.value, all.data, first.verdict, first.signature);
  } catch (err) {
    message = (err as { reason?: string }).reason ?? '';
  }
  t.equal(message, 'ERC20: transfer amount exceeds balance', "USDC's own reason, not the account's");
  t.equal(await account.used(first.verdict[0]), false, 'a call that reverted used nothing up');
});

t.test('only the owner may execute', async (t) => {
  const call = transfer(8n);
  const { verdict, signature } = await ask(call);
  const stranger = await chain.wallet(0n, 10n ** 18n);
  t.equal(await refusal(t, call, verdict, signature, stranger), 'NotOwner');
  // The owner still can: the stranger's attempt used nothing up.
  const receipt = await (await account.execute(call.to, call.value, call.data, verdict, signature)).wait();
  t.equal(receipt?.status, 1, 'the owner executes the same verdict');
});

// Last: it moves the chain's clock past the verdicts the service issues now.
t.test('an expired verdict is refused', async (t) => {
  const call = transfer(9n);
  const { body, verdict, signature } = await ask(call);
  t.equal(body.verdict, 'proceed');
  await chain.provider.send('evm_setNextBlockTimestamp', [Number(verdict[8]) + 1]);
  await chain.provider.send('evm_mine', []);
  t.equal(await refusal(t, call, verdict, signature), 'VerdictExpired');
});
