/**
 * An AgentKit agent whose wallet provider is guarded (docs/wallets.md): the model's tools include
 * preflight's; a payment the guard lets through is mined; a drainer's permit is refused before the
 * key signs it. See examples/README.md.
 */
import { AgentKit, ViemWalletProvider } from '@coinbase/agentkit';
import { createWalletClient, http, parseEther } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { base } from 'viem/chains';
// In an agent project: import { GuardedEvmWalletProvider, preflightActionProvider } from '@preflight/agentkit';
import { GuardedEvmWalletProvider, preflightActionProvider } from '../clients/agentkit/src/index.js';
import { drainerPermit, refusal, settings } from './shared.js';

const s = settings();
const chain = { ...base, rpcUrls: { default: { http: [s.rpcUrl] } } };
const walletClient = createWalletClient({ account: privateKeyToAccount(s.key), chain, transport: http(s.rpcUrl) });
const options = { baseUrl: s.baseUrl, apiKey: s.apiKey, attester: s.attester };
const walletProvider = new GuardedEvmWalletProvider(
  new ViemWalletProvider(walletClient as never, { rpcUrl: s.rpcUrl }),
  options,
);
const agentkit = await AgentKit.from({ walletProvider, actionProviders: [preflightActionProvider(options)] });
console.log(`tools: ${agentkit.getActions().map((a) => a.name).join(', ')}`);

const friend = privateKeyToAccount(generatePrivateKey()).address;
try {
  const hash = await walletProvider.nativeTransfer(friend, parseEther('0.001').toString());
  const receipt = (await walletProvider.waitForTransactionReceipt(hash as `0x${string}`)) as { blockNumber: bigint };
  console.log(`pay 0.001 ETH: mined in block ${receipt.blockNumber}`);
} catch (err) {
  console.log(`pay 0.001 ETH: ${refusal(err)}`);
}
const stranger = privateKeyToAccount(generatePrivateKey()).address;
try {
  await walletProvider.signTypedData(drainerPermit(stranger) as never);
  console.log('sign a Permit2 allowance for a stranger: signed');
} catch (err) {
  console.log(`sign a Permit2 allowance for a stranger: ${refusal(err)}`);
}
