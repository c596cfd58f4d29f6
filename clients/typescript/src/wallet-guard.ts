/**
 * The guard every wallet wrapper puts in front of its key (docs/wallets.md §2): the concrete
 * artefact about to be signed (a prepared transaction, typed data, an EIP-7702 authorization) goes
 * to `POST /v1/guard` with the chain, an inferred action and an `Idempotency-Key`; a `proceed`
 * lets the signature happen, a `block` throws `PreflightBlockedError`, a `wait` is thrown as
 * `PreflightWaitError` or asked again after `retry_after_s` within `maxWaitMs`. An answer the
 * service could not give (unreachable, 5xx, any non-2xx) is thrown as it came: nothing is signed
 * without an answer. The viem, ethers and AgentKit packages are thin adapters over this class.
 */
import type { Hex } from 'viem';
import { recoverAuthorizationAddress } from 'viem/utils';
import type { Attestation, DecideResponse, GuardRequest } from './types.js';
import { type CallOptions, createClient, type GuardInput, type PreflightClient, verifyAttestation } from './index.js';

/** The options every wallet wrapper takes, with the same names in all three (docs/wallets.md §1). */
export interface WalletGuardOptions {
  /** The service, e.g. `https://preflight.example.com` (or give `client`). */
  baseUrl?: string;
  /** Sent as `x-api-key` (with `baseUrl`). */
  apiKey?: string;
  /** A configured typed client, instead of `baseUrl` and `apiKey` (for x402 payment, say). */
  client?: Pick<PreflightClient, 'guard'>;
  /** The guard's chain name (`base`, `ethereum`, ...) when the artefact's chain id cannot say. */
  chain?: string;
  /** The service's signer address: an answer whose attestation does not recover it is refused. */
  attester?: string;
  /**
   * With `attester`: the policy hash answers must be signed for (the policy version the key is bound
   * to; 32 zero bytes for none), as a PreflightAccount pins it. Unset: any policy.
   */
  policyHash?: string;
  /** On `wait`: `"throw"` (the default) or `"retry"` after `retry_after_s`, within `maxWaitMs`. */
  onWait?: 'throw' | 'retry';
  /** How long `"retry"` keeps asking, in milliseconds (default 30,000). */
  maxWaitMs?: number;
  /** Called with every answer (proceed, wait or block) before the wrapper acts on it. */
  onAnswer?: (answer: DecideResponse) => void | Promise<void>;
  /** Fields added to every guard request, e.g. `known_safe_addresses`, `amount_usd`, `rpc_url`. */
  request?: Partial<Omit<GuardRequest, 'transaction' | 'typed_data' | 'authorization'>>;
}

/** What every refusal carries: the whole answer, its verdict, its reasons and its attestation. */
abstract class PreflightAnswerError extends Error {
  readonly verdict: DecideResponse['verdict'];
  /** The answer's `failure_modes`, `"<check>:<reason>"` each. */
  readonly reasons: string[];
  readonly attestation: Attestation | undefined;
  constructor(
    readonly answer: DecideResponse,
    message: string,
  ) {
    super(message);
    this.verdict = answer.verdict;
    this.reasons = [...(answer.failure_modes ?? [])];
    this.attestation = answer.attestation;
  }
}

/** The guard answered `block`: nothing was signed. */
export class PreflightBlockedError extends PreflightAnswerError {
  constructor(answer: DecideResponse) {
    super(answer, `preflight blocked the signature: ${reasonsText(answer)}`);
    this.name = 'PreflightBlockedError';
  }
}

/** The guard answered `wait` and the wrapper gave up (at once, or after `maxWaitMs`): nothing was signed. */
export class PreflightWaitError extends PreflightAnswerError {
  /** The answer's `decision.retry_after_s`. */
  readonly retryAfterS: number | null;
  constructor(answer: DecideResponse) {
    super(answer, `preflight says wait: ${reasonsText(answer)}`);
    this.name = 'PreflightWaitError';
    const s = answer.decision?.retry_after_s;
    this.retryAfterS = typeof s === 'number' ? s : null;
  }
}

/** `attester` was pinned and the answer's attestation does not recover it: nothing was signed. */
export class PreflightAttestationError extends PreflightAnswerError {
  constructor(answer: DecideResponse, attester: string) {
    super(answer, `preflight answer is not signed by the pinned attester ${attester}`);
    this.name = 'PreflightAttestationError';
  }
}

function reasonsText(answer: DecideResponse): string {
  const r = answer.failure_modes ?? [];
  return r.length > 0 ? r.join(', ') : String(answer.decision?.summary ?? answer.verdict);
}

/** The chain names the guard knows, by EVM chain id (`GET /v1/capabilities`, `attestation.domain_chain_id.chains`). */
const CHAIN_NAMES: Readonly<Record<number, string>> = {
  8453: 'base',
  1: 'ethereum',
  10: 'optimism',
  42161: 'arbitrum',
  137: 'polygon',
  56: 'bsc',
  43114: 'avalanche',
  84532: 'base-sepolia',
  11155111: 'sepolia',
};

type Num = bigint | number | string;

/** A transaction about to be signed, in the shape the wrappers gather from their frameworks. */
export interface GuardTransaction {
  from: string;
  to?: string | null;
  value?: Num | null;
  data?: string | null;
  gas?: Num | null;
  chainId?: Num | null;
  authorizationList?: GuardAuthorization[];
}

/**
 * An EIP-7702 authorization: who delegates, to what, on which chain, at which nonce. Without
 * `authority`, a signed one (viem's `r`, `s`, `yParity`) names its signer by recovery, and an
 * unsigned one is the transaction sender's.
 */
export interface GuardAuthorization {
  authority?: string;
  address: string;
  chainId: Num;
  nonce?: Num | null;
  r?: string;
  s?: string;
  yParity?: number;
}

/** EIP-712 typed data in the `eth_signTypedData_v4` shape (numbers may be bigints). */
export interface GuardTypedData {
  domain?: Record<string, unknown>;
  types: Record<string, ReadonlyArray<{ name: string; type: string }>>;
  primaryType: string;
  message: Record<string, unknown>;
}

// Selectors an action is inferred from (docs/wallets.md §2).
const TRANSFER_SELECTORS = new Set(['0xa9059cbb']); // transfer(address,uint256)
const APPROVE_SELECTORS = new Set([
  '0x095ea7b3', // approve(address,uint256)
  '0xa22cb465', // setApprovalForAll(address,bool)
  '0x39509351', // increaseAllowance(address,uint256)
  '0x87517c45', // Permit2 approve(address,address,uint160,uint48)
]);

/** `transfer` for plain value or an ERC-20 `transfer`, `approve` for an approval, else `contract_call`. */
export function inferTransactionAction(tx: Pick<GuardTransaction, 'value' | 'data'>): GuardRequest['action'] {
  const data = (tx.data ?? '0x').toLowerCase();
  const selector = data.slice(0, 10);
  if (data.length >= 10 && TRANSFER_SELECTORS.has(selector)) return 'transfer';
  if (data.length >= 10 && APPROVE_SELECTORS.has(selector)) return 'approve';
  if (data === '0x' && BigInt(tx.value ?? 0) > 0n) return 'transfer';
  return 'contract_call';
}

/** A message that grants a spender (a permit of any kind) is `approve`; one that moves value now (EIP-3009) is `transfer`. */
export function inferTypedDataAction(td: GuardTypedData): GuardRequest['action'] {
  if (td.primaryType === 'TransferWithAuthorization' || td.primaryType === 'ReceiveWithAuthorization')
    return 'transfer';
  const fields = td.types[td.primaryType] ?? [];
  return fields.some((f) => f.name === 'spender' || f.name === 'allowed') ? 'approve' : 'contract_call';
}

type ApprovalFields = Pick<GuardRequest, 'spender' | 'approval_amount'>;
const MAX_UINT256 = (2n ** 256n - 1n).toString();

/** The 32-byte word `i` of calldata after the selector, as hex without 0x. */
const word = (data: string, i: number): string => data.slice(10 + 64 * i, 10 + 64 * (i + 1));

/**
 * The spender and amount of an ERC-20 or Permit2 approval in calldata, for the guard's
 * `approval_amount` check (docs/rules.md §4); nothing for other calls.
 */
export function approvalOfCall(data: string | null | undefined): ApprovalFields {
  const d = (data ?? '0x').toLowerCase();
  const selector = d.slice(0, 10);
  const address = (w: string) => `0x${w.slice(24)}`;
  if ((selector === '0x095ea7b3' || selector === '0x39509351') && d.length >= 138)
    return { spender: address(word(d, 0)), approval_amount: BigInt(`0x${word(d, 1)}`).toString() };
  // setApprovalForAll: every token of the collection, so as much as an unlimited approval; false revokes.
  if (selector === '0xa22cb465' && d.length >= 138)
    return { spender: address(word(d, 0)), approval_amount: BigInt(`0x${word(d, 1)}`) === 0n ? '0' : MAX_UINT256 };
  if (selector === '0x87517c45' && d.length >= 202)
    return { spender: address(word(d, 1)), approval_amount: BigInt(`0x${word(d, 2)}`).toString() };
  return {};
}

/** The spender and amount a permit grants (EIP-2612 `value`, Permit2 `details.amount`, DAI `allowed`). */
export function approvalOfTypedData(td: GuardTypedData): ApprovalFields {
  const m = td.message;
  if (typeof m.spender !== 'string') return {};
  const details = m.details as { amount?: Num } | undefined;
  const amount = m.value ?? details?.amount ?? (m.allowed === true ? MAX_UINT256 : undefined);
  if (amount === undefined || (typeof amount !== 'bigint' && typeof amount !== 'number' && typeof amount !== 'string'))
    return { spender: m.spender };
  try {
    return { spender: m.spender, approval_amount: BigInt(amount).toString() };
  } catch {
    return { spender: m.spender };
  }
}

const dec = (v: Num | null | undefined): string => BigInt(v ?? 0).toString();
const small = (v: Num | null | undefined): number | null => (v === null || v === undefined ? null : Number(BigInt(v)));

/** JSON for typed data: bigints as decimal strings, as wallets and the service accept them. */
function plain<T>(v: T): T {
  return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x))) as T;
}

/** Gas the guard simulates with: within its bounds (21,000 to 100,000,000), else left to the node. */
function gasOf(g: Num | null | undefined): number | null {
  const n = small(g);
  return n !== null && n >= 21_000 && n <= 100_000_000 ? n : null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The guard of one wallet: ask about an artefact, return the `proceed` answer or throw. */
export class WalletGuard {
  readonly options: Readonly<WalletGuardOptions>;
  private readonly client: Pick<PreflightClient, 'guard'>;

  constructor(options: WalletGuardOptions) {
    if (!options.client && !options.baseUrl) throw new TypeError('preflight guard: give `baseUrl` or `client`');
    if (options.onWait !== undefined && options.onWait !== 'throw' && options.onWait !== 'retry')
      throw new TypeError(`preflight guard: onWait is "throw" or "retry", not ${JSON.stringify(options.onWait)}`);
    this.options = { ...options };
    this.client = options.client ?? createClient({ baseUrl: options.baseUrl as string, apiKey: options.apiKey });
  }

  /** The guard's chain name for an EVM chain id: `chain` when given, else the known name of the id. */
  chainName(chainId: Num | null | undefined): string {
    if (this.options.chain) return this.options.chain;
    const id = chainId === null || chainId === undefined ? null : Number(BigInt(chainId));
    if (id === null) throw new TypeError('preflight guard: the chain is unknown; pass the `chain` option');
    const name = CHAIN_NAMES[id];
    if (!name)
      throw new TypeError(`preflight guard: chain id ${id} has no guard chain name; pass the \`chain\` option`);
    return name;
  }

  /** Asks about a transaction before it is signed. */
  async transaction(tx: GuardTransaction): Promise<DecideResponse> {
    const action = inferTransactionAction(tx);
    const authorities = await Promise.all(
      (tx.authorizationList ?? []).map(
        async (a) =>
          a.authority ??
          (a.r !== undefined
            ? await recoverAuthorizationAddress({
                authorization: {
                  address: a.address as Hex,
                  chainId: Number(BigInt(a.chainId)),
                  nonce: Number(BigInt(a.nonce ?? 0)),
                  r: a.r as Hex,
                  s: a.s as Hex,
                  yParity: a.yParity ?? 0,
                },
              })
            : tx.from),
      ),
    );
    return this.ask({
      action,
      ...(action === 'approve' ? approvalOfCall(tx.data) : {}),
      chain: this.chainName(tx.chainId),
      transaction: {
        from: tx.from,
        to: tx.to ?? null,
        value: dec(tx.value),
        data: (tx.data ?? '0x') as Hex,
        gas: gasOf(tx.gas),
        ...(tx.authorizationList?.length
          ? {
              authorization_list: tx.authorizationList.map((a, i) => ({
                authority: authorities[i],
                address: a.address,
                chain_id: Number(BigInt(a.chainId)),
                nonce: small(a.nonce),
              })),
            }
          : {}),
      },
    });
  }

  /**
   * Asks about EIP-712 typed data before it is signed, exactly as it will be signed; its domain's
   * chain id names the chain, else `walletChainId` (the wallet's chain).
   */
  typedData(td: GuardTypedData, walletChainId?: Num | null): Promise<DecideResponse> {
    const chainId = (td.domain?.chainId as Num | undefined) ?? walletChainId;
    const action = inferTypedDataAction(td);
    return this.ask({
      action,
      ...(action === 'approve' ? approvalOfTypedData(td) : {}),
      chain: this.chainName(chainId),
      typed_data: plain({
        domain: td.domain ?? {},
        types: td.types as Record<string, Array<{ name: string; type: string }>>,
        primaryType: td.primaryType,
        message: td.message,
      }),
    });
  }

  /** Asks about an EIP-7702 authorization before it is signed. A chain id of 0 is judged on `chain` (default base). */
  authorization(a: GuardAuthorization & { authority: string }): Promise<DecideResponse> {
    const id = Number(BigInt(a.chainId));
    return this.ask({
      action: 'contract_call',
      chain: id === 0 ? (this.options.chain ?? 'base') : this.chainName(id),
      authorization: { authority: a.authority, address: a.address, chain_id: id, nonce: small(a.nonce) },
    });
  }

  /** One guard question to its end: `proceed` returned; `block`, a given-up `wait` or a wrong signer thrown. */
  async ask(artefact: GuardInput): Promise<DecideResponse> {
    const req = { ...this.options.request, ...artefact } as GuardInput;
    const body = JSON.stringify(req);
    const until = Date.now() + (this.options.maxWaitMs ?? 30_000);
    for (;;) {
      // One key per question: a dropped connection retried by the client is the same question; asking
      // again after a wait is a new one (the service would answer a repeated key with the kept wait).
      const call: CallOptions = { idempotencyKey: crypto.randomUUID() };
      const answer = await this.client.guard(req, call);
      const attester = this.options.attester;
      const policyHash = this.options.policyHash;
      if (
        attester !== undefined &&
        !(await verifyAttestation(answer, {
          signer: attester,
          requestBody: body,
          ...(policyHash ? { policyHash } : {}),
        }))
      )
        throw new PreflightAttestationError(answer, attester);
      await this.options.onAnswer?.(answer);
      if (answer.verdict === 'proceed') return answer;
      if (answer.verdict === 'block') throw new PreflightBlockedError(answer);
      if (answer.verdict !== 'wait') throw new PreflightBlockedError(answer); // an answer we cannot read is no proceed
      const afterMs = Math.max(1, Number(answer.decision?.retry_after_s ?? 1)) * 1000;
      if (this.options.onWait !== 'retry' || Date.now() + afterMs > until) throw new PreflightWaitError(answer);
      await sleep(afterMs);
    }
  }
}

/**
 * The arguments of PreflightAccount's `execute(to, value, data, v, signature)` for a `proceed`
 * answer: `v` is the signed `Verdict` message in the order of its own `types` (docs/attestations.md
 * §1), so a later version of the struct is followed without a change here. Also the function's ABI.
 */
export function executeArgs(
  answer: DecideResponse,
  call: { to: string; value?: Num | null; data?: string | null },
): { abi: readonly [Record<string, unknown>]; args: readonly [string, bigint, Hex, Record<string, unknown>, Hex] } {
  const att = answer.attestation;
  if (!att) throw new TypeError('preflight: the answer carries no attestation (the operator turned signing off)');
  const fields = att.typed_data.types.Verdict;
  const message = att.typed_data.message as Record<string, unknown>;
  const v: Record<string, unknown> = {};
  for (const f of fields) v[f.name] = /^u?int/.test(f.type) ? BigInt(message[f.name] as string) : message[f.name];
  const abi = [
    {
      type: 'function',
      name: 'execute',
      stateMutability: 'nonpayable',
      inputs: [
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'data', type: 'bytes' },
        { name: 'v', type: 'tuple', components: fields.map((f) => ({ name: f.name, type: f.type })) },
        { name: 'signature', type: 'bytes' },
      ],
      outputs: [{ name: '', type: 'bytes' }],
    },
  ] as const;
  return {
    abi,
    args: [call.to, BigInt(call.value ?? 0), (call.data ?? '0x') as Hex, v, att.signature as Hex],
  };
}
