/**
 * An agent whose viem account is guarded (docs/wallets.md): a payment the guard lets through is
 * mined; a drainer's permit is refused before the key signs it. See examples/README.md.
 */
import { createPublicClient, createWalletClient, http, parseEther } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { base } from 'viem/chains';
// In an agent project: import { guardAccount } from '@preflight/viem';
import { guardAccount } from '../clients/viem/src/index.js';
import { drainerPermit, refusal, settings } from './shared.js';

const s = settings();
const account = guardAccount(privateKeyToAccount(s.key), { baseUrl: s.baseUrl, apiKey: s.apiKey, attester: s.attester });
const chain = { ...base, rpcUrls: { default: { http: [s.rpcUrl] } } };
const wallet = createWalletClient({ account, chain, transport: http(s.rpcUrl) });
const reader = createPublicClient({ chain, transport: http(s.rpcUrl) });

const friend = privateKeyToAccount(generatePrivateKey()).address;
try {
  const hash = await wallet.sendTransaction({ to: friend, value: parseEther('0.001') });
  const receipt = await reader.waitForTransactionReceipt({ hash });
  console.log(`pay 0.001 ETH: mined in block ${receipt.blockNumber}`);
} catch (err) {
  console.log(`pay 0.001 ETH: ${refusal(err)}`);
}
const stranger = privateKeyToAccount(generatePrivateKey()).address;
try {
  await wallet.signTypedData(drainerPermit(stranger));
  console.log('sign a Permit2 allowance for a stranger: signed');
} catch (err) {
  console.log(`sign a Permit2 allowance for a stranger: ${refusal(err)}`);
}
