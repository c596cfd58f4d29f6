/**
 * delegation_scan (guard-only: planned when a guard request carries `authorization` or
 * `transaction.authorization_list`): each EIP-7702 delegate is looked at on the chain's node
 * (docs/action-scan.md §6). Per delegate, concurrently under the request's deadline: its code
 * (eth_getCode), the sweep probe (two simulations with the delegation installed as a state
 * override) and its source (the lookup of contract_verified). The rules of src/scan/delegation.ts
 * judge each; one result for all, the worst deciding.
 */
import { CHAIN_IDS } from '../config.js';
import { rpcBatch, rpcSource, type RpcOptions } from '../net/rpc.js';
import { OldestFirst } from '../oldest-first.js';
import { type ApprovalChange, type AssetChange, approvalChanges, assetChanges } from '../scan/changes.js';
import {
  type Authorization,
  type DelegationFacts,
  type DelegationVerdict,
  SOURCE_INDEPENDENT,
  ZERO_ADDRESS,
  delegationMessage,
  designator,
  judgeDelegation,
} from '../scan/delegation.js';
import { type Simulation, simulate } from '../scan/simulate.js';
import { valueChanges } from '../scan/value.js';
import type { UpstreamResult } from '../net/result.js';
import { lookupSource, type SourceLookup, VERIFIED_FAIL_TTL_S, VERIFIED_PASS_TTL_S } from './contract_verified.js';
import { checkError, fromUpstreamFail, neverThrow } from './outcome.js';
import { NATIVE_SYMBOLS, SIMULATION_TTL_S } from './transaction_simulation.js';
import { isOperatorUrl } from './trust.js';
import type { CheckContext, CheckModule, CheckOutcome, DelegationScanCheck } from './types.js';

/**
 * The sweep probe's sender: an address nobody holds a key for, given coin by a balance override.
 * keccak256("preflight.delegation-probe")[12:].
 */
export const PROBE_SENDER = '0x6f6240b26a99c34ecbb4f14ea3e24ce2ae9553e4';
/** What the probe sends into the authority: 1 native coin. */
export const PROBE_VALUE = 10n ** 18n;

/** Source lookups are kept as contract_verified keeps its answers: an hour verified, 5 minutes not. */
const sources = new Map<string, { at: number; ttlMs: number; r: SourceLookup }>();
const sourcesOldest = new OldestFirst(sources);
async function cachedSource(ctx: CheckContext, chainId: number, address: string): Promise<SourceLookup> {
  const key = `${chainId}:${address.toLowerCase()}`;
  const hit = sources.get(key);
  if (hit && performance.now() - hit.at < hit.ttlMs) return hit.r;
  const r = await lookupSource(ctx.config, chainId, address, ctx.signal);
  if (r.verified !== null) {
    if (sources.size >= 10_000) sourcesOldest.evict();
    sources.set(key, {
      at: performance.now(),
      ttlMs: 1000 * (r.verified ? VERIFIED_PASS_TTL_S : VERIFIED_FAIL_TTL_S),
      r,
    });
  }
  return r;
}

/** Forget kept source lookups (tests). */
export function forgetSources(): void {
  sources.clear();
}

export interface ProbeResult {
  /** false when only eth_call answered: it says whether a call reverts, not what it moves. */
  effectsKnown: boolean;
  method: string | null;
  block: number | null;
  assets: AssetChange[];
  approvals: ApprovalChange[];
}

/**
 * The sweep probe: (a) 1 native coin paid into the authority by a fresh address, (b) a call from
 * the authority to itself with empty calldata, each with the authority's code set to the
 * designator. What leaves the authority in either is what the delegate does on its own.
 */
export async function probe(url: string, a: Authorization, rpcOpts: RpcOptions): Promise<UpstreamResult<ProbeResult>> {
  const authority = a.authority.toLowerCase();
  const code = { code: designator(a.address) };
  const [pay, self] = await Promise.all([
    simulate(
      url,
      { from: PROBE_SENDER, to: authority, value: PROBE_VALUE, data: '0x' },
      {
        ...rpcOpts,
        overrides: { [authority]: code, [PROBE_SENDER]: { balance: `0x${(2n * PROBE_VALUE).toString(16)}` } },
      },
    ),
    simulate(
      url,
      { from: authority, to: authority, value: 0n, data: '0x' },
      { ...rpcOpts, overrides: { [authority]: code } },
    ),
  ]);
  if (!pay.ok) return pay;
  if (!self.ok) return self;
  const seen = (s: Simulation) => ({
    assets: assetChanges(authority, s.logs, s.nativeTransfers).filter((c) => c.direction === 'out'),
    approvals: approvalChanges(authority, s.logs).filter((p) => p.amount !== '0'),
  });
  const x = seen(pay.data);
  const y = seen(self.data);
  return {
    ok: true,
    data: {
      effectsKnown: pay.data.effectsKnown && self.data.effectsKnown,
      method: pay.data.method,
      block: pay.data.block,
      assets: [...x.assets, ...y.assets],
      approvals: [...x.approvals, ...y.approvals],
    },
    source: pay.source,
    latencyMs: Math.max(pay.latencyMs, self.latencyMs),
  };
}

interface Scanned {
  auth: Authorization;
  facts: DelegationFacts;
  verdict: DelegationVerdict;
  /** Set when a call failed and no source-independent fail decides anyway. */
  error: CheckOutcome | null;
  probe: ProbeResult | null;
  source: string | null;
}

async function scanOne(
  check: DelegationScanCheck,
  ctx: CheckContext,
  url: string,
  rpcOpts: RpcOptions,
  listedSet: ReadonlySet<string>,
  a: Authorization,
): Promise<Scanned> {
  const chainId = CHAIN_IDS[check.chain as keyof typeof CHAIN_IDS] ?? null;
  const delegate = a.address.toLowerCase();
  const zero = delegate === ZERO_ADDRESS;
  const listed = !zero && listedSet.has(delegate);
  // The zero address clears a delegation: there is no code to read, probe or look up.
  const [code, probed, src] = zero
    ? [null, null, null]
    : await Promise.all([
        rpcBatch(url, [{ method: 'eth_getCode', params: [delegate, 'latest'] }], rpcOpts),
        probe(url, a, rpcOpts),
        chainId === null ? Promise.resolve(null) : cachedSource(ctx, chainId, delegate),
      ]);
  const errors: CheckOutcome[] = [];
  let hasCode: boolean | null = null;
  if (code) {
    const r = code.ok ? code.data[0] : undefined;
    if (!code.ok) errors.push(fromUpstreamFail(code, 0));
    else if (r?.error || typeof r?.result !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(r.result))
      errors.push(checkError('upstream_bad_response', `${code.source} gave no code for ${delegate}.`, code.source));
    else hasCode = r.result.length > 2;
  }
  const p = probed?.ok ? probed.data : null;
  if (probed && !probed.ok) errors.push(fromUpstreamFail(probed, 0));
  if (p && !p.effectsKnown)
    errors.push(
      checkError(
        'effects_unknown',
        `${probed?.source ?? 'The node'} offers only eth_call: what ${delegate} does with the account cannot be seen, so it cannot be passed.`,
        probed?.source ?? null,
      ),
    );
  if (p) await valueChanges(ctx.config, check.chain, url, rpcOpts, p.assets, ctx.signal);
  // A listed delegate's verdict does not rest on its source: a failed lookup only matters unlisted.
  if (src && src.verified === null && !listed) errors.push(fromUpstreamFail(src.fail, 0));
  if (!zero && !listed && chainId === null)
    errors.push(
      checkError(
        'unknown_chain',
        `Chain ${check.chain} has no chain id: the delegate's source cannot be looked up.`,
        null,
      ),
    );
  const facts: DelegationFacts = {
    delegate,
    chainId: a.chain_id,
    requestChainId: chainId,
    code: hasCode,
    verified: src ? src.verified : null,
    listed,
    sweptAssets: p?.assets ?? [],
    sweptApprovals: p?.approvals ?? [],
  };
  const verdict = judgeDelegation(facts);
  // A fact proven from what did answer decides; otherwise a failed call leaves the delegate
  // unjudged (error), never a pass. A listed delegate does not need its source.
  const decided = verdict.status === 'fail' && verdict.reason !== null && SOURCE_INDEPENDENT.has(verdict.reason);
  const error = decided ? null : (errors[0] ?? null);
  return { auth: a, facts, verdict, error, probe: p, source: code?.source ?? null };
}

const RANK: Record<string, number> = { fail: 3, error: 2, warn: 1, pass: 0 };

export const delegationScan: CheckModule<DelegationScanCheck> = {
  type: 'delegation_scan',
  upstream: ['rpc', 'sourcify', 'etherscan', 'price_provider'],
  run: neverThrow(async (check, ctx) => {
    if (!check.rpc_url)
      return checkError(
        'no_rpc',
        `No rpc_url given and no RPC configured for chain ${check.chain}: the delegation cannot be scanned.`,
        null,
        { observed: { inputs: ['rpc_url', 'RPC_URLS'] } },
      );
    const url = check.rpc_url;
    const rpcOpts: RpcOptions = {
      signal: ctx.signal,
      safe: !isOperatorUrl(ctx.config, url),
      allowPrivate: ctx.config.allowPrivateTargets,
      source: rpcSource(url),
    };
    const listed = new Set([
      ...check.known_safe_addresses.map((a) => a.toLowerCase()),
      ...ctx.config.delegateAllowlist,
    ]);
    const scanned = await Promise.all(check.authorizations.map((a) => scanOne(check, ctx, url, rpcOpts, listed, a)));
    const native = NATIVE_SYMBOLS[check.chain] ?? 'ETH';
    const status = (s: Scanned) => (s.error ? 'error' : s.verdict.status);
    let worst = scanned[0];
    for (const s of scanned) if (RANK[status(s)] > RANK[status(worst)]) worst = s;
    const delegations = scanned.map((s) => ({
      authority: s.auth.authority.toLowerCase(),
      delegate: s.auth.address.toLowerCase(),
      chain_id: s.auth.chain_id,
      nonce: s.auth.nonce,
      code: s.facts.code,
      verified: s.facts.verified,
      listed: s.facts.listed,
      probe: s.probe
        ? {
            method: s.probe.method,
            block: s.probe.block,
            asset_changes: s.probe.assets,
            approval_changes: s.probe.approvals,
          }
        : null,
      status: status(s),
      reason: s.error ? s.error.reason : s.verdict.reason,
      signals: s.verdict.signals.map((x) => x.reason),
    }));
    const observed = {
      delegations,
      signals: [...new Set(scanned.flatMap((s) => s.verdict.signals.map((x) => x.reason)))],
    };
    const expected = {
      listed_delegates: [...listed],
      chain_id: CHAIN_IDS[check.chain as keyof typeof CHAIN_IDS] ?? null,
    };
    if (worst.error)
      return { ...worst.error, observed: { ...(worst.error.observed as object), ...observed }, expected };
    const ctxMsg = { chain: check.chain, native };
    const message =
      scanned.length === 1
        ? delegationMessage(worst.auth, worst.facts, worst.verdict, ctxMsg)
        : `${scanned.length} authorizations; ${delegationMessage(worst.auth, worst.facts, worst.verdict, ctxMsg)}`;
    return {
      status: worst.verdict.status,
      reason: worst.verdict.reason,
      message,
      observed,
      expected,
      source: worst.source,
      ttl_s: SIMULATION_TTL_S,
    };
  }),
};
