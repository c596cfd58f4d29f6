/**
 * `guardAccount(account, options)`: a viem `LocalAccount` that asks the preflight guard before it
 * signs a transaction, typed data or an EIP-7702 authorization, so `sendTransaction`,
 * `writeContract`, `deployContract`, `sendCalls`, type-4 transactions and typed data all go
 * through it (docs/wallets.md §1–2). A text message passes; a raw hash is refused unless
 * `allowRawSign`. `executeThroughAccount` sends a call through a PreflightAccount with the answer's
 * attestation.
 */
import {
  executeArgs,
  PreflightAttestationError,
  PreflightBlockedError,
  PreflightWaitError,
  WalletGuard,
  type WalletGuardOptions,
} from '@preflight/client';
import type { Account, Chain, Hex, LocalAccount, SignableMessage, Transport, WalletClient } from 'viem';

export { PreflightAttestationError, PreflightBlockedError, PreflightWaitError, type WalletGuardOptions };

export interface GuardAccountOptions extends WalletGuardOptions {
  /** Let `sign({ hash })` and `signMessage({ message: { raw } })` through unguarded (default false). */
  allowRawSign?: boolean;
}

/** A raw signature was asked for and `allowRawSign` is not set: nothing was signed. */
export class PreflightRawSignError extends Error {
  constructor(what: string) {
    super(
      `preflight refuses to sign ${what}: a raw hash can be a transaction or a permit the guard cannot see; set allowRawSign to allow it`,
    );
    this.name = 'PreflightRawSignError';
  }
}

type Serializable = {
  to?: string | null;
  value?: bigint;
  data?: Hex;
  gas?: bigint;
  chainId?: number;
  authorizationList?: ReadonlyArray<{
    address: string;
    chainId: number;
    nonce: number;
    r?: Hex;
    s?: Hex;
    yParity?: number;
  }>;
};

/**
 * The same account, guarded: `signTransaction`, `signTypedData` and `signAuthorization` ask the
 * guard first and sign only on `proceed`. Everything else (address, public key, nonce manager) is
 * the inner account's.
 */
export function guardAccount<A extends LocalAccount>(account: A, options: GuardAccountOptions): A {
  if ((account as { type?: string })?.type !== 'local')
    throw new TypeError('guardAccount takes a local account (privateKeyToAccount, toAccount, a custodian account)');
  const guard = new WalletGuard(options);
  const from = account.address;
  const raw = (what: string) => {
    if (!options.allowRawSign) throw new PreflightRawSignError(what);
  };
  const guarded: LocalAccount = {
    ...account,
    async sign(parameters: { hash: Hex }) {
      raw('a raw hash');
      if (!account.sign) throw new TypeError('this account cannot sign a raw hash');
      return account.sign(parameters);
    },
    async signMessage(parameters: { message: SignableMessage }) {
      if (typeof parameters.message !== 'string') raw('a raw message');
      return account.signMessage(parameters);
    },
    async signTransaction(transaction, opts) {
      const tx = transaction as Serializable;
      await guard.transaction({
        from,
        to: tx.to ?? null,
        value: tx.value,
        data: tx.data,
        gas: tx.gas,
        chainId: tx.chainId,
        authorizationList: tx.authorizationList ? [...tx.authorizationList] : undefined,
      });
      return account.signTransaction(transaction, opts);
    },
    async signTypedData(parameters) {
      const p = parameters as unknown as {
        domain?: Record<string, unknown>;
        types: Record<string, Array<{ name: string; type: string }>>;
        primaryType: string;
        message: Record<string, unknown>;
      };
      await guard.typedData({ domain: p.domain, types: p.types, primaryType: p.primaryType, message: p.message });
      return account.signTypedData(parameters);
    },
  };
  if (account.signAuthorization) {
    const inner = account.signAuthorization.bind(account);
    guarded.signAuthorization = async (parameters) => {
      const p = parameters as { address?: string; contractAddress?: string; chainId: number; nonce: number };
      await guard.authorization({
        authority: from,
        address: (p.address ?? p.contractAddress) as string,
        chainId: p.chainId,
        nonce: p.nonce,
      });
      return inner(parameters);
    };
  }
  return guarded as A;
}

/** A call a PreflightAccount is to make. */
export interface AccountCall {
  /** The PreflightAccount's address: the sender the guard judges. */
  account: `0x${string}`;
  to: `0x${string}`;
  value?: bigint;
  data?: Hex;
}

export interface ExecuteOptions extends WalletGuardOptions {
  /** A wallet client of the account's owner (with its account and chain), which sends `execute`. */
  wallet: WalletClient<Transport, Chain, Account>;
}

/**
 * Asks the guard about `call` with the PreflightAccount as sender, then sends
 * `execute(to, value, data, verdict, signature)` from the owner with the answer's attestation, so
 * the account checks the signer, the call and the expiry itself. Throws as the guard does
 * (nothing is sent); resolves to the transaction hash and the answer.
 */
export async function executeThroughAccount(
  call: AccountCall,
  options: ExecuteOptions,
): Promise<{ hash: Hex; answer: Awaited<ReturnType<WalletGuard['transaction']>> }> {
  const { wallet, ...guardOptions } = options;
  const guard = new WalletGuard(guardOptions);
  const answer = await guard.transaction({
    from: call.account,
    to: call.to,
    value: call.value ?? 0n,
    data: call.data ?? '0x',
    chainId: wallet.chain.id,
  });
  const { abi, args } = executeArgs(answer, call);
  const hash = await wallet.writeContract({
    address: call.account,
    abi: abi as never,
    functionName: 'execute',
    args: args as never,
    account: wallet.account,
    chain: wallet.chain,
  });
  return { hash, answer };
}
