/**
 * A chain to simulate against: anvil (chain id 8453) with Circle's USDC at its Base address
 * (./usdc.ts) and the project's own test contracts from contracts/test, compiled by the pinned
 * solc: a token, a swap that pays back (funded with the token and native coin), a swap that
 * pays nothing, a reverter, an NFT, a 1155 and Permit2's allowance half at Permit2's address.
 */
import { type Contract, ContractFactory, Interface, type Wallet } from 'ethers';
import { compiled } from '../../contracts/compile.js';
import { PERMIT2 } from '../../src/scan/changes.js';
import { type UsdcChain, startUsdcChain } from './usdc.js';

export interface ScanChain extends UsdcChain {
  /** The chain's own funded deployer. */
  deployer: Wallet;
  token: Contract;
  tokenAddress: string;
  fair: string;
  drain: string;
  reverter: string;
  nft: Contract;
  multi: Contract;
  /** Interfaces to encode calldata with. */
  iface: {
    token: Interface;
    swap: Interface;
    reverter: Interface;
    nft: Interface;
    multi: Interface;
    permit2: Interface;
  };
}

export async function startScanChain(): Promise<ScanChain> {
  const chain = await startUsdcChain();
  try {
    const deployer = chain.usdc.runner as Wallet;
    const deploy = async (name: string, ...args: unknown[]): Promise<Contract> => {
      const c = compiled(name);
      const ct = await new ContractFactory(c.abi as never, c.bytecode, deployer).deploy(...args);
      await ct.waitForDeployment();
      return ct as Contract;
    };
    const token = await deploy('TestToken', 'Test Token', 'TST', 18);
    const fair = await deploy('FairSwap');
    const drain = await deploy('DrainSwap');
    const reverter = await deploy('Reverter');
    const nft = await deploy('TestNft');
    const multi = await deploy('TestMulti');
    await chain.rpc('anvil_setCode', [PERMIT2, compiled('TestPermit2').deployedBytecode]);
    const fairAddress = await fair.getAddress();
    await (await token.mint(fairAddress, 10n ** 24n)).wait();
    await (await chain.usdc.mint(fairAddress, 10n ** 12n)).wait();
    await chain.rpc('anvil_setBalance', [fairAddress, `0x${(10n ** 21n).toString(16)}`]);
    const iface = (name: string) => new Interface(compiled(name).abi as never);
    return {
      ...chain,
      deployer,
      token,
      tokenAddress: await token.getAddress(),
      fair: fairAddress,
      drain: await drain.getAddress(),
      reverter: await reverter.getAddress(),
      nft,
      multi,
      iface: {
        token: iface('TestToken'),
        swap: iface('FairSwap'),
        reverter: iface('Reverter'),
        nft: iface('TestNft'),
        multi: iface('TestMulti'),
        permit2: iface('TestPermit2'),
      },
    };
  } catch (err) {
    await chain.close();
    throw err;
  }
}
