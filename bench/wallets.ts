/**
 * What a wallet guard costs an agent (docs/wallets.md): the time a guarded viem `sendTransaction`
 * adds over an unguarded one, against a local service (started as a user starts it) and a local
 * Base (anvil, Circle's USDC). Three series run interleaved, one of each per round, each a USDC
 * transfer to a fresh recipient (so no simulation is answered from the cache): the unguarded send,
 * the guarded send, and the bare question the guarded send asks, as a careful agent would ask it
 * by hand (the typed client's `guard` with the same body, then `verifyAttestation` against the
 * pinned signer, as the guarded account does with `attester`). The figures: each series' p50 and p99, and what the guard adds (guarded −
 * unguarded) at p50 and p99. The target: the added p50 within 1.25 × the bare guard call's p50, so
 * the wrapper costs little beyond the question it must ask.
 */
import { createClient, verifyAttestation } from '@preflight/client';
import { createWalletClient, encodeFunctionData, erc20Abi, http, type Chain } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { base } from 'viem/chains';
import { guardAccount } from '../clients/viem/src/index.js';
import { startWalletWorld, USDC_BASE } from '../test/helpers/wallets.js';

export interface Series {
  p50: number;
  p99: number;
  n: number;
}

export interface WalletGuardResult {
  rounds: number;
  unguarded: Series;
  guarded: Series;
  guardCall: Series;
  addedP50: number;
  addedP99: number;
  errors: number;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

function series(ms: number[]): Series {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? 0;
  return { p50: round1(at(0.5)), p99: round1(at(0.99)), n: s.length };
}

export async function measureWalletGuard(rounds: number): Promise<WalletGuardResult> {
  const world = await startWalletWorld();
  try {
    const chain = { ...base, rpcUrls: { default: { http: [world.chain.rpcUrl] } } } as Chain;
    const transport = http(world.chain.rpcUrl);
    const options = { baseUrl: world.url, apiKey: world.apiKey, attester: world.attester };
    const plainAccount = privateKeyToAccount(await world.fundedKey());
    const guardedAccount = guardAccount(privateKeyToAccount(await world.fundedKey()), options);
    const plain = createWalletClient({ account: plainAccount, chain, transport });
    const guarded = createWalletClient({ account: guardedAccount, chain, transport });
    const client = createClient(options);
    const transfer = () =>
      encodeFunctionData({
        abi: erc20Abi,
        functionName: 'transfer',
        args: [privateKeyToAccount(generatePrivateKey()).address, 1n],
      });
    const times = { unguarded: [] as number[], guarded: [] as number[], guardCall: [] as number[] };
    let errors = 0;
    const timed = async (into: number[], run: () => Promise<unknown>) => {
      const t0 = performance.now();
      try {
        await run();
        into.push(performance.now() - t0);
      } catch {
        errors++;
      }
    };
    // Two warm-up rounds (connections, the service's first simulation), not counted.
    for (let i = -2; i < rounds; i++) {
      const mark = i < 0 ? { unguarded: [], guarded: [], guardCall: [] } : times;
      await timed(mark.unguarded, () => plain.sendTransaction({ to: USDC_BASE as `0x${string}`, data: transfer() }));
      await timed(mark.guarded, () => guarded.sendTransaction({ to: USDC_BASE as `0x${string}`, data: transfer() }));
      await timed(mark.guardCall, async () => {
        const body = {
          action: 'transfer' as const,
          chain: 'base',
          transaction: { from: guardedAccount.address, to: USDC_BASE, value: '0', data: transfer(), gas: null },
        };
        const answer = await client.guard(body, { idempotencyKey: crypto.randomUUID() });
        const signed = await verifyAttestation(answer, { signer: world.attester, requestBody: JSON.stringify(body) });
        if (answer.verdict !== 'proceed' || !signed)
          throw new Error(`guard answered ${answer.verdict}, signed ${signed}`);
      });
    }
    const unguarded = series(times.unguarded);
    const guardedS = series(times.guarded);
    return {
      rounds,
      unguarded,
      guarded: guardedS,
      guardCall: series(times.guardCall),
      addedP50: round1(guardedS.p50 - unguarded.p50),
      addedP99: round1(guardedS.p99 - unguarded.p99),
      errors,
    };
  } finally {
    await world.close();
  }
}
