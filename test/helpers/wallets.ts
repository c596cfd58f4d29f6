/**
 * The world the wallet guards are tested in (docs/wallets.md §5): a local Base (anvil, chain id
 * 8453, Circle's USDC, the test swaps and Permit2 of ./scan-chain.ts, a Sweeper delegate and a
 * Multicall3 at its address), the price provider's emulator, and the real service started as a
 * user starts it (./spawn.ts) with a free API key. `guardCalls()` reads how many guard requests
 * the service has answered from its own /metrics, so a test can count what went through a guard.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Contract, ContractFactory, Wallet, ZeroHash } from 'ethers';
import { compiled } from '../../contracts/compile.js';
import { USDC_BASE } from '../../src/billing/x402/constants.js';
import { type CoinGeckoEmulator, startCoinGecko } from '../emulators/coingecko.js';
import { type ScanChain, startScanChain } from './scan-chain.js';
import { type ServiceProcess, spawnService } from './spawn.js';

export const MULTICALL3 = '0xcA11bde05977b3631167028862bE2a173976CA11';
/** Where the sweeper sends what it takes. */
export const COLLECTOR = '0x000000000000000000000000000000000000c011';
export const MAX_UINT256 = 2n ** 256n - 1n;
export const MAX_UINT160 = 2n ** 160n - 1n;

export interface WalletWorld {
  chain: ScanChain;
  cg: CoinGeckoEmulator;
  service: ServiceProcess;
  /** The service's URL. */
  url: string;
  apiKey: string;
  /** The service's published signer (`/v1/capabilities`). */
  attester: string;
  /** A deployed EIP-7702 sweeper that forwards native coin and USDC to COLLECTOR. */
  sweeper: string;
  /** A fresh funded key: `usdc` atomic units, 10 native coins. */
  fundedKey(usdc?: bigint): Promise<`0x${string}`>;
  /** Guard requests the service has answered so far (all statuses). */
  guardCalls(): Promise<number>;
  /** The account's nonce, native and USDC balances, to compare before and after. */
  state(address: string): Promise<{ nonce: number; eth: bigint; usdc: bigint }>;
  /** Deploys a PreflightAccount owned by `owner` that trusts the service's signer, pinned to no policy. */
  deployAccount(owner: Wallet): Promise<Contract>;
  close(): Promise<void>;
}

const ACCOUNT_ARTIFACT = fileURLToPath(new URL('../../../contracts/build/PreflightAccount.json', import.meta.url));

export async function startWalletWorld(env: Record<string, string> = {}): Promise<WalletWorld> {
  const [chain, cg] = await Promise.all([startScanChain(), startCoinGecko()]);
  const data = mkdtempSync(join(tmpdir(), 'preflight-wallets-'));
  let service: ServiceProcess | undefined;
  try {
    cg.setPrice('usd-coin', 'usd', 1).setPrice('ethereum', 'usd', 3000).setTokenPrice('base', USDC_BASE, 1);
    await chain.rpc('anvil_setCode', [MULTICALL3, compiled('TestMulticall3').deployedBytecode]);
    const c = compiled('Sweeper');
    const sweeper = await new ContractFactory(c.abi as never, c.bytecode, chain.deployer).deploy(COLLECTOR, USDC_BASE);
    await sweeper.waitForDeployment();
    service = await spawnService({
      DATABASE_URL: `sqlite:${join(data, 'preflight.db')}`,
      PRICE_API_URL: cg.url,
      RPC_URLS: `base=${chain.rpcUrl}`,
      REQUEST_DEADLINE_MS: '5000',
      HEAD_STALE_SECONDS: '86400',
      FREE_TIER_MONTHLY_LIMIT: '100000',
      ...env,
    });
    const url = service.url;
    const signup = await fetch(`${url}/v1/api-keys/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `wallets-${Date.now()}@example.com` }),
    });
    const apiKey = ((await signup.json()) as { api_key: string }).api_key;
    const caps = (await (await fetch(`${url}/v1/capabilities`)).json()) as { attestation: { signer: string } };
    const svc = service;
    return {
      chain,
      cg,
      service: svc,
      url,
      apiKey,
      attester: caps.attestation.signer,
      sweeper: await sweeper.getAddress(),
      async fundedKey(usdc = 1_000_000_000n) {
        const w = await chain.wallet(usdc, 10n ** 19n);
        return w.privateKey as `0x${string}`;
      },
      async guardCalls() {
        const text = await (await fetch(`${url}/metrics`)).text();
        let n = 0;
        for (const line of text.split('\n'))
          if (line.startsWith('preflight_http_request_duration_seconds_count{') && line.includes('route="/v1/guard"'))
            n += Number(line.slice(line.lastIndexOf(' ') + 1));
        return n;
      },
      async state(address: string) {
        const [nonce, eth, usdc] = await Promise.all([
          chain.provider.getTransactionCount(address, 'latest'),
          chain.provider.getBalance(address),
          chain.balanceOf(address),
        ]);
        return { nonce, eth, usdc };
      },
      async deployAccount(owner: Wallet) {
        const art = JSON.parse(readFileSync(ACCOUNT_ARTIFACT, 'utf8')) as { abi: never; bytecode: string };
        const deployed = await new ContractFactory(art.abi, art.bytecode, owner).deploy(
          owner.address,
          caps.attestation.signer,
          ZeroHash,
        );
        await deployed.waitForDeployment();
        return deployed as Contract;
      },
      async close() {
        svc.child.kill('SIGTERM');
        await svc.exited;
        await Promise.all([chain.close(), cg.close()]);
        rmSync(data, { recursive: true, force: true });
      },
    };
  } catch (err) {
    service?.child.kill('SIGTERM');
    await Promise.all([chain.close(), cg.close()]);
    rmSync(data, { recursive: true, force: true });
    throw err;
  }
}

/** A Permit2 `PermitSingle` granting `spender` the most Permit2 allows of USDC (what a drainer asks for). */
export function permit2ToDrainer(spender: string, now = Math.floor(Date.now() / 1000)) {
  return {
    domain: { name: 'Permit2', chainId: 8453, verifyingContract: '0x000000000022D473030F116dDEE9F6B43aC78BA3' },
    types: {
      PermitSingle: [
        { name: 'details', type: 'PermitDetails' },
        { name: 'spender', type: 'address' },
        { name: 'sigDeadline', type: 'uint256' },
      ],
      PermitDetails: [
        { name: 'token', type: 'address' },
        { name: 'amount', type: 'uint160' },
        { name: 'expiration', type: 'uint48' },
        { name: 'nonce', type: 'uint48' },
      ],
    },
    primaryType: 'PermitSingle' as const,
    message: {
      details: { token: USDC_BASE, amount: MAX_UINT160, expiration: BigInt(now + 3600), nonce: 0n },
      spender,
      sigDeadline: BigInt(now + 600),
    },
  };
}

/** An address on the sanctions list the service embeds (OFAC SDN, ETH). */
export const SANCTIONED = '0x01e2919679362dfbc9ee1644ba9c6da6d6245bb1';
/** The May 2024 address poisoning: the victim meant to pay INTENDED and paid POISON. */
export const INTENDED = '0xd9A1b0B1e1aE382DbDc898Ea68012FfcB2853a91';
export const POISON = '0xd9A1C3788D81257612E2581A6ea0aDa244853a91';

export { USDC_BASE };
export const randomAddress = (): string => Wallet.createRandom().address;
