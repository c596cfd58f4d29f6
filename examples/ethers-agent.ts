/**
 * An agent whose ethers signer is guarded (docs/wallets.md): a payment the guard lets through is
 * mined; a drainer's permit is refused before the key signs it. See examples/README.md.
 */
import { JsonRpcProvider, parseEther, Wallet } from 'ethers';
// In an agent project: import { GuardedSigner } from '@preflight/ethers';
import { GuardedSigner } from '../clients/ethers/src/index.js';
import { drainerPermit, refusal, settings } from './shared.js';

const s = settings();
const provider = new JsonRpcProvider(s.rpcUrl, undefined, { staticNetwork: true });
const signer = new GuardedSigner(new Wallet(s.key, provider), {
  baseUrl: s.baseUrl,
  apiKey: s.apiKey,
  attester: s.attester,
});

try {
  const tx = await signer.sendTransaction({ to: Wallet.createRandom().address, value: parseEther('0.001') });
  const receipt = await tx.wait();
  console.log(`pay 0.001 ETH: mined in block ${receipt?.blockNumber}`);
} catch (err) {
  console.log(`pay 0.001 ETH: ${refusal(err)}`);
}
const permit = drainerPermit(Wallet.createRandom().address);
try {
  await signer.signTypedData(permit.domain, permit.types, permit.message);
  console.log('sign a Permit2 allowance for a stranger: signed');
} catch (err) {
  console.log(`sign a Permit2 allowance for a stranger: ${refusal(err)}`);
}
provider.destroy();
