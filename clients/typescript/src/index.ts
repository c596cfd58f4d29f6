/**
 * The typed preflight client (docs/client.md). `createClient({ baseUrl, apiKey?, payer? })` calls
 * the service with an API key, or pays each call with x402 through the official `@x402/fetch`
 * client when a payer (a viem account) is given. A paid call carries an x402 payment identifier,
 * kept across its retries, so a retry after a dropped connection gets the kept answer and never
 * pays twice (docs/x402.md §9). A 429 or 503 is retried after its Retry-After (or the body's
 * `retry_after_s`) when that wait is short enough. `verifyAttestation` checks an answer's EIP-712
 * signature and that the signed verdict is the one in the answer (docs/attestations.md).
 */
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { appendPaymentIdentifierToExtensions, generatePaymentId } from '@x402/extensions/payment-identifier';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { type Hex, type LocalAccount, keccak256, recoverTypedDataAddress, toBytes } from 'viem';
import type {
  Attestation,
  BridgeRiskRequest,
  BridgeRiskResponse,
  DecideRequest,
  DecideResponse,
  GuardRequest,
  KeyCreated,
  KeyCreateRequest,
  KeyInfo,
  KeyList,
  PolicyDocument,
  PolicyList,
  PolicyUsage,
  PolicyVersion,
  StablecoinIntelligenceRequest,
  StablecoinIntelligenceResponse,
  VerdictLogEntry,
  VerdictPage,
  YieldRouteOption,
  YieldRoutingRequest,
  YieldRoutingResponse,
  ScreenRequest,
  ScreenResponse,
} from './types.js';

export type {
  Attestation,
  BridgeRiskRequest,
  BridgeRiskResponse,
  DecideRequest,
  DecideResponse,
  GuardRequest,
  KeyCreated,
  KeyCreateRequest,
  KeyInfo,
  KeyList,
  PolicyDocument,
  PolicyList,
  PolicyUsage,
  PolicyVersion,
  StablecoinIntelligenceRequest,
  StablecoinIntelligenceResponse,
  VerdictLogEntry,
  VerdictPage,
  YieldRouteOption,
  YieldRoutingRequest,
  YieldRoutingResponse,
  ScreenRequest,
  ScreenResponse,
};

/**
 * What a method takes: the request schema's required fields, every field with a default optional
 * (the service fills it in). The answers are the full response types.
 */
export type DecideInput = Pick<DecideRequest, 'goal'> & Partial<DecideRequest>;
export type GuardInput = Pick<GuardRequest, 'action'> & Partial<GuardRequest>;
export type ScreenInput = Pick<ScreenRequest, 'addresses'> & Partial<ScreenRequest>;
export type StablecoinPegInput = Partial<StablecoinIntelligenceRequest>;
export type BridgeRiskInput = Pick<BridgeRiskRequest, 'bridge_status_urls'> & Partial<BridgeRiskRequest>;
export type YieldRouteInput = Omit<Partial<YieldRoutingRequest>, 'options'> & {
  options: Array<Pick<YieldRouteOption, 'name' | 'apy'> & Partial<YieldRouteOption>>;
};

export interface ClientOptions {
  /** The service, e.g. `https://preflight.example.com`. */
  baseUrl: string;
  /** Sent as `x-api-key`; takes precedence over paying. */
  apiKey?: string;
  /** Pays each call with x402 (0.01 USDC on Base) when given and no key is. */
  payer?: LocalAccount;
  /** Attempts after the first, for dropped connections, 429 and 503 (default 2). */
  retries?: number;
  /** The longest Retry-After the client waits for; a longer one is thrown (default 30 s). */
  maxRetryWaitS?: number;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
}

/** A non-2xx answer: its status, body and, when the service named one, the wait before retrying. */
export class PreflightError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly retryAfterS: number | null,
  ) {
    super(`preflight answered ${status}: ${detailOf(body)}`);
    this.name = 'PreflightError';
  }
}

/** Per-call options of a POST. */
export interface CallOptions {
  /**
   * Sent as `Idempotency-Key` (1–255 visible ASCII), the same on every retry of the call: a repeat
   * the service has already answered gets that answer again and is not counted twice.
   */
  idempotencyKey?: string;
}

export interface PreflightClient {
  guard(req: GuardInput, call?: CallOptions): Promise<DecideResponse>;
  decide(req: DecideInput): Promise<DecideResponse>;
  /** Screens addresses against the sanctions list, the blocklists and the known counterparties. */
  screen(req: ScreenInput, call?: CallOptions): Promise<ScreenResponse>;
  stablecoinPeg(req: StablecoinPegInput): Promise<StablecoinIntelligenceResponse>;
  bridgeRisk(req: BridgeRiskInput): Promise<BridgeRiskResponse>;
  yieldRoute(req: YieldRouteInput): Promise<YieldRoutingResponse>;

  // Account management (docs/policies.md): free, with the account's owner key (an agent key may
  // read its own policy and usage and dry-run under it). x402 cannot pay for these.
  /** A new agent key, optionally bound to a policy; `api_key` is shown only in this answer. */
  createKey(req: KeyCreateRequest): Promise<KeyCreated>;
  listKeys(): Promise<KeyList>;
  /** Binds a key to a policy by name, or to none with null. */
  updateKey(id: string, policy: string | null): Promise<KeyInfo>;
  /** Revokes an agent key: refused on every instance within 5 s. */
  revokeKey(id: string): Promise<void>;
  /** Stores the document as the policy's next version, or answers the current one when equal. */
  putPolicy(name: string, document: PolicyDocument): Promise<PolicyVersion>;
  getPolicy(name: string): Promise<PolicyVersion>;
  getPolicyVersion(name: string, version: number): Promise<PolicyVersion>;
  listPolicies(): Promise<PolicyList>;
  deletePolicy(name: string): Promise<void>;
  policyUsage(name: string): Promise<PolicyUsage>;
  /** What the guard would answer under the policy: `decision.dry_run`, no reservation, no attestation; one call. */
  evaluatePolicy(name: string, req: GuardInput): Promise<DecideResponse>;
  /** One page of the account's verdict log, newest first (owner key only; docs/policies.md §10). */
  verdicts(query?: VerdictQuery): Promise<VerdictPage>;
}

/** The filters and page of GET /v1/verdicts; pass a page's `next_cursor` as `cursor` for the next. */
export interface VerdictQuery {
  limit?: number;
  cursor?: string;
  /** A key id of the account. */
  key?: string;
  verdict?: 'proceed' | 'wait' | 'block';
  /** RFC 3339: answers at or after this time. */
  since?: string;
}

const PATHS = {
  guard: '/v1/guard',
  decide: '/v1/decide',
  screen: '/v1/screen',
  stablecoinPeg: '/v1/agents/stablecoin-intelligence/analyze',
  bridgeRisk: '/v1/agents/bridge-risk/analyze',
  yieldRoute: '/v1/agents/yield-routing/recommend',
} as const;

function detailOf(body: unknown): string {
  const d = (body as { detail?: unknown } | null)?.detail;
  if (typeof d === 'string') return d;
  return JSON.stringify(d ?? body).slice(0, 300);
}

/** Seconds to wait from a Retry-After header (seconds or an HTTP date) or a body's `retry_after_s`. */
function retryAfter(res: Response, body: unknown): number | null {
  const h = res.headers.get('retry-after');
  if (h !== null) {
    if (/^\d+$/.test(h.trim())) return Number(h.trim());
    const at = Date.parse(h);
    if (!Number.isNaN(at)) return Math.max(0, Math.ceil((at - Date.now()) / 1000));
  }
  const b = body as { retry_after_s?: unknown; detail?: { retry_after_s?: unknown } } | null;
  const s = b?.retry_after_s ?? b?.detail?.retry_after_s;
  return typeof s === 'number' && s >= 0 ? s : null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createClient(opts: ClientOptions): PreflightClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const retries = opts.retries ?? 2;
  const maxWaitS = opts.maxRetryWaitS ?? 30;
  const plain = opts.fetch ?? fetch;
  const paying = opts.apiKey === undefined && opts.payer !== undefined;

  /** A fetch that pays with x402 under one payment identifier, the same for every retry of one call. */
  function paidFetch(paymentId: string): typeof fetch {
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: opts.payer as LocalAccount });
    client.onBeforePaymentCreation(async (ctx) => {
      if (ctx.paymentRequired.extensions)
        appendPaymentIdentifierToExtensions(ctx.paymentRequired.extensions, paymentId);
    });
    return wrapFetchWithPayment(plain, client) as typeof fetch;
  }

  async function call<T>(
    path: string,
    body: unknown,
    method = 'POST',
    keyed = false,
    options: CallOptions = {},
  ): Promise<T> {
    if (keyed && opts.apiKey === undefined)
      throw new PreflightError(401, { detail: `${method} ${path} needs an API key; x402 cannot pay for it` }, null);
    const send = paying && !keyed ? paidFetch(generatePaymentId()) : plain;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (opts.apiKey !== undefined) headers['x-api-key'] = opts.apiKey;
    // One Idempotency-Key for every attempt of a keyed POST (the caller's, else a fresh one): a retry
    // after a dropped connection gets the first answer and is neither counted nor reserved twice
    // (docs/policies.md §9).
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    else if (opts.apiKey !== undefined && method === 'POST') headers['idempotency-key'] = generatePaymentId();
    const text = body === undefined ? undefined : JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await send(base + path, { method, headers, body: text });
      } catch (err) {
        // A dropped connection or a refused one: the same call again (a paid one under the same id).
        if (attempt >= retries) throw err;
        await sleep(200 * 2 ** attempt);
        continue;
      }
      const raw = await res.text();
      if (res.status === 204) return undefined as T;
      let parsed: unknown = raw;
      try {
        parsed = JSON.parse(raw);
      } catch {
        /* not JSON: kept as text */
      }
      if (res.ok) return parsed as T;
      const wait = retryAfter(res, parsed);
      if ((res.status === 429 || res.status === 503) && attempt < retries && wait !== null && wait <= maxWaitS) {
        await sleep(wait * 1000);
        continue;
      }
      throw new PreflightError(res.status, parsed, wait);
    }
  }

  return {
    guard: (req, options) => call(PATHS.guard, req, 'POST', false, options),
    decide: (req) => call(PATHS.decide, req),
    stablecoinPeg: (req) => call(PATHS.stablecoinPeg, req),
    bridgeRisk: (req) => call(PATHS.bridgeRisk, req),
    yieldRoute: (req) => call(PATHS.yieldRoute, req),
    screen: (req, options) => call(PATHS.screen, req, 'POST', false, options),
    createKey: (req) => call('/v1/keys', req, 'POST', true),
    listKeys: () => call('/v1/keys', undefined, 'GET', true),
    updateKey: (id, policy) => call(`/v1/keys/${enc(id)}`, { policy }, 'PATCH', true),
    revokeKey: (id) => call(`/v1/keys/${enc(id)}`, undefined, 'DELETE', true),
    putPolicy: (name, document) => call(`/v1/policies/${enc(name)}`, document, 'PUT', true),
    getPolicy: (name) => call(`/v1/policies/${enc(name)}`, undefined, 'GET', true),
    getPolicyVersion: (name, version) =>
      call(`/v1/policies/${enc(name)}/versions/${enc(String(version))}`, undefined, 'GET', true),
    listPolicies: () => call('/v1/policies', undefined, 'GET', true),
    deletePolicy: (name) => call(`/v1/policies/${enc(name)}`, undefined, 'DELETE', true),
    policyUsage: (name) => call(`/v1/policies/${enc(name)}/usage`, undefined, 'GET', true),
    evaluatePolicy: (name, req) => call(`/v1/policies/${enc(name)}/evaluate`, req, 'POST', true),
    verdicts: (query = {}) => {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v));
      const qs = q.toString();
      return call(`/v1/verdicts${qs === '' ? '' : `?${qs}`}`, undefined, 'GET', true);
    },
  };
}

const enc = encodeURIComponent;

const VERDICT_TYPES = {
  Verdict: [
    { name: 'id', type: 'bytes32' },
    { name: 'verdict', type: 'uint8' },
    { name: 'risk', type: 'uint8' },
    { name: 'confidenceBps', type: 'uint16' },
    { name: 'requestHash', type: 'bytes32' },
    { name: 'actionHash', type: 'bytes32' },
    { name: 'policyHash', type: 'bytes32' },
    { name: 'issuedAt', type: 'uint64' },
    { name: 'expiresAt', type: 'uint64' },
  ],
} as const;
const VERDICTS = { proceed: 0, wait: 1, block: 2 } as const;
const RISKS = { low: 0, medium: 1, high: 2 } as const;
const ZERO_HASH = `0x${'0'.repeat(64)}`;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;

export interface VerifyOptions {
  /** The address the service signs with (its /v1/capabilities `attestation.signer`). */
  signer: string;
  /** The request body exactly as sent: then the signed request hash must be its keccak256. */
  requestBody?: string | Uint8Array;
  /**
   * The policy hash the answer must be signed for (0x + 64 hex): the hash of the policy version
   * your key is bound to, or the one your PreflightAccount is pinned to. 32 zero bytes demands an
   * answer made under no policy.
   */
  policyHash?: string;
}

/**
 * True when `answer` carries an EIP-712 attestation (domain version 2) that recovers to `signer`
 * over the Preflight domain, and the signed verdict, risk, confidence, lifetime and policy hash
 * are the ones in the answer (the policy hash is `decision.policy.hash`, 32 zero bytes for an
 * answer under no policy). A changed field, a changed signature or another signer gives false.
 */
export async function verifyAttestation(answer: DecideResponse, opts: VerifyOptions): Promise<boolean> {
  const a = answer?.attestation as
    | {
        signer?: string;
        signature?: string;
        typed_data?: { domain?: Record<string, unknown>; primaryType?: string; message?: Record<string, unknown> };
      }
    | undefined;
  const td = a?.typed_data;
  const m = td?.message;
  if (!a || typeof a.signature !== 'string' || !td || !m || td.primaryType !== 'Verdict') return false;
  const d = td.domain ?? {};
  if (d.name !== 'Preflight' || d.version !== '2' || 'verifyingContract' in d) return false;
  const policy = (answer.decision as { policy?: { hash?: unknown } } | undefined)?.policy?.hash ?? ZERO_HASH;
  const signedPolicy = m.policyHash;
  if (typeof policy !== 'string' || typeof signedPolicy !== 'string' || !BYTES32.test(signedPolicy)) return false;
  if (signedPolicy.toLowerCase() !== policy.toLowerCase()) return false;
  if (opts.policyHash !== undefined && signedPolicy.toLowerCase() !== opts.policyHash.toLowerCase()) return false;
  try {
    const num = (v: unknown) => BigInt(v as string | number);
    if (num(m.verdict) !== BigInt(VERDICTS[answer.verdict])) return false;
    if (num(m.risk) !== BigInt(RISKS[answer.risk])) return false;
    if (num(m.confidenceBps) !== BigInt(Math.round(answer.confidence * 10000))) return false;
    if (num(m.expiresAt) - num(m.issuedAt) !== BigInt(answer.expires_in)) return false;
    if (opts.requestBody !== undefined) {
      const bytes = typeof opts.requestBody === 'string' ? toBytes(opts.requestBody) : opts.requestBody;
      if (String(m.requestHash).toLowerCase() !== keccak256(bytes)) return false;
    }
    const recovered = await recoverTypedDataAddress({
      domain: { name: 'Preflight', version: '2', chainId: num(d.chainId) },
      types: VERDICT_TYPES,
      primaryType: 'Verdict',
      message: {
        id: m.id as Hex,
        verdict: Number(m.verdict),
        risk: Number(m.risk),
        confidenceBps: Number(m.confidenceBps),
        requestHash: m.requestHash as Hex,
        actionHash: m.actionHash as Hex,
        policyHash: signedPolicy as Hex,
        issuedAt: num(m.issuedAt),
        expiresAt: num(m.expiresAt),
      },
      signature: a.signature as Hex,
    });
    const want = opts.signer.toLowerCase();
    return recovered.toLowerCase() === want && (a.signer ?? '').toLowerCase() === want;
  } catch {
    return false;
  }
}

export {
  executeArgs,
  type GuardAuthorization,
  type GuardTransaction,
  type GuardTypedData,
  inferTransactionAction,
  inferTypedDataAction,
  PreflightAttestationError,
  PreflightBlockedError,
  PreflightWaitError,
  WalletGuard,
  type WalletGuardOptions,
} from './wallet-guard.js';
