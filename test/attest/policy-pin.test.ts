/**
 * The policy hash signed into a verdict and the PreflightAccount pinned to it (docs/attestations.md
 * §1 and §4), on a real local Base (anvil, chain id 8453, Circle's USDC at its Base address). The
 * service's own answers (under no policy: a zero policy hash) and the same answers signed by the
 * project's attester for a policy hash H, through `attach`, with the service's key. Reverts are
 * decoded with viem against an ABI written here from the docs, not with the compiled artifact's;
 * every attestation is recovered by viem and by ethers.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { Contract, ContractFactory, Interface, Wallet, verifyTypedData as ethersVerifyTypedData } from 'ethers';
import {
  decodeErrorResult,
  decodeEventLog,
  hashTypedData,
  keccak256,
  parseAbi,
  recoverTypedDataAddress,
  toBytes,
  verifyTypedData,
  type Hex,
} from 'viem';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { post, startTestApp, type TestApp } from '../helpers/app.js';
import { USDC_BASE } from '../../src/billing/x402/constants.js';
import { Attester, attach, type Attestation } from '../../src/attest/index.js';
import type { ApiRequest, ApiResponse } from '../../src/http/api.js';

const ARTIFACT = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../../contracts/build/PreflightAccount.json', import.meta.url)), 'utf8'),
) as { abi: unknown[]; bytecode: string };

/** The account's interface as docs/attestations.md §4 describes it. */
const VERDICT_TUPLE =
  '(bytes32 id, uint8 verdict, uint8 risk, uint16 confidenceBps, bytes32 requestHash, bytes32 actionHash, bytes32 policyHash, uint64 issuedAt, uint64 expiresAt)';
const ABI = [
  `function execute(address to, uint256 value, bytes data, ${VERDICT_TUPLE} v, bytes signature) returns (bytes)`,
  `function verdictDigest(${VERDICT_TUPLE} v) view returns (bytes32)`,
  'function setPolicy(bytes32 policyHash)',
  'function policyHash() view returns (bytes32)',
  'function used(bytes32 id) view returns (bool)',
  'event PolicyPinned(bytes32 policyHash)',
  'event Executed(bytes32 indexed id, address indexed to, uint256 value, bytes32 actionHash)',
  'error NotOwner(address caller)',
  'error WrongSigner(address recovered)',
  'error ActionMismatch(bytes32 expected, bytes32 signed)',
  'error PolicyMismatch(bytes32 expected, bytes32 signed)',
  'error VerdictAlreadyUsed(bytes32 id)',
] as const;
const viemAbi = parseAbi(ABI);
const ethersAbi = new Interface(ABI as unknown as string[]);
const ERC20 = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);

const ZERO: Hex = `0x${'00'.repeat(32)}`;
// What a policy version's hash looks like: keccak256 of its canonical JSON.
const H = keccak256(
  toBytes('{"default":"block","rules":[{"effect":"allow","id":"payees","match":{"recipients":["$payees"]}}]}'),
);
const H2 = keccak256(toBytes('{"default":"allow"}'));
const ATTESTATION_KEY = `0x${'5a'.repeat(32)}`;

let chain: UsdcChain;
let cg: CoinGeckoEmulator;
let app: TestApp;
let owner: Wallet;
let signer: string;
const attester = new Attester(ATTESTATION_KEY);
const bob = Wallet.createRandom().address;

t.before(async () => {
  [chain, cg] = await Promise.all([startUsdcChain(), startCoinGecko()]);
  cg.setPrice('usd-coin', 'usd', 0.9999);
  cg.setTokenPrice('base', USDC_BASE, 1);
  app = await startTestApp({
    ATTESTATION_KEY,
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${chain.rpcUrl}`,
    REQUEST_DEADLINE_MS: '3000',
    HEAD_STALE_SECONDS: '86400',
  });
  signer = ((await (await fetch(`${app.url}/v1/capabilities`)).json()) as any).attestation.signer;
  owner = await chain.wallet(0n, 10n ** 20n);
});
t.teardown(async () => {
  await app?.close();
  await Promise.all([chain?.close(), cg?.close()]);
});

/** A PreflightAccount from the committed artifact, pinned to `pin`, holding 1,000 USDC. */
async function deploy(pin: Hex) {
  const factory = new ContractFactory(ARTIFACT.abi as never, ARTIFACT.bytecode, owner);
  const deployed = await factory.deploy(owner.address, signer, pin);
  const receipt = await deployed.deploymentTransaction()!.wait();
  const address = await deployed.getAddress();
  await (await chain.usdc.mint(address, 1_000_000_000n)).wait();
  return { address, contract: new Contract(address, ethersAbi, owner), logs: receipt!.logs };
}

interface Call {
  to: string;
  value: bigint;
  data: string;
}
const transfer = (amount: bigint): Call => ({
  to: USDC_BASE,
  value: 0n,
  data: ERC20.encodeFunctionData('transfer', [bob, amount]),
});

interface Signed {
  attestation: Attestation;
  /** The message as the contract takes it, in the order of the Verdict type. */
  v: unknown[];
}

const asTuple = (a: Attestation): unknown[] => {
  const m = a.typed_data.message;
  return [m.id, m.verdict, m.risk, m.confidenceBps, m.requestHash, m.actionHash, m.policyHash, m.issuedAt, m.expiresAt];
};

/** viem (both ways) and ethers recover the service's signer from `a`, and it signs `policyHash`. */
async function recovered(t: Test, a: Attestation, policyHash: Hex): Promise<void> {
  const td = a.typed_data as any;
  t.equal(td.domain.version, '2', 'domain version 2');
  t.equal(td.message.policyHash, policyHash, 'the signed policy hash');
  t.ok(await verifyTypedData({ address: signer as Hex, ...td, signature: a.signature }), 'viem verifyTypedData');
  t.equal(await recoverTypedDataAddress({ ...td, signature: a.signature as Hex }), signer, 'viem recovers the signer');
  t.equal(ethersVerifyTypedData(td.domain, td.types, td.message, a.signature), signer, 'ethers recovers the signer');
}

/**
 * The service's answer about `call` from `account`, as a key with no policy gets it (policy hash
 * zero), or, with `policyHash`, the same answer signed through `attach` for that policy.
 */
async function ask(t: Test, account: string, call: Call, policyHash?: Hex, answerId?: string): Promise<Signed> {
  const transaction = { from: account, to: call.to, value: call.value.toString(), data: call.data };
  const amount = ERC20.decodeFunctionData('transfer', call.data)[1] as bigint;
  const request = { action: 'transfer', chain: 'base', amount_usd: Number(amount) / 1e6, transaction };
  const res = await post(`${app.url}/v1/guard`, request);
  if (res.status !== 200) throw new Error(`guard answered ${res.status}: ${JSON.stringify(res.body)}`);
  t.equal(res.body.verdict, 'proceed', `the service proceeds (${JSON.stringify(res.body.failure_modes)})`);
  let attestation = res.body.attestation as Attestation;
  if (policyHash !== undefined || answerId !== undefined) {
    const { verdict, risk, confidence, expires_in } = res.body;
    const req = { rawBody: Buffer.from(JSON.stringify(request)) } as ApiRequest;
    const out = { locals: { answerId: answerId ?? randomUUID() } } as unknown as ApiResponse;
    const answer = { verdict, risk, confidence, expires_in };
    attestation = (await attach(attester, req, out, answer, 8453, transaction, policyHash)).attestation!;
  }
  await recovered(t, attestation, policyHash ?? ZERO);
  return { attestation, v: asTuple(attestation) };
}

/**
 * The custom error a call of `data` from `from` to `to` reverts with (the node's eth_call, its
 * revert data decoded by viem), then the same call mined: it must revert too.
 */
async function reverts(t: Test, from: Wallet, to: string, data: string) {
  const res = await fetch(chain.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_call',
      params: [{ from: from.address, to, data }, 'latest'],
    }),
  });
  const reply = (await res.json()) as { error?: { data?: Hex } };
  t.ok(reply.error?.data, 'the call reverts with data');
  const tx = await from.sendTransaction({ to, data, gasLimit: 400_000 });
  t.equal((await tx.wait().catch((e) => e.receipt))?.status, 0, 'the mined attempt reverts');
  return decodeErrorResult({ abi: viemAbi, data: reply.error?.data ?? '0x' });
}

/** The error `execute` of `call` with `s` reverts with; nothing moves. */
async function refused(t: Test, account: { address: string }, call: Call, s: Signed) {
  const data = ethersAbi.encodeFunctionData('execute', [call.to, call.value, call.data, s.v, s.attestation.signature]);
  const before = await chain.balanceOf(account.address);
  const err = await reverts(t, owner, account.address, data);
  t.equal(await chain.balanceOf(account.address), before, 'no USDC moved');
  return err;
}

async function executes(t: Test, account: { contract: Contract }, call: Call, s: Signed): Promise<void> {
  const before = await chain.balanceOf(bob);
  const receipt = await (
    await account.contract.execute(call.to, call.value, call.data, s.v, s.attestation.signature)
  ).wait();
  t.equal(receipt?.status, 1, 'executed');
  t.equal(await chain.balanceOf(bob), before + BigInt(ERC20.decodeFunctionData('transfer', call.data)[1]), 'bob paid');
  t.equal(await account.contract.used(s.v[0]), true, 'the verdict is used');
}

/** The PolicyPinned events of `logs`, decoded by viem from the ABI written here. */
function pinned(logs: readonly { topics: readonly string[]; data: string }[]): Hex[] {
  const out: Hex[] = [];
  for (const l of logs) {
    try {
      const e = decodeEventLog({ abi: viemAbi, topics: l.topics as [Hex], data: l.data as Hex });
      if (e.eventName === 'PolicyPinned' && e.args) out.push(e.args.policyHash);
    } catch {
      // another event
    }
  }
  return out;
}

t.test('an account pinned to H executes a proceed signed for H and refuses one signed for no policy', async (t) => {
  const account = await deploy(H);
  t.same(pinned(account.logs), [H], 'the constructor pins H with PolicyPinned(H)');
  t.equal(await account.contract.policyHash(), H, 'policyHash() is H');

  const call = transfer(10_000_000n);
  // The bypass a misled agent would try: the same transfer asked with a fresh key under no policy.
  const bypass = await ask(t, account.address, call);
  const err = await refused(t, account, call, bypass);
  t.equal(err.errorName, 'PolicyMismatch', 'the bypass: PolicyMismatch');
  t.same(err.args, [H, ZERO], 'PolicyMismatch(H, 0)');
  t.equal(await account.contract.used(bypass.v[0]), false, 'the refused verdict is not used up');

  const other = await ask(t, account.address, call, H2);
  const err2 = await refused(t, account, call, other);
  t.same([err2.errorName, err2.args], ['PolicyMismatch', [H, H2]], 'a verdict signed for another policy');

  const good = await ask(t, account.address, call, H);
  await executes(t, account, call, good);

  // The order of the refusals: ActionMismatch before PolicyMismatch before VerdictAlreadyUsed.
  const elsewhere = await ask(t, account.address, transfer(1n));
  t.equal((await refused(t, account, call, elsewhere)).errorName, 'ActionMismatch', 'another call: ActionMismatch');
  const answerId = randomUUID();
  const first = await ask(t, account.address, transfer(2n), H, answerId);
  await executes(t, account, transfer(2n), first);
  const sameId = await ask(t, account.address, transfer(2n), ZERO, answerId);
  t.equal(sameId.v[0], first.v[0], 'the same verdict id, signed for no policy');
  t.equal((await refused(t, account, transfer(2n), sameId)).errorName, 'PolicyMismatch', 'before VerdictAlreadyUsed');
  t.equal((await refused(t, account, transfer(2n), first)).errorName, 'VerdictAlreadyUsed', 'the used one: a replay');
});

t.test('the contract hashes a v2 verdict as viem does', async (t) => {
  const account = await deploy(H);
  const s = await ask(t, account.address, transfer(3n), H);
  const td = s.attestation.typed_data as any;
  t.equal(await account.contract.verdictDigest(s.v), hashTypedData(td), 'verdictDigest(v) = viem hashTypedData');
});

t.test('only the owner sets the policy; setPolicy emits PolicyPinned and applies at once', async (t) => {
  const account = await deploy(H);
  const stranger = await chain.wallet(0n, 10n ** 18n);
  const err = await reverts(t, stranger, account.address, ethersAbi.encodeFunctionData('setPolicy', [ZERO]));
  t.same([err.errorName, err.args], ['NotOwner', [stranger.address]], 'NotOwner(stranger)');
  t.equal(await account.contract.policyHash(), H, 'still pinned to H');

  const receipt = await (await account.contract.setPolicy(H2)).wait();
  t.same(pinned(receipt!.logs), [H2], 'the owner: PolicyPinned(H2)');
  t.equal(await account.contract.policyHash(), H2);
  const call = transfer(4n);
  const underH = await ask(t, account.address, call, H);
  t.same(
    (await refused(t, account, call, underH)).args,
    [H2, H],
    'a verdict for the old policy: PolicyMismatch(H2, H)',
  );
  await executes(t, account, call, await ask(t, account.address, call, H2));

  // Loosening to "any policy" takes the owner's transaction too.
  const unpin = await (await account.contract.setPolicy(ZERO)).wait();
  t.same(pinned(unpin!.logs), [ZERO], 'PolicyPinned(0)');
  await executes(t, account, call, await ask(t, account.address, call));
});

t.test('an account pinned to zero accepts a verdict under any policy or none', async (t) => {
  const account = await deploy(ZERO);
  t.same(pinned(account.logs), [ZERO], 'PolicyPinned(0) at construction');
  const call = transfer(5n);
  await executes(t, account, call, await ask(t, account.address, call));
  await executes(t, account, call, await ask(t, account.address, call, H));
  await executes(t, account, call, await ask(t, account.address, call, `0x${randomBytes(32).toString('hex')}`));
});
