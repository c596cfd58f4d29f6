/**
 * The release of unexecuted reservations (docs/policies.md §3). After a verdict expires, the
 * acting account is asked on the chain's operator RPC whether it used the verdict's id
 * (`used(bytes32)` of PreflightAccount): used → committed; not used → released, and the limit's
 * usage drops. An account that cannot answer (no RPC for the chain, an EOA, a contract that returns
 * no boolean, a node error) leaves the reservation committed. One instance at a time runs it (a
 * lease in the store), every POLICY_RELEASE_INTERVAL_MS, so a reservation is settled within
 * 60 s of its expiry.
 */
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import { keccak256 } from '../crypto/keccak.js';
import type { Logger } from '../log.js';
import { rpcCall } from '../net/rpc.js';
import type { DueReservation, Store } from '../store/types.js';

const LEASE = 'policy-release';
/** Counter buckets older than this are deleted: the longest window (a month) is 31 days. */
const COUNTER_KEEP_MS = 62 * 86_400_000;
const BATCH = 200;
const RPC_TIMEOUT_MS = 5000;
/** `used(bytes32)`'s selector. */
const USED = `0x${keccak256(Buffer.from('used(bytes32)', 'utf8')).subarray(0, 4).toString('hex')}`;

export interface ReleaseDeps {
  config: Pick<Config, 'rpcUrls' | 'policyReleaseIntervalMs'>;
  store: Pick<Store, 'takeLease' | 'dueReservations' | 'settleReservation' | 'pruneCounters'>;
  logger: Pick<Logger, 'warn' | 'info'>;
  now?: () => number;
}

/** Whether the account used the id: true, false, or null when it cannot tell. */
export async function accountUsed(rpcUrl: string, account: string, id: string): Promise<boolean | null> {
  const r = await rpcCall(rpcUrl, 'eth_call', [{ to: account, data: `${USED}${id.slice(2)}` }, 'latest'], {
    safe: false,
    timeoutMs: RPC_TIMEOUT_MS,
  });
  if (!r.ok || r.data.error !== undefined) return null;
  const out = r.data.result;
  if (typeof out !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(out)) return null;
  const v = BigInt(out);
  return v === 1n ? true : v === 0n ? false : null;
}

/** What one reservation settles as. */
export async function settlement(
  rpcUrls: Readonly<Record<string, string>>,
  r: DueReservation,
): Promise<'committed' | 'released'> {
  const url = r.chain === null ? undefined : rpcUrls[r.chain];
  if (url === undefined || r.actor === null) return 'committed';
  const used = await accountUsed(url, r.actor, r.id).catch(() => null);
  return used === false ? 'released' : 'committed';
}

/** One pass: takes the lease, settles what expired. Returns how many were settled. */
export async function releaseOnce(deps: ReleaseDeps, holder: string): Promise<number> {
  const now = (deps.now ?? Date.now)();
  if (!(await deps.store.takeLease(LEASE, holder, deps.config.policyReleaseIntervalMs * 3))) return 0;
  const due = await deps.store.dueReservations(now, BATCH);
  let n = 0;
  for (const r of due) {
    const to = await settlement(deps.config.rpcUrls, r);
    if (await deps.store.settleReservation(r, to)) n++;
  }
  // No window reaches further back than a month (31 days) or a rolling 30 days.
  await deps.store.pruneCounters(now - COUNTER_KEEP_MS);
  return n;
}

/** Runs `releaseOnce` every interval until stopped. */
export function startRelease(deps: ReleaseDeps): { stop(): Promise<void> } {
  const holder = randomUUID();
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    // A pass still waiting on a slow node is not doubled.
    if (running !== null) return;
    running = releaseOnce(deps, holder)
      .catch((err: unknown) => deps.logger.warn({ err }, 'reservation release pass failed; retried next interval'))
      .finally(() => {
        running = null;
      });
  }, deps.config.policyReleaseIntervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
