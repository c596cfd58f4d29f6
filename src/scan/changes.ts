/**
 * From a simulation's logs and native moves to what a person reads (docs/action-scan.md §3):
 * asset changes of the sender (native, ERC-20, ERC-721, ERC-1155; one entry per asset, token id,
 * counterparty and direction, amounts summed) and the approvals the sender grants (ERC-20
 * Approval, ApprovalForAll, Permit2's Approval and Permit). Pure.
 */
import { AbiCoder, id } from 'ethers';
import { type NativeTransfer, type SimLog, TRANSFER_TOPIC, word } from './simulate.js';

export type Standard = 'native' | 'erc20' | 'erc721' | 'erc1155';

export interface AssetChange {
  /** "native" or the token contract (lower case). */
  asset: string;
  standard: Standard;
  direction: 'out' | 'in';
  counterparty: string;
  /** Atomic units, decimal string (1 for each ERC-721 token). */
  amount: string;
  token_id?: string;
  decimals?: number;
  symbol?: string;
  /** Filled in by pricing: a number, or null when no price is known (never 0 for unknown). */
  usd: number | null;
}

export type ApprovalKind = 'erc20' | 'erc721_all' | 'permit2';

export interface ApprovalChange {
  token: string;
  spender: string;
  /** Atomic units, decimal string; "0" revokes. For ApprovalForAll: "1" granted, "0" revoked. */
  amount: string;
  unlimited: boolean;
  kind: ApprovalKind;
  /** Permit2 only: unix seconds the allowance expires (0: at the end of the transaction's block). */
  expiration?: number;
}

/** Uniswap's Permit2, at the same address on every chain. */
export const PERMIT2 = '0x000000000022d473030f116ddee9f6b43ac78ba3';
export const UINT160_MAX = (1n << 160n) - 1n;

export const TOPICS = Object.freeze({
  transfer: TRANSFER_TOPIC,
  approval: id('Approval(address,address,uint256)'),
  approvalForAll: id('ApprovalForAll(address,address,bool)'),
  transferSingle: id('TransferSingle(address,address,address,uint256,uint256)'),
  transferBatch: id('TransferBatch(address,address,address,uint256[],uint256[])'),
  permit2Approval: id('Approval(address,address,address,uint160,uint48)'),
  permit2Permit: id('Permit(address,address,address,uint160,uint48,uint48)'),
  wethDeposit: id('Deposit(address,uint256)'),
  wethWithdrawal: id('Withdrawal(address,uint256)'),
});

const topicAddress = (t: string): string => `0x${t.slice(-40)}`.toLowerCase();

/** A movement of one asset between two addresses, before it is related to the sender. */
interface Move {
  asset: string;
  standard: Standard;
  from: string;
  to: string;
  amount: bigint;
  tokenId?: bigint;
}

function movesOfLog(l: SimLog): Move[] {
  const [t0, t1, t2, t3] = l.topics;
  if (t0 === TOPICS.transfer) {
    // ERC-721 indexes the token id (four topics); ERC-20 carries the amount in data (three).
    if (l.topics.length === 4)
      return [
        {
          asset: l.address,
          standard: 'erc721',
          from: topicAddress(t1),
          to: topicAddress(t2),
          amount: 1n,
          tokenId: BigInt(t3),
        },
      ];
    if (l.topics.length === 3)
      return [
        { asset: l.address, standard: 'erc20', from: topicAddress(t1), to: topicAddress(t2), amount: word(l.data, 0) },
      ];
    return [];
  }
  if (t0 === TOPICS.transferSingle && l.topics.length === 4)
    return [
      {
        asset: l.address,
        standard: 'erc1155',
        from: topicAddress(t2),
        to: topicAddress(t3),
        tokenId: word(l.data, 0),
        amount: word(l.data, 1),
      },
    ];
  if (t0 === TOPICS.transferBatch && l.topics.length === 4) {
    try {
      const [ids, values] = AbiCoder.defaultAbiCoder().decode(['uint256[]', 'uint256[]'], l.data) as unknown as [
        bigint[],
        bigint[],
      ];
      return ids.map((tokenId, i) => ({
        asset: l.address,
        standard: 'erc1155' as const,
        from: topicAddress(t2),
        to: topicAddress(t3),
        tokenId,
        amount: values[i] ?? 0n,
      }));
    } catch {
      return [];
    }
  }
  // WETH-style wrapping: Deposit mints to dst, Withdrawal burns from src; no Transfer is emitted.
  if (t0 === TOPICS.wethDeposit && l.topics.length === 2)
    return [{ asset: l.address, standard: 'erc20', from: l.address, to: topicAddress(t1), amount: word(l.data, 0) }];
  if (t0 === TOPICS.wethWithdrawal && l.topics.length === 2)
    return [{ asset: l.address, standard: 'erc20', from: topicAddress(t1), to: l.address, amount: word(l.data, 0) }];
  return [];
}

/** The sender's asset changes, in order of first appearance; self-transfers and zero amounts left out. */
export function assetChanges(
  sender: string,
  logs: readonly SimLog[],
  native: readonly NativeTransfer[],
): AssetChange[] {
  const me = sender.toLowerCase();
  const moves: Move[] = [
    ...native.map((n) => ({ asset: 'native', standard: 'native' as const, from: n.from, to: n.to, amount: n.value })),
    ...logs.flatMap(movesOfLog),
  ];
  const byKey = new Map<string, { change: Omit<AssetChange, 'amount'>; amount: bigint }>();
  for (const m of moves) {
    if (m.amount === 0n || m.from === m.to) continue;
    const direction = m.from === me ? 'out' : m.to === me ? 'in' : null;
    if (!direction) continue;
    const counterparty = direction === 'out' ? m.to : m.from;
    const tokenId = m.tokenId === undefined ? undefined : m.tokenId.toString();
    const key = `${m.asset}|${tokenId ?? ''}|${counterparty}|${direction}`;
    const hit = byKey.get(key);
    if (hit) {
      hit.amount += m.amount;
      continue;
    }
    const change: Omit<AssetChange, 'amount'> = {
      asset: m.asset,
      standard: m.standard,
      direction,
      counterparty,
      ...(tokenId === undefined ? {} : { token_id: tokenId }),
      usd: null,
    };
    if (m.standard === 'native') change.decimals = 18;
    byKey.set(key, { change, amount: m.amount });
  }
  return [...byKey.values()].map(({ change, amount }) => {
    const { usd, ...rest } = change;
    return { ...rest, amount: amount.toString(), usd };
  });
}

/**
 * An allowance that no real token supply reaches: 2^96 − 1 and above (uint160 max for Permit2
 * included). approval_amount judges by the same bound.
 */
export const UNLIMITED_THRESHOLD = (1n << 96n) - 1n;
export const isUnlimited = (amount: bigint): boolean => amount >= UNLIMITED_THRESHOLD;

/** The approvals `sender` grants in these logs, last one per (kind, token, spender) winning. */
export function approvalChanges(sender: string, logs: readonly SimLog[]): ApprovalChange[] {
  const me = sender.toLowerCase();
  const out = new Map<string, ApprovalChange>();
  const put = (a: ApprovalChange): void => {
    const key = `${a.kind}|${a.token}|${a.spender}`;
    out.delete(key);
    out.set(key, a);
  };
  for (const l of logs) {
    const [t0, t1, t2, t3] = l.topics;
    if (t0 === TOPICS.approval && l.topics.length === 3 && topicAddress(t1) === me) {
      const amount = word(l.data, 0);
      put({
        token: l.address,
        spender: topicAddress(t2),
        amount: amount.toString(),
        unlimited: isUnlimited(amount),
        kind: 'erc20',
      });
    } else if (t0 === TOPICS.approvalForAll && l.topics.length === 3 && topicAddress(t1) === me) {
      const approved = word(l.data, 0) !== 0n;
      put({
        token: l.address,
        spender: topicAddress(t2),
        amount: approved ? '1' : '0',
        unlimited: approved,
        kind: 'erc721_all',
      });
    } else if (
      (t0 === TOPICS.permit2Approval || t0 === TOPICS.permit2Permit) &&
      l.address === PERMIT2 &&
      l.topics.length === 4 &&
      topicAddress(t1) === me
    ) {
      const amount = word(l.data, 0);
      put({
        token: topicAddress(t2),
        spender: topicAddress(t3),
        amount: amount.toString(),
        unlimited: isUnlimited(amount),
        kind: 'permit2',
        expiration: Number(word(l.data, 1)),
      });
    }
  }
  return [...out.values()];
}
