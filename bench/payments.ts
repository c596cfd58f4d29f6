/**
 * The paid scenario's chain and payer: a real USDC on a local anvil chain (test/helpers/usdc.ts),
 * a funded payer, a settler with gas, and x402 v1 X-PAYMENT headers signed ahead of the run (one
 * header buys one answer, so the load uses each once). Signing happens before the clock starts so
 * the load process measures the server, not the client's elliptic-curve work.
 */
import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { startUsdcChain, type UsdcChain } from '../test/helpers/usdc.js';
import {
  EIP712_DOMAIN,
  NETWORK_V1,
  PRICE_ATOMIC,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
} from '../src/billing/x402/constants.js';

export interface PaymentRig {
  env: Record<string, string>;
  /** `count` fresh X-PAYMENT header values, each valid for `validForSec` from now. */
  headers(count: number, validForSec: number): Promise<string[]>;
  close(): Promise<void>;
}

export async function startPaymentRig(maxPayments: number): Promise<PaymentRig> {
  const chain: UsdcChain = await startUsdcChain();
  try {
    const payTo = Wallet.createRandom().address;
    const settler = await chain.wallet(0n, 10n ** 21n);
    const payer = await chain.wallet(BigInt(PRICE_ATOMIC) * BigInt(maxPayments), 0n);
    const signer = new Wallet(payer.privateKey);
    // From here on the chain makes a block every 2 s like Base, instead of one per transaction.
    await chain.rpc('evm_setAutomine', [false]);
    await chain.rpc('evm_setIntervalMining', [2]);
    return {
      env: {
        X402_PAY_TO: payTo,
        X402_SETTLER_KEY: settler.privateKey,
        X402_RPC_URL: chain.rpcUrl,
        X402_SETTLEMENT: 'local',
      },
      async headers(count, validForSec) {
        const now = Math.floor(Date.now() / 1000);
        const out: string[] = [];
        for (let i = 0; i < count; i++) {
          const authorization = {
            from: signer.address,
            to: payTo,
            value: PRICE_ATOMIC,
            validAfter: String(now - 60),
            validBefore: String(now + validForSec),
            nonce: `0x${randomBytes(32).toString('hex')}`,
          };
          const signature = await signer.signTypedData(EIP712_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, authorization);
          const payload = {
            x402Version: 1,
            scheme: 'exact',
            network: NETWORK_V1,
            payload: { signature, authorization },
          };
          out.push(Buffer.from(JSON.stringify(payload)).toString('base64'));
        }
        return out;
      },
      close: () => chain.close(),
    };
  } catch (err) {
    await chain.close();
    throw err;
  }
}
