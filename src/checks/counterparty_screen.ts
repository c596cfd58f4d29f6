/**
 * counterparty_screen (guard-only, and POST /v1/screen): every address the action names, with its
 * roles, against the sanctions list, the blocklists, the known counterparties (lookalikes) and,
 * for a recipient, its EIP-7702 delegate (docs/screening.md §4).
 *
 * The lists are in the main thread's memory (src/screening/service.ts), so this module runs there:
 * the guard calls it after the engine's checks, whose simulation names the counterparties. Called
 * without the lists (a worker thread has none) it answers `error screening_unavailable`, never a
 * pass. The lookups are in memory; the sweeper rule reads each recipient's code on the chain's
 * node and runs the delegation scan's sweep probe on a delegated one (no node: the rule is skipped
 * and says so).
 */
import { deadline } from '../net/deadline.js';
import { OldestFirst } from '../oldest-first.js';
import { rpcBatch, rpcSource, type RpcOptions } from '../net/rpc.js';
import { DESIGNATOR_PREFIX } from '../scan/delegation.js';
import {
  type AddressScreen,
  type KnownBook,
  type Role,
  reasonsOf,
  screenAddress,
  screenMessage,
} from '../screening/rules.js';
import type { ScreeningView } from '../screening/view.js';
import { probe } from './delegation_scan.js';
import { checkError, fromUpstreamFail, neverThrow } from './outcome.js';
import { SIMULATION_TTL_S } from './transaction_simulation.js';
import { isOperatorUrl } from './trust.js';
import type { CheckContext, CheckModule, CheckOutcome, CounterpartyScreenCheck, RecipientCode } from './types.js';

export type { CounterpartyScreenCheck };

/** One address's answer, as POST /v1/screen gives it and the guard's evidence lists it. */
export interface AddressResult {
  address: string;
  roles: Role[];
  status: 'pass' | 'warn' | 'fail' | 'error';
  reasons: string[];
  /** The lists that name it. */
  lists: string[];
  sanctions: { list: string; date: string | null; uid: string | null; name: string | null; assets: string[] } | null;
  blocklists: Array<{ list: string; reason: string | null }>;
  lookalike_of: Array<{ known: string; prefix_digits: number; suffix_digits: number }>;
  delegate: { address: string; sweeps: boolean | null } | null;
  message: string;
}

/** Roles that receive value: the sweeper rule reads their code. */
const RECEIVES: ReadonlySet<Role> = new Set(['recipient']);
/** How long a recipient's code and its delegate's probe are reused: one block, like a simulation. */
const CODE_TTL_MS = SIMULATION_TTL_S * 1000;
/** A screening answer is reused at most this long: lists change fleet-wide within a minute. */
export const SCREEN_TTL_S = 60;

const sweeps = new Map<string, { at: number; r: Promise<RecipientCode> }>();
const sweepsOldest = new OldestFirst(sweeps);

/** Whether `address` is delegated to a delegate that sweeps what it receives, read on the node. */
function sweepOf(url: string, address: string, rpcOpts: RpcOptions): Promise<RecipientCode> {
  const key = `${url} ${address}`;
  const hit = sweeps.get(key);
  if (hit && performance.now() - hit.at < CODE_TTL_MS) return hit.r;
  const r = (async (): Promise<RecipientCode> => {
    const code = await rpcBatch(url, [{ method: 'eth_getCode', params: [address, 'latest'] }], rpcOpts);
    const c = code.ok ? code.data[0]?.result : undefined;
    if (!code.ok) return { delegate: null, sweeps: null, error: fromUpstreamFail(code, 0) };
    if (typeof c !== 'string')
      return {
        delegate: null,
        sweeps: null,
        error: checkError('upstream_bad_response', `${code.source} gave no code for ${address}.`, code.source),
      };
    const lower = c.toLowerCase();
    if (!(lower.startsWith(DESIGNATOR_PREFIX) && lower.length === 48))
      return { delegate: null, sweeps: false, error: null };
    const delegate = `0x${lower.slice(8)}`;
    const p = await probe(url, { authority: address, address: delegate, chain_id: 0, nonce: null }, rpcOpts);
    if (!p.ok) return { delegate, sweeps: null, error: fromUpstreamFail(p, 0) };
    if (!p.data.effectsKnown)
      return {
        delegate,
        sweeps: null,
        error: checkError(
          'effects_unknown',
          `${p.source} offers only eth_call: what the delegate ${delegate} of ${address} does with a payment cannot be seen.`,
          p.source,
        ),
      };
    return { delegate, sweeps: p.data.assets.length > 0 || p.data.approvals.length > 0, error: null };
  })();
  if (sweeps.size >= 10_000) sweepsOldest.evict();
  sweeps.set(key, { at: performance.now(), r });
  r.then((s) => s.error && sweeps.delete(key)).catch(() => sweeps.delete(key));
  return r;
}

/** How the screen reads the node at `url`: the address rules of a URL the operator did not configure. */
function readOptions(config: CheckContext['config'], url: string, signal: AbortSignal): RpcOptions {
  return {
    signal,
    safe: !isOperatorUrl(config, url),
    allowPrivate: config.allowPrivateTargets,
    source: rpcSource(url),
  };
}

/**
 * Starts the code reads (and a delegated one's sweep probe) of addresses the screen will read as
 * recipients, before it runs: the guard calls it as its checks start, so a recipient's code is
 * read beside the simulation instead of after it, and hands the reads to its screen
 * (CheckContext.readsAhead), which takes them as they are: a read kept from the last
 * CODE_TTL_MS when the request came, or one started now. Each runs under the check's hard
 * timeout, like the screen's own reads.
 */
export function readAhead(
  config: CheckContext['config'],
  url: string | null,
  addresses: readonly string[],
): Map<string, Promise<RecipientCode>> {
  const reads = new Map<string, Promise<RecipientCode>>();
  if (url === null || addresses.length === 0) return reads;
  const hard = deadline(undefined, config.checkHardTimeoutMs);
  const opts = readOptions(config, url, hard.signal);
  for (const a of addresses) reads.set(a, sweepOf(url, a, opts));
  void Promise.allSettled(reads.values()).then(hard.done);
  return reads;
}

/** Forget kept code reads (tests). */
export function forgetSweeps(): void {
  sweeps.clear();
}

const RANK = { fail: 3, error: 2, warn: 1, pass: 0 } as const;

/** The sweep read, or a deadline error when the request's deadline comes first. */
function byDeadline(p: Promise<RecipientCode>, signal: AbortSignal): Promise<RecipientCode> {
  const late: RecipientCode = {
    delegate: null,
    sweeps: null,
    error: checkError(
      'deadline_exceeded',
      "The recipient's code was not read within the deadline; the answer is kept when it arrives, so retry in 1 s.",
      null,
      { retry_after_s: 1 },
    ),
  };
  if (signal.aborted) return Promise.resolve(late);
  return new Promise((resolve) => {
    const onAbort = () => resolve(late);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then((v) => {
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    });
  });
}

/** Screens every address; the per-address answers and the lists' state, for the guard and /v1/screen. */
export async function screenAll(
  check: CounterpartyScreenCheck,
  ctx: Pick<CheckContext, 'config' | 'signal' | 'readsAhead'>,
  screening: ScreeningView,
): Promise<{ results: AddressResult[]; bookError: string | null; sweeperSkipped: boolean; source: string | null }> {
  const books: KnownBook[] = [screening.book(check.known_addresses)];
  let bookError: string | null = null;
  if (check.account !== null) {
    try {
      books.push(await screening.knownOf(check.account));
    } catch (err) {
      bookError = `the account's known counterparties could not be read: ${(err as Error).message}`;
    }
  }
  const url = check.rpc_url;
  // The node's reads run under the hard timeout, not the request's deadline: a late answer is kept
  // (CODE_TTL_MS), so the retry a deadline asks for is answered from it, as the engine does. Its
  // timer is cleared once every read this call started has settled.
  const hard = url ? deadline(undefined, ctx.config.checkHardTimeoutMs) : null;
  const reads: Promise<RecipientCode>[] = [];
  const rpcOpts: RpcOptions | null = url && hard ? readOptions(ctx.config, url, hard.signal) : null;
  const stale = screening.stale();
  const results = await Promise.all(
    check.addresses.map(async ({ address, roles }): Promise<AddressResult> => {
      const s: AddressScreen = screenAddress(address, roles, (a) => screening.find(a), books);
      const receives = roles.some((r) => RECEIVES.has(r));
      const read = receives && url && rpcOpts ? (ctx.readsAhead?.get(address) ?? sweepOf(url, address, rpcOpts)) : null;
      if (read) reads.push(read);
      const sweep = read ? await byDeadline(read, ctx.signal) : null;
      const swept = sweep?.sweeps === true;
      const reasons = reasonsOf(s, swept);
      let status: AddressResult['status'] = reasons.length > 0 ? 'fail' : 'pass';
      let message = reasons.length > 0 ? screenMessage(s, swept ? sweep!.delegate : null) : '';
      if (status === 'pass' && sweep?.error) {
        status = 'error';
        reasons.push(sweep.error.reason ?? 'upstream_error');
        message = `${address}: ${sweep.error.message}`;
      } else if (status === 'pass' && bookError) {
        status = 'error';
        reasons.push('known_counterparties_unavailable');
        message = `${address}: ${bookError}; a lookalike of a learned counterparty cannot be ruled out.`;
      } else if (status === 'pass' && stale) {
        status = 'warn';
        reasons.push('screening_data_stale');
        message = `${address}: on no list, but the sanctions list is ${stale.ageS} s old (SANCTIONS_MAX_AGE_S ${stale.maxAgeS}).`;
      }
      const sanctioned = s.sanctioned;
      return {
        address,
        roles,
        status,
        reasons,
        lists: [...(sanctioned ? [sanctioned.list] : []), ...s.blocklisted.map((b) => b.list)],
        sanctions: sanctioned
          ? {
              list: sanctioned.list,
              date: sanctioned.date,
              uid: sanctioned.tag.uid ?? null,
              name: sanctioned.tag.name ?? null,
              assets: sanctioned.tag.assets ?? [],
            }
          : null,
        blocklists: s.blocklisted.map((b) => ({ list: b.list, reason: b.tag.reason ?? null })),
        lookalike_of: s.lookalikes.map((l) => ({ known: l.known, prefix_digits: l.prefix, suffix_digits: l.suffix })),
        delegate: sweep?.delegate ? { address: sweep.delegate, sweeps: sweep.sweeps } : null,
        message,
      };
    }),
  );
  // Every read was started as the map ran; a late one still completes (and is kept) under the timer.
  if (hard) void Promise.allSettled(reads).then(hard.done);
  return { results, bookError, sweeperSkipped: url === null, source: url ? rpcSource(url) : null };
}

/** The lists' dates, as a pass names them. */
function listsNote(screening: ScreeningView): string {
  return screening
    .lists()
    .map((l) => `${l.name} (${l.packed.size} addresses${l.date ? `, ${l.date}` : ''})`)
    .join(', ');
}

export async function runScreen(
  check: CounterpartyScreenCheck,
  ctx: Pick<CheckContext, 'config' | 'signal' | 'readsAhead'>,
  screening: ScreeningView,
): Promise<CheckOutcome> {
  const { results, sweeperSkipped, source } = await screenAll(check, ctx, screening);
  const unavailable = screening.unavailable();
  let worst: AddressResult | undefined;
  for (const r of results) if (!worst || RANK[r.status] > RANK[worst.status]) worst = r;
  const lists = screening.lists().map((l) => ({
    name: l.name,
    kind: l.kind,
    date: l.date,
    size: l.packed.size,
    hash: l.packed.hash || null,
    status: l.status,
  }));
  const observed = {
    addresses: results,
    lists,
    sweeper_rule: sweeperSkipped ? 'skipped: no rpc_url and no RPC configured for the chain' : 'run',
  };
  const expected = { known_addresses: check.known_addresses.length, account_book: check.account !== null };
  const fails = results.filter((r) => r.status === 'fail');
  if (fails.length > 0) {
    const reason = fails[0].reasons[0];
    return {
      status: 'fail',
      reason,
      message: fails.map((r) => r.message).join(' '),
      observed,
      expected,
      source,
      ttl_s: SCREEN_TTL_S,
      components: [...new Set(fails.flatMap((r) => r.reasons))].filter((r) => r !== reason),
    };
  }
  if (unavailable.length > 0)
    return checkError(
      'screening_list_unavailable',
      `The blocklist${unavailable.length > 1 ? 's' : ''} ${unavailable.join(', ')} ha${unavailable.length > 1 ? 've' : 's'} not been loaded yet: the addresses cannot be cleared against ${unavailable.length > 1 ? 'them' : 'it'}.`,
      null,
      { observed, expected },
    );
  if (worst && worst.status === 'error')
    return checkError(worst.reasons[0], worst.message, source, { observed, expected });
  if (worst && worst.status === 'warn')
    return {
      status: 'warn',
      reason: 'screening_data_stale',
      message: worst.message,
      observed,
      expected,
      source,
      ttl_s: SCREEN_TTL_S,
    };
  const n = results.length;
  return {
    status: 'pass',
    reason: null,
    message: `${n} address${n === 1 ? '' : 'es'} screened: on no list of ${listsNote(screening)}, no lookalike of a known counterparty${sweeperSkipped ? '; the sweeper rule was skipped (no node for the chain)' : ', no recipient delegated to a sweeper'}.`,
    observed,
    expected,
    source,
    ttl_s: SCREEN_TTL_S,
  };
}

export const counterpartyScreen: CheckModule<CounterpartyScreenCheck> = {
  type: 'counterparty_screen',
  upstream: 'rpc',
  run: neverThrow(async (check, ctx) =>
    ctx.screening
      ? runScreen(check, ctx, ctx.screening)
      : checkError(
          'screening_unavailable',
          'The screening lists are not loaded where this check ran; the addresses are not cleared.',
          null,
        ),
  ),
};
