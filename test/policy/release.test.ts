/**
 * The release pass on its own (docs/policies.md §4), against a real local Base (anvil): a
 * reservation whose acting account is an EOA (no boolean from `used(bytes32)`), one whose chain has
 * no RPC, and one whose node does not answer all stay committed; one whose PreflightAccount did not
 * use the id is released; the lease lets one holder at a time run the pass.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { ContractFactory, Wallet, type InterfaceAbi } from 'ethers';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';
import { openStore } from '../../src/store/index.js';
import type { ReservationKey, Store } from '../../src/store/types.js';
import { releaseOnce } from '../../src/policy/release.js';
import { limitWindows } from '../../src/policy/windows.js';
import { generateApiKey } from '../../src/billing/keys.js';

const ARTIFACT = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../../contracts/build/PreflightAccount.json', import.meta.url)), 'utf8'),
) as { abi: InterfaceAbi; bytecode: string };

let chain: UsdcChain;
let store: Store;
let deadUrl: string;
const dir = mkdtempSync(join(tmpdir(), 'pf-release-'));
const account = randomUUID();
const logger = { warn: () => undefined, info: () => undefined };

t.before(async () => {
  chain = await startUsdcChain();
  store = await openStore({ databaseUrl: `sqlite:${join(dir, 'r.db')}` });
  const k = generateApiKey();
  await store.createApiKey({
    id: account,
    keyHash: k.hash,
    prefix: k.prefix,
    email: 'release@example.com',
    plan: 'Basic',
    requestedPlan: null,
    company: null,
    fullName: null,
    useCase: null,
    website: null,
  });
  // A loopback port that accepts and closes every connection: a node that cannot answer.
  const dead = net.createServer((s) => s.destroy());
  await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
  deadUrl = `http://127.0.0.1:${(dead.address() as net.AddressInfo).port}`;
  t.teardown(() => new Promise<void>((r) => dead.close(() => r())));
});
t.teardown(async () => {
  await store?.close();
  await chain?.close();
  rmSync(dir, { recursive: true, force: true });
});

const limits = () => limitWindows([{ id: 'daily', window: 'day', max_usd: 1e6 }], Date.now());

async function reserve(chainName: string, actor: string, usd: number): Promise<ReservationKey> {
  const id = `0x${randomBytes(32).toString('hex')}`;
  const at = Date.now();
  const r = await store.reserve({
    id,
    accountId: account,
    policy: 'p',
    limits: limits(),
    usd,
    at,
    expiresAt: Date.now() - 1,
    chain: chainName,
    actor: actor.toLowerCase(),
  });
  if (!r.ok) throw new Error('not reserved');
  return { id, at };
}

t.test(
  'an EOA, a chain without RPC and a node that does not answer leave it committed; an unused id is released',
  async (t) => {
    const owner = await chain.wallet(0n, 10n ** 19n);
    const f = new ContractFactory(ARTIFACT.abi, ARTIFACT.bytecode, owner);
    const deployed = await f.deploy(owner.address, Wallet.createRandom().address, `0x${'00'.repeat(32)}`);
    await deployed.waitForDeployment();
    const pfAccount = await deployed.getAddress();

    await reserve('base', Wallet.createRandom().address, 10); // an EOA: eth_call answers 0x
    await reserve('optimism', pfAccount, 20); // no RPC for the chain
    await reserve('base', pfAccount, 40); // the account did not use it: released
    const rpcUrls = { base: chain.rpcUrl };
    const settled = await releaseOnce(
      { config: { rpcUrls, policyReleaseIntervalMs: 1000 }, store, logger },
      'holder-a',
    );
    t.equal(settled, 3);
    const deadNode = await reserve('base', pfAccount, 80);
    t.equal(
      await releaseOnce(
        { config: { rpcUrls: { base: deadUrl }, policyReleaseIntervalMs: 1000 }, store, logger },
        'holder-a',
      ),
      1,
    );
    const [u] = await store.limitUsage(account, 'p', limits());
    t.same(
      [u.reservedUsd, u.committedUsd, u.count],
      [0, 110, 3],
      'the EOA, no-RPC and dead-node ones committed; 40 released',
    );
    t.equal(await store.settleReservation(deadNode, 'released'), false, 'settled once');

    t.equal(
      await releaseOnce({ config: { rpcUrls, policyReleaseIntervalMs: 1000 }, store, logger }, 'holder-b'),
      0,
      'another holder waits while the lease is held',
    );
  },
);
