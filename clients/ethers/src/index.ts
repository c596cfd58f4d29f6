/**
 * `new GuardedSigner(signer, options)`: an ethers `AbstractSigner` over another signer that asks the
 * preflight guard before it signs a transaction, typed data or an EIP-7702 authorization
 * (docs/wallets.md §1–2). `sendTransaction` and every `Contract` call are inherited, so they are
 * guarded too; a message (`signMessage`) passes. `executeThroughAccount` sends a call through a
 * PreflightAccount with the answer's attestation.
 */
import {
  executeArgs,
  PreflightAttestationError,
  PreflightBlockedError,
  PreflightWaitError,
  WalletGuard,
  type WalletGuardOptions,
} from '@preflight/client';
import {
  AbstractSigner,
  type Authorization,
  type AuthorizationRequest,
  Contract,
  type ContractTransactionResponse,
  type Provider,
  resolveAddress,
  type Signer,
  type TransactionRequest,
  TypedDataEncoder,
  type TypedDataDomain,
  type TypedDataField,
  verifyAuthorization,
} from 'ethers';

export { PreflightAttestationError, PreflightBlockedError, PreflightWaitError, type WalletGuardOptions };

type Answer = Awaited<ReturnType<WalletGuard['ask']>>;

export class GuardedSigner extends AbstractSigner {
  /** The signer that holds the key. */
  readonly signer: Signer;
  readonly guard: WalletGuard;

  constructor(signer: Signer, options: WalletGuardOptions | WalletGuard) {
    super(signer.provider);
    this.signer = signer;
    this.guard = options instanceof WalletGuard ? options : new WalletGuard(options);
  }

  getAddress(): Promise<string> {
    return this.signer.getAddress();
  }

  connect(provider: Provider | null): GuardedSigner {
    return new GuardedSigner(this.signer.connect(provider), this.guard);
  }

  /** Asks the guard about the transaction as it will be signed (chain id from the provider when unset). */
  async signTransaction(tx: TransactionRequest): Promise<string> {
    const from = await this.getAddress();
    const to = tx.to ? await resolveAddress(tx.to, this) : null;
    const chainId = tx.chainId ?? (this.provider ? (await this.provider.getNetwork()).chainId : undefined);
    const list = tx.authorizationList ?? [];
    await this.guard.transaction({
      from,
      to,
      value: tx.value === undefined || tx.value === null ? 0n : BigInt(tx.value),
      data: tx.data ?? '0x',
      gas: tx.gasLimit === undefined || tx.gasLimit === null ? null : BigInt(tx.gasLimit),
      chainId: chainId === undefined ? null : BigInt(chainId),
      authorizationList: list.map((a) => ({
        authority: verifyAuthorization({ address: a.address, nonce: BigInt(a.nonce), chainId: a.chainId }, a.signature),
        address: a.address,
        chainId: BigInt(a.chainId),
        nonce: BigInt(a.nonce),
      })),
    });
    return this.signer.signTransaction(tx);
  }

  async signMessage(message: string | Uint8Array): Promise<string> {
    return this.signer.signMessage(message);
  }

  async signTypedData(
    domain: TypedDataDomain,
    types: Record<string, Array<TypedDataField>>,
    value: Record<string, unknown>,
  ): Promise<string> {
    const primaryType = TypedDataEncoder.getPrimaryType(types);
    const walletChainId =
      domain.chainId === undefined || domain.chainId === null
        ? this.provider
          ? (await this.provider.getNetwork()).chainId
          : null
        : null;
    await this.guard.typedData(
      {
        domain: Object.fromEntries(Object.entries(domain).filter(([, v]) => v !== undefined && v !== null)),
        types,
        primaryType,
        message: value,
      },
      walletChainId,
    );
    return this.signer.signTypedData(domain, types, value);
  }

  /** Fills the chain id and nonce as ethers does, asks the guard, then has the inner signer sign. */
  override async authorize(request: AuthorizationRequest): Promise<Authorization> {
    const auth = await this.populateAuthorization({ ...request, address: await resolveAddress(request.address, this) });
    await this.guard.authorization({
      authority: await this.getAddress(),
      address: auth.address as string,
      chainId: BigInt(auth.chainId ?? 0),
      nonce: auth.nonce === undefined ? null : BigInt(auth.nonce),
    });
    return this.signer.authorize(auth);
  }
}

/** A call a PreflightAccount is to make. */
export interface AccountCall {
  /** The PreflightAccount's address: the sender the guard judges. */
  account: string;
  to: string;
  value?: bigint;
  data?: string;
}

export interface ExecuteOptions extends WalletGuardOptions {
  /** The account's owner (connected to a provider), which sends `execute`. */
  owner: Signer;
}

/**
 * Asks the guard about `call` with the PreflightAccount as sender, then sends
 * `execute(to, value, data, verdict, signature)` from the owner with the answer's attestation, so
 * the account checks the signer, the call and the expiry itself. Throws as the guard does
 * (nothing is sent).
 */
export async function executeThroughAccount(
  call: AccountCall,
  options: ExecuteOptions,
): Promise<{ tx: ContractTransactionResponse; answer: Answer }> {
  const { owner, ...guardOptions } = options;
  if (!owner.provider) throw new TypeError('executeThroughAccount: the owner signer needs a provider');
  const guard = new WalletGuard(guardOptions);
  const { chainId } = await owner.provider.getNetwork();
  const answer = await guard.transaction({
    from: call.account,
    to: call.to,
    value: call.value ?? 0n,
    data: call.data ?? '0x',
    chainId,
  });
  const { abi, args } = executeArgs(answer, call);
  const account = new Contract(call.account, abi as never, owner);
  const tx = (await account.getFunction('execute')(...args)) as ContractTransactionResponse;
  return { tx, answer };
}
