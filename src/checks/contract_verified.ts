/**
 * contract_verified: is the contract's source published? With an RPC configured for the chain,
 * an address without code fails `not_a_contract` first. Then the keyless source-verification
 * provider; on its "not verified", the explorer when a key is configured. Verified by either
 * passes (docs/rules.md §2, §7).
 */
import type { ContractVerifiedCheck } from '../generated/types.js';
import type { CheckModule, CheckOutcome } from './types.js';
import type { UpstreamResult } from '../net/result.js';
import { checkError, fromUpstreamFail, neverThrow } from './outcome.js';
import { CHAIN_IDS, type Config } from '../config.js';
import { rpcBatch } from '../net/rpc.js';
import { getEtherscanStatus, getSourcifyStatus, type VerificationStatus } from '../upstreams/verification.js';
import type { RpcReply } from './rpc.js';

export const VERIFIED_PASS_TTL_S = 3600;
export const VERIFIED_FAIL_TTL_S = 300;

export type Verification = VerificationStatus;

export interface VerificationEvidence {
  /** eth_getCode's answer when an RPC is configured for the chain, else undefined. */
  code?: UpstreamResult<RpcReply[]>;
  sourcify: UpstreamResult<Verification>;
  /** Present when the explorer was asked (Sourcify did not say verified and a key is configured). */
  etherscan?: UpstreamResult<Verification>;
}

/** What the code lookup says: false when the address has no code, null when it could not be told. */
function hasCode(code: VerificationEvidence['code']): boolean | null {
  if (code === undefined || !code.ok) return null;
  const r = code.data[0]?.result;
  if (typeof r !== 'string' || !/^0x[0-9a-fA-F]*$/.test(r)) return null;
  return r.length > 2;
}

export function evaluateVerified(check: ContractVerifiedCheck, ev: VerificationEvidence): CheckOutcome {
  const chainId = CHAIN_IDS[check.chain];
  const addr = check.contract_address;
  const code = hasCode(ev.code);
  const observed: Record<string, unknown> = {
    chain_id: chainId,
    has_code: code,
    sourcify: ev.sourcify.ok ? (ev.sourcify.data.match ?? 'not_verified') : 'error',
  };
  if (ev.etherscan)
    observed.etherscan = ev.etherscan.ok
      ? ev.etherscan.data.verified
        ? (ev.etherscan.data.match ?? 'verified')
        : 'not_verified'
      : 'error';
  const expected = { verified: true };
  const on = `${addr} on ${check.chain} (${chainId})`;
  if (code === false) {
    const message = `${on} has no code: it is not a contract.`;
    return {
      status: 'fail',
      reason: 'not_a_contract',
      message,
      observed,
      expected,
      source: ev.code?.source ?? null,
      ttl_s: VERIFIED_FAIL_TTL_S,
    };
  }
  for (const [name, res] of [
    ['Sourcify', ev.sourcify],
    ['the explorer', ev.etherscan],
  ] as const) {
    if (res?.ok && res.data.verified) {
      const message = `${on} is verified on ${name} (${res.data.match ?? 'match'}).`;
      return {
        status: 'pass',
        reason: null,
        message,
        observed,
        expected,
        source: res.source,
        ttl_s: VERIFIED_PASS_TTL_S,
      };
    }
  }
  // Not verified anywhere we could ask. If a source could not answer, "not verified" is unproven.
  const failed = [ev.sourcify, ev.etherscan].find(
    (r): r is Extract<UpstreamResult<Verification>, { ok: false }> => r !== undefined && !r.ok,
  );
  if (failed) return fromUpstreamFail(failed, VERIFIED_FAIL_TTL_S, observed);
  const message = ev.etherscan
    ? `${on} is not verified: neither Sourcify nor the explorer has its source.`
    : `${on} is not verified: Sourcify does not have its source (no explorer key configured).`;
  return {
    status: 'fail',
    reason: 'not_verified',
    message,
    observed,
    expected,
    source: (ev.etherscan ?? ev.sourcify).source,
    ttl_s: VERIFIED_FAIL_TTL_S,
  };
}

export const contractVerified: CheckModule<ContractVerifiedCheck> = {
  type: 'contract_verified',
  upstream: ['sourcify', 'etherscan'],
  run: neverThrow(async (check, ctx) => {
    const chainId = CHAIN_IDS[check.chain];
    if (chainId === undefined)
      return checkError('unknown_chain', `Unknown chain ${JSON.stringify(check.chain)}.`, null);
    const rpcUrl = ctx.config.rpcUrls[check.chain];
    // The code lookup and Sourcify run side by side; the operator's RPC URL is trusted (not SSRF-checked).
    const getCode = [{ method: 'eth_getCode', params: [check.contract_address, 'latest'] }];
    const [code, sourcify] = await Promise.all([
      rpcUrl ? rpcBatch(rpcUrl, getCode, { signal: ctx.signal, safe: false }) : Promise.resolve(undefined),
      getSourcifyStatus(ctx.config, chainId, check.contract_address, ctx.signal),
    ]);
    const ev: VerificationEvidence = { code, sourcify };
    if (hasCode(code) !== false)
      ev.etherscan = await explorerIfNeeded(ctx.config, chainId, check.contract_address, sourcify, ctx.signal);
    return evaluateVerified(check, ev);
  }),
};

/** The explorer, asked only when Sourcify did not say verified and a key is configured. */
async function explorerIfNeeded(
  config: Readonly<Config>,
  chainId: number,
  address: string,
  sourcify: UpstreamResult<Verification>,
  signal: AbortSignal,
): Promise<UpstreamResult<Verification> | undefined> {
  if ((sourcify.ok && sourcify.data.verified) || !config.etherscanApiKey) return undefined;
  return getEtherscanStatus(config, chainId, address, signal);
}

/** What a source lookup concluded: verified or not, or the failure that left it unknown. */
export type SourceLookup =
  | { verified: boolean; source: string; match: string | null }
  | { verified: null; source: string; fail: Extract<UpstreamResult<Verification>, { ok: false }> };

/**
 * The source lookup of contract_verified on its own (Sourcify, then the explorer with a key), for
 * checks that need to know whether a contract's source is published. A lookup that could not
 * answer is `verified: null`, never "not verified".
 */
export async function lookupSource(
  config: Readonly<Config>,
  chainId: number,
  address: string,
  signal: AbortSignal,
): Promise<SourceLookup> {
  const sourcify = await getSourcifyStatus(config, chainId, address, signal);
  const etherscan = await explorerIfNeeded(config, chainId, address, sourcify, signal);
  for (const r of [sourcify, etherscan])
    if (r?.ok && r.data.verified) return { verified: true, source: r.source, match: r.data.match ?? null };
  const failed = [sourcify, etherscan].find(
    (r): r is Extract<UpstreamResult<Verification>, { ok: false }> => r !== undefined && !r.ok,
  );
  if (failed) return { verified: null, source: failed.source, fail: failed };
  return { verified: false, source: (etherscan ?? sourcify).source, match: null };
}
