/**
 * AgentKit: `new GuardedEvmWalletProvider(inner, options)`, a real `EvmWalletProvider` over another
 * one that asks the preflight guard before `sendTransaction`, `nativeTransfer`, `signTransaction`
 * and `signTypedData` (so every AgentKit action that moves funds goes through it), and
 * `preflightActionProvider(options)`, which gives the model the `preflight_guard`,
 * `preflight_screen` and `preflight_usage` tools (docs/wallets.md §1–3).
 */
import { ActionProvider, CreateAction, EvmWalletProvider, WalletProvider } from '@coinbase/agentkit';
import {
  createClient,
  type GuardTransaction,
  PreflightAttestationError,
  PreflightBlockedError,
  type PreflightClient,
  PreflightWaitError,
  WalletGuard,
  type WalletGuardOptions,
} from '@preflight/client';
import { z } from 'zod/v3';

export { PreflightAttestationError, PreflightBlockedError, PreflightWaitError, type WalletGuardOptions };

export interface GuardedProviderOptions extends WalletGuardOptions {
  /** Let `sign(hash)` (a raw hash) through unguarded (default false). */
  allowRawSign?: boolean;
}

type Tx = Parameters<EvmWalletProvider['sendTransaction']>[0];
type Hex = `0x${string}`;

/** A raw hash was to be signed and `allowRawSign` is not set: nothing was signed. */
export class PreflightRawSignError extends Error {
  constructor() {
    super(
      'preflight refuses to sign a raw hash: it can be a transaction or a permit the guard cannot see; set allowRawSign to allow it',
    );
    this.name = 'PreflightRawSignError';
  }
}

/**
 * The inner provider, guarded. Its name, address, network, balance and reads are the inner
 * provider's, so actions that look at `getName()` or check `instanceof EvmWalletProvider` behave as
 * with the inner one.
 */
export class GuardedEvmWalletProvider extends EvmWalletProvider {
  readonly inner: EvmWalletProvider;
  readonly guard: WalletGuard;
  readonly #allowRawSign: boolean;

  constructor(inner: EvmWalletProvider, options: GuardedProviderOptions) {
    super();
    if (!(inner instanceof EvmWalletProvider))
      throw new TypeError('GuardedEvmWalletProvider wraps an EvmWalletProvider');
    this.inner = inner;
    this.guard = new WalletGuard(options);
    this.#allowRawSign = options.allowRawSign === true;
    // The inner provider announced itself to AgentKit's analytics when it was built; the wrapper is
    // the same wallet and sends no second announcement (docs/wallets.md §4).
    Object.defineProperty(this, 'trackInitialization', { value: () => undefined });
  }

  getAddress(): string {
    return this.inner.getAddress();
  }
  getNetwork(): ReturnType<EvmWalletProvider['getNetwork']> {
    return this.inner.getNetwork();
  }
  getName(): string {
    return this.inner.getName();
  }
  getBalance(): Promise<bigint> {
    return this.inner.getBalance();
  }
  getPublicClient(): ReturnType<EvmWalletProvider['getPublicClient']> {
    return this.inner.getPublicClient();
  }
  waitForTransactionReceipt(txHash: Hex): Promise<unknown> {
    return this.inner.waitForTransactionReceipt(txHash);
  }
  readContract: EvmWalletProvider['readContract'] = (params) => this.inner.readContract(params);

  async sign(hash: Hex): Promise<Hex> {
    if (!this.#allowRawSign) throw new PreflightRawSignError();
    return this.inner.sign(hash);
  }

  signMessage(message: string | Uint8Array): Promise<Hex> {
    return this.inner.signMessage(message);
  }

  async signTypedData(typedData: {
    domain?: Record<string, unknown>;
    types: Record<string, Array<{ name: string; type: string }>>;
    primaryType: string;
    message: Record<string, unknown>;
  }): Promise<Hex> {
    const { domain, types, primaryType, message } = typedData;
    await this.guard.typedData({ domain, types, primaryType, message }, this.chainId());
    return this.inner.signTypedData(typedData);
  }

  async signTransaction(transaction: Tx): Promise<Hex> {
    await this.ask(transaction);
    return this.inner.signTransaction(transaction);
  }

  async sendTransaction(transaction: Tx): Promise<Hex> {
    await this.ask(transaction);
    return this.inner.sendTransaction(transaction);
  }

  async nativeTransfer(to: string, value: string): Promise<string> {
    await this.ask({ to: to as Hex, value: BigInt(value) });
    return this.inner.nativeTransfer(to, value);
  }

  private chainId(): string | undefined {
    return this.inner.getNetwork().chainId;
  }

  /** The transaction as the caller asked for it, with the (viem-shaped) authorizations of a type-4 one. */
  private ask(tx: Tx) {
    const t = tx as Omit<GuardTransaction, 'from' | 'chainId'>;
    return this.guard.transaction({
      from: this.getAddress(),
      to: t.to ?? null,
      value: t.value,
      data: t.data,
      gas: t.gas,
      chainId: this.chainId(),
      authorizationList: t.authorizationList ? [...t.authorizationList] : undefined,
    });
  }
}

export type PreflightActionOptions = Pick<WalletGuardOptions, 'baseUrl' | 'apiKey' | 'chain'> & {
  /** A configured typed client, instead of `baseUrl` and `apiKey`. */
  client?: PreflightClient;
};

const ACTIONS = [
  'swap',
  'transfer',
  'bridge',
  'yield_deposit',
  'generic',
  'approve',
  'mint',
  'stake',
  'add_liquidity',
  'contract_call',
] as const;
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a 0x address of 40 hex digits');

const GuardSchema = z.object({
  action: z.enum(ACTIONS).describe('What the agent is about to do.'),
  chain: z.string().optional().describe('The chain name (base, ethereum, ...); the wallet’s chain when omitted.'),
  amount_usd: z.number().nonnegative().optional().describe('The value at stake in USD.'),
  to: address.optional().describe('The transaction target, when there is one.'),
  value: z.string().regex(/^\d+$/).optional().describe('Native value in wei (decimal).'),
  data: z
    .string()
    .regex(/^0x([0-9a-fA-F]{2})*$/)
    .optional()
    .describe('Calldata (0x hex).'),
  spender: address.optional().describe('For an approval: who may spend.'),
  approval_amount: z.string().regex(/^\d+$/).optional().describe('For an approval: the amount in atomic units.'),
});

const ScreenSchema = z.object({
  addresses: z
    .array(address)
    .min(1)
    .max(100)
    .describe('The addresses the agent is about to pay, approve or delegate to.'),
  known_addresses: z.array(address).max(1000).optional().describe('Counterparties the agent already trusts.'),
  chain: z.string().optional().describe('The chain name; the wallet’s chain when omitted.'),
});

const UsageSchema = z.object({
  policy: z.string().min(1).max(64).describe('The policy name.'),
});

const CHAINS: Readonly<Record<string, string>> = { 'base-mainnet': 'base', 'ethereum-mainnet': 'ethereum' };

/** The tools: each answers the model with JSON text, and a failure as `Error: ...` (AgentKit's way). */
export class PreflightActionProvider extends ActionProvider<WalletProvider> {
  readonly client: PreflightClient;
  readonly chain: string | undefined;

  constructor(options: PreflightActionOptions) {
    super('preflight', []);
    if (!options.client && !options.baseUrl) throw new TypeError('preflightActionProvider: give `baseUrl` or `client`');
    this.client = options.client ?? createClient({ baseUrl: options.baseUrl as string, apiKey: options.apiKey });
    this.chain = options.chain;
  }

  supportsNetwork(network: { protocolFamily: string }): boolean {
    return network.protocolFamily === 'evm';
  }

  private chainOf(wallet: WalletProvider, given: string | undefined): string {
    const n = wallet.getNetwork();
    return given ?? this.chain ?? CHAINS[n.networkId ?? ''] ?? n.networkId ?? 'base';
  }

  async guardAction(wallet: WalletProvider, input: z.infer<typeof GuardSchema>): Promise<string> {
    return answerText(async () => {
      const { to, value, data, chain, ...rest } = GuardSchema.parse(input);
      const answer = await this.client.guard(
        {
          ...rest,
          chain: this.chainOf(wallet, chain),
          ...(to || data
            ? { transaction: { from: wallet.getAddress(), to, value: value ?? '0', data: data ?? '0x' } }
            : {}),
        },
        { idempotencyKey: crypto.randomUUID() },
      );
      return {
        verdict: answer.verdict,
        risk: answer.risk,
        confidence: answer.confidence,
        expires_in: answer.expires_in,
        reasons: answer.failure_modes,
        retry_after_s: answer.decision?.retry_after_s,
        summary: answer.decision?.summary ?? answer.reasoning,
      };
    });
  }

  async screenAction(wallet: WalletProvider, input: z.infer<typeof ScreenSchema>): Promise<string> {
    return answerText(() => {
      const args = ScreenSchema.parse(input);
      return this.client.screen(
        { ...args, chain: this.chainOf(wallet, args.chain) },
        { idempotencyKey: crypto.randomUUID() },
      );
    });
  }

  async usageAction(input: z.infer<typeof UsageSchema>): Promise<string> {
    return answerText(() => this.client.policyUsage(UsageSchema.parse(input).policy));
  }
}

/** The answer as JSON text; bad arguments or a failed call as `Error: ...`, never a throw. */
async function answerText(run: () => Promise<unknown>): Promise<string> {
  try {
    return JSON.stringify(await run());
  } catch (err) {
    if (err instanceof z.ZodError)
      return `Error: invalid arguments: ${err.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`;
    return `Error: ${(err as Error).message}`;
  }
}

// The actions, declared as AgentKit's @CreateAction decorator would (it reads the parameter types).
const reflect = Reflect as unknown as { defineMetadata(k: string, v: unknown, target: object, key: string): void };
for (const [method, name, description, schema, params] of [
  [
    'guardAction',
    'preflight_guard',
    'Ask preflight whether an on-chain action is safe before taking it. Answers proceed, wait or block with the reasons; act only on proceed.',
    GuardSchema,
    [WalletProvider, Object],
  ],
  [
    'screenAction',
    'preflight_screen',
    'Screen addresses before paying, approving or delegating to them: sanctions lists and lookalikes of known counterparties.',
    ScreenSchema,
    [WalletProvider, Object],
  ],
  [
    'usageAction',
    'preflight_usage',
    'Read how much of a spending policy’s limits is used and how much remains in each window.',
    UsageSchema,
    [Object],
  ],
] as const) {
  const proto = PreflightActionProvider.prototype;
  reflect.defineMetadata('design:paramtypes', params, proto, method);
  const descriptor = Object.getOwnPropertyDescriptor(proto, method) as PropertyDescriptor;
  CreateAction({ name, description, schema: schema as never })(proto, method, descriptor);
  Object.defineProperty(proto, method, descriptor);
}

/** The preflight tools for an AgentKit agent: `preflight_guard`, `preflight_screen`, `preflight_usage`. */
export function preflightActionProvider(options: PreflightActionOptions): PreflightActionProvider {
  return new PreflightActionProvider(options);
}
