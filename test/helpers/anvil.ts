/**
 * A real local chain for tests: anvil on 127.0.0.1, a free port, chain id 8453 (Base), killed
 * in teardown (and on process exit, should a test crash first).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { JsonRpcProvider, Wallet } from 'ethers';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url)); // dist/test/helpers → repo root

/** anvil's first well-known dev account (funded with 10,000 ETH on every start). */
export const DEV_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

export interface Anvil {
  url: string;
  chainId: number;
  provider: JsonRpcProvider;
  wallet: Wallet;
  /** Funded dev accounts (addresses). */
  accounts: string[];
  close(): Promise<void>;
}

function binary(): string {
  // The platform package's binary directly: the npm wrapper adds a Node start-up and a process
  // in between that would have to forward our kill.
  const direct = `${ROOT}node_modules/@foundry-rs/anvil-${process.platform}-${process.arch === 'x64' ? 'amd64' : process.arch}/bin/anvil`;
  return existsSync(direct) ? direct : `${ROOT}node_modules/.bin/anvil`;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export async function startAnvil(opts: { chainId?: number; blockTime?: number } = {}): Promise<Anvil> {
  const chainId = opts.chainId ?? 8453;
  const args = ['--chain-id', String(chainId), '--host', '127.0.0.1', '--port', '0', '--accounts', '3'];
  if (opts.blockTime) args.push('--block-time', String(opts.blockTime));
  const child = spawn(binary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`anvil did not start within 15 s:\n${out}`)), 15_000);
    const fail = (err: Error): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    };
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`anvil exited with ${code}:\n${out}`)));
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /Listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stdout?.off('data', onData);
      child.stdout?.resume(); // keep draining so anvil never blocks on a full pipe
      resolve(Number(m[1]));
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  });
  const url = `http://127.0.0.1:${port}`;
  // cacheTimeout -1: ethers otherwise reuses a nonce answer for 250 ms and back-to-back sends collide.
  const provider = new JsonRpcProvider(url, chainId, { staticNetwork: true, pollingInterval: 50, cacheTimeout: -1 });
  const wallet = new Wallet(DEV_KEY, provider);
  const accounts = (await provider.send('eth_accounts', [])) as string[];
  return {
    url,
    chainId,
    provider,
    wallet,
    accounts,
    async close() {
      provider.destroy();
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }
      live.delete(child);
    },
  };
}

// Init code that deploys the 5-byte runtime 60006000fd (PUSH1 0 PUSH1 0 REVERT): every call reverts.
const REVERTER_INIT = '0x6005600c60003960056000f360006000fd';

/** Deploy a contract whose every call reverts; its address (has code). */
export async function deployReverter(a: Anvil): Promise<string> {
  const tx = await a.wallet.sendTransaction({ data: REVERTER_INIT, gasLimit: 100_000 });
  const receipt = await tx.wait();
  if (!receipt?.contractAddress) throw new Error('reverter deployment failed');
  return receipt.contractAddress;
}

/** A mined, successful transaction (plain ETH transfer); its hash. */
export async function successfulTxHash(a: Anvil): Promise<string> {
  const tx = await a.wallet.sendTransaction({ to: a.accounts[1], value: 1n });
  await tx.wait();
  return tx.hash;
}

/** A mined transaction with receipt status 0 (a call into the reverter); its hash. */
export async function revertedTxHash(a: Anvil, reverter?: string): Promise<string> {
  const to = reverter ?? (await deployReverter(a));
  // An explicit gas limit skips estimation, which would refuse to send a reverting call.
  const tx = await a.wallet.sendTransaction({ to, data: '0x', gasLimit: 60_000 });
  await a.provider.waitForTransaction(tx.hash);
  return tx.hash;
}
