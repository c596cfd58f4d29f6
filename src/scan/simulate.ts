/**
 * The simulation core (docs/action-scan.md §3): one transaction run against the chain's state
 * without sending it, through the one JSON-RPC client (net/rpc.ts: the caller dispatcher and its
 * SSRF rules for a request's rpc_url, the operator's for RPC_URLS).
 *
 * Methods, in order: `eth_simulateV1` with `traceTransfers` (logs plus native moves as
 * pseudo-logs); when the node does not offer it, `debug_traceCall` with the call tracer and its
 * logs; when neither exists, `eth_call`, which only says whether the call reverts. Each goes in
 * one batch with `eth_blockNumber`, so the block comes from the same moment at no extra round trip.
 *
 * State overrides (code, balance, nonce, stateDiff per address) are passed to both simulating
 * methods and to eth_call; an EIP-7702 delegation is installed this way (code `0xef0100‖delegate`).
 *
 * The output is normalised and method-independent: logs of the calls that did not revert, native
 * transfers, the revert and its decoded reason. Failures of the node are data, never thrown.
 */
import { AbiCoder } from 'ethers';
import { hexQuantity } from '../format.js';
import { type RpcError, type RpcOptions, type RpcReply, rpcBatch, rpcSource } from '../net/rpc.js';
import type { UpstreamResult } from '../net/result.js';
import { fail } from '../net/json.js';

export interface SimTransaction {
  from: string;
  /** null deploys a contract. */
  to: string | null;
  /** Wei: a bigint, or a decimal or 0x hex string. */
  value?: bigint | string;
  data?: string;
  gas?: number | null;
}

/** What a simulation may change before the call (geth's state override set). */
export interface StateOverride {
  code?: string;
  /** Wei: a bigint, or a decimal or 0x hex string. */
  balance?: bigint | string;
  nonce?: number | bigint;
  /** Storage slots to set, leaving the others (slot → 32-byte value). */
  stateDiff?: Record<string, string>;
  /** The whole storage, replacing it (slot → 32-byte value). */
  state?: Record<string, string>;
}
export type StateOverrides = Record<string, StateOverride>;

export type SimMethod = 'eth_simulateV1' | 'debug_traceCall' | 'eth_call';
export const SIM_METHODS: readonly SimMethod[] = ['eth_simulateV1', 'debug_traceCall', 'eth_call'];

export interface SimLog {
  address: string;
  topics: string[];
  data: string;
}

export interface NativeTransfer {
  from: string;
  to: string;
  value: bigint;
}

export interface Simulation {
  method: SimMethod;
  /** The block the call was simulated on (the node's head when asked); null if the node did not say. */
  block: number | null;
  reverted: boolean;
  /** Decoded: `Error(string)` text, `Panic(0x11): arithmetic overflow`, or `custom error 0x…`; null when none. */
  revertReason: string | null;
  /** The raw revert data, 0x-prefixed; null when none. */
  revertData: string | null;
  gasUsed: number | null;
  /** Logs of the frames that did not revert, in order. Empty for eth_call. */
  logs: SimLog[];
  /** Native value moves of the frames that did not revert. Empty for eth_call. */
  nativeTransfers: NativeTransfer[];
  /** false for eth_call: it tells whether the call reverts, not what it does. */
  effectsKnown: boolean;
}

export interface SimulateOptions extends RpcOptions {
  overrides?: StateOverrides;
  /** Methods to skip (a caller that knows its node lacks them). */
  skip?: readonly SimMethod[];
}

/** The pseudo-address eth_simulateV1 gives native transfers under `traceTransfers`. */
export const NATIVE_PSEUDO_ADDRESS = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee';
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

const quantity = (v: bigint | string | number): string => {
  const n = typeof v === 'bigint' ? v : BigInt(v);
  return `0x${n.toString(16)}`;
};

/** The call object every method takes (`input` and `data` both, as nodes differ on the name). */
export function callObject(tx: SimTransaction): Record<string, string> {
  const out: Record<string, string> = { from: tx.from };
  if (tx.to) out.to = tx.to;
  const value = tx.value === undefined ? 0n : BigInt(tx.value);
  if (value > 0n) out.value = quantity(value);
  const data = tx.data ?? '0x';
  out.input = data;
  out.data = data;
  if (tx.gas) out.gas = quantity(tx.gas);
  return out;
}

/** Overrides in the JSON-RPC shape (quantities as hex). */
export function overridesParam(overrides: StateOverrides | undefined): Record<string, Record<string, unknown>> | null {
  if (!overrides || Object.keys(overrides).length === 0) return null;
  const out: Record<string, Record<string, unknown>> = {};
  for (const [address, o] of Object.entries(overrides)) {
    const e: Record<string, unknown> = {};
    if (o.code !== undefined) e.code = o.code;
    if (o.balance !== undefined) e.balance = quantity(o.balance);
    if (o.nonce !== undefined) e.nonce = quantity(o.nonce);
    if (o.stateDiff !== undefined) e.stateDiff = o.stateDiff;
    if (o.state !== undefined) e.state = o.state;
    out[address] = e;
  }
  return out;
}

const PANIC_CODES: Readonly<Record<number, string>> = {
  0: 'generic panic',
  1: 'assertion failed',
  17: 'arithmetic overflow or underflow',
  18: 'division or modulo by zero',
  33: 'invalid enum value',
  34: 'invalid storage byte array',
  49: 'pop on an empty array',
  50: 'array index out of bounds',
  65: 'out of memory',
  81: 'call to an uninitialised function',
};

/** A revert's data as a sentence: Error(string), Panic(uint256), or a custom error's selector. */
export function decodeRevert(data: string | null | undefined): string | null {
  if (typeof data !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(data) || data.length < 10) return null;
  const selector = data.slice(0, 10).toLowerCase();
  try {
    if (selector === '0x08c379a0')
      return String(AbiCoder.defaultAbiCoder().decode(['string'], `0x${data.slice(10)}`)[0]);
    if (selector === '0x4e487b71') {
      const code = Number(AbiCoder.defaultAbiCoder().decode(['uint256'], `0x${data.slice(10)}`)[0]);
      return `Panic(0x${code.toString(16)}): ${PANIC_CODES[code] ?? 'unknown panic code'}`;
    }
  } catch {
    /* malformed payload: report the selector below */
  }
  return `custom error ${selector}`;
}

/** The revert data a node put in a JSON-RPC error (`data` as hex, or `{data: hex}`). */
function errorData(e: RpcError | { data?: unknown } | undefined): string | null {
  const d = e?.data;
  if (typeof d === 'string' && d.startsWith('0x')) return d;
  if (d && typeof d === 'object' && typeof (d as { data?: unknown }).data === 'string')
    return (d as { data: string }).data;
  return null;
}

/** A node's way of saying it does not offer a method. */
export function methodUnsupported(e: RpcError | undefined): boolean {
  if (!e) return false;
  if (e.code === -32601 || e.code === -32004) return true;
  return /not (supported|available|found|implemented|enabled)|unsupported|does not exist|unknown method|method not allowed/i.test(
    e.message,
  );
}

/** A JSON-RPC error that is the call reverting (code 3, or an "execution reverted" message). */
function isRevertError(e: RpcError): boolean {
  return e.code === 3 || /revert/i.test(e.message);
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const lower = (s: string): string => s.toLowerCase();

function toLogs(raw: unknown): SimLog[] {
  if (!Array.isArray(raw)) return [];
  const out: SimLog[] = [];
  for (const l of raw) {
    if (!isObj(l) || typeof l.address !== 'string' || !Array.isArray(l.topics)) continue;
    out.push({
      address: lower(l.address),
      topics: l.topics.filter((t): t is string => typeof t === 'string').map(lower),
      data: typeof l.data === 'string' ? l.data : '0x',
    });
  }
  return out;
}

type Parsed = { ok: true; sim: Omit<Simulation, 'block' | 'method'> } | { ok: false; message: string };

/** eth_simulateV1: one block, one call; native transfers arrive as pseudo-logs of 0xeee…e. */
export function parseSimulateV1(result: unknown): Parsed {
  const block = Array.isArray(result) ? result[0] : null;
  const call = isObj(block) && Array.isArray(block.calls) ? block.calls[0] : null;
  if (!isObj(call)) return { ok: false, message: 'eth_simulateV1 returned no call result' };
  const reverted = call.status !== '0x1';
  const err = isObj(call.error) ? (call.error as { data?: unknown; message?: unknown }) : undefined;
  const revertData = reverted
    ? (errorData(err) ?? (typeof call.returnData === 'string' && call.returnData !== '0x' ? call.returnData : null))
    : null;
  const logs: SimLog[] = [];
  const nativeTransfers: NativeTransfer[] = [];
  if (!reverted) {
    for (const l of toLogs(call.logs)) {
      if (l.address === NATIVE_PSEUDO_ADDRESS && l.topics[0] === TRANSFER_TOPIC && l.topics.length === 3) {
        nativeTransfers.push({
          from: topicAddress(l.topics[1]),
          to: topicAddress(l.topics[2]),
          value: word(l.data, 0),
        });
      } else logs.push(l);
    }
  }
  const message = typeof err?.message === 'string' ? err.message : null;
  return {
    ok: true,
    sim: {
      reverted,
      revertReason: reverted ? (decodeRevert(revertData) ?? reasonFromMessage(message)) : null,
      revertData,
      gasUsed: hexQuantity(call.gasUsed),
      logs,
      nativeTransfers,
      effectsKnown: true,
    },
  };
}

/** "execution reverted: X" → "X"; a bare "execution reverted" says nothing more. */
function reasonFromMessage(message: string | null | undefined): string | null {
  if (!message) return null;
  const m = /execution reverted:?\s*(.*)$/i.exec(message);
  if (m) return m[1].trim() || null;
  return message;
}

const VALUE_FRAMES = new Set(['CALL', 'CREATE', 'CREATE2', 'SELFDESTRUCT']);

/** debug_traceCall with callTracer + withLog: walk the frames; a reverted frame drops its subtree. */
export function parseCallTrace(result: unknown): Parsed {
  if (!isObj(result)) return { ok: false, message: 'debug_traceCall returned no call frame' };
  const logs: SimLog[] = [];
  const nativeTransfers: NativeTransfer[] = [];
  // Logs and calls interleave by position; a frame's own logs come with `position` = the number of
  // its subcalls made before the log. Ordered output keeps the asset changes in execution order.
  const walk = (f: Record<string, unknown>): void => {
    if (f.error !== undefined && f.error !== null) return;
    const type = typeof f.type === 'string' ? f.type.toUpperCase() : '';
    const value = typeof f.value === 'string' && /^0x[0-9a-fA-F]+$/.test(f.value) ? BigInt(f.value) : 0n;
    if (value > 0n && VALUE_FRAMES.has(type) && typeof f.from === 'string' && typeof f.to === 'string')
      nativeTransfers.push({ from: lower(f.from), to: lower(f.to), value });
    const own = Array.isArray(f.logs) ? f.logs : [];
    const calls = Array.isArray(f.calls) ? f.calls.filter(isObj) : [];
    let next = 0;
    for (let i = 0; i <= calls.length; i++) {
      while (next < own.length) {
        const pos = isObj(own[next]) ? hexQuantity((own[next] as { position?: unknown }).position) : null;
        if (pos !== null && pos > i) break;
        logs.push(...toLogs([own[next]]));
        next++;
      }
      if (i < calls.length) walk(calls[i]);
    }
  };
  const reverted = result.error !== undefined && result.error !== null;
  const revertData = reverted && typeof result.output === 'string' && result.output !== '0x' ? result.output : null;
  if (!reverted) walk(result);
  const traced = typeof result.revertReason === 'string' ? result.revertReason : null;
  return {
    ok: true,
    sim: {
      reverted,
      revertReason: reverted ? (decodeRevert(revertData) ?? traced ?? reasonFromMessage(String(result.error))) : null,
      revertData,
      gasUsed: hexQuantity(result.gasUsed),
      logs,
      nativeTransfers,
      effectsKnown: true,
    },
  };
}

function topicAddress(topic: string): string {
  return `0x${topic.slice(-40)}`.toLowerCase();
}

/** The i-th 32-byte word of `data` as an unsigned integer (0 when absent). */
export function word(data: string, i: number): bigint {
  const hex = data.slice(2 + i * 64, 2 + (i + 1) * 64);
  return hex.length === 64 ? BigInt(`0x${hex}`) : 0n;
}

function simulateV1Params(tx: SimTransaction, overrides: StateOverrides | undefined): unknown[] {
  const block: Record<string, unknown> = { calls: [callObject(tx)] };
  const o = overridesParam(overrides);
  if (o) block.stateOverrides = o;
  return [
    { blockStateCalls: [block], traceTransfers: true, validation: false, returnFullTransactions: false },
    'latest',
  ];
}

function traceCallParams(tx: SimTransaction, overrides: StateOverrides | undefined): unknown[] {
  const config: Record<string, unknown> = { tracer: 'callTracer', tracerConfig: { withLog: true } };
  const o = overridesParam(overrides);
  if (o) config.stateOverrides = o;
  return [callObject(tx), 'latest', config];
}

function ethCallParams(tx: SimTransaction, overrides: StateOverrides | undefined): unknown[] {
  const o = overridesParam(overrides);
  return o ? [callObject(tx), 'latest', o] : [callObject(tx), 'latest'];
}

/** Validates what the core is given (the schema has already; this keeps direct callers honest). */
function txProblem(tx: SimTransaction): string | null {
  if (!ADDRESS.test(tx.from)) return 'from is not an address';
  if (tx.to !== null && !ADDRESS.test(tx.to)) return 'to is not an address';
  return null;
}

/**
 * Simulates `tx` on the node at `url`. Tries the methods in order; a node that lacks one is asked
 * the next. A failure of the node (unreachable, refused by the SSRF rules, a JSON-RPC error that is
 * not "unsupported") ends it as an UpstreamFail; a revert is a successful simulation.
 */
export async function simulate(
  url: string,
  tx: SimTransaction,
  opts: SimulateOptions,
): Promise<UpstreamResult<Simulation>> {
  const started = performance.now();
  const source = opts.source ?? rpcSource(url);
  const bad = txProblem(tx);
  if (bad) return fail(source, started, { reason: 'upstream_error', message: `cannot simulate: ${bad}` });
  const unsupported: string[] = [];
  for (const method of SIM_METHODS) {
    if (opts.skip?.includes(method)) continue;
    const params =
      method === 'eth_simulateV1'
        ? simulateV1Params(tx, opts.overrides)
        : method === 'debug_traceCall'
          ? traceCallParams(tx, opts.overrides)
          : ethCallParams(tx, opts.overrides);
    const r = await rpcBatch(
      url,
      [
        { method, params },
        { method: 'eth_blockNumber', params: [] },
      ],
      { ...opts, source },
    );
    if (!r.ok) return r;
    const [reply, head] = r.data as [RpcReply, RpcReply];
    const block = head?.error ? null : hexQuantity(head?.result);
    const done = (sim: Omit<Simulation, 'block' | 'method'>): UpstreamResult<Simulation> => ({
      ok: true,
      data: { method, block, ...sim },
      source,
      latencyMs: Math.round(performance.now() - started),
    });
    if (reply.error) {
      // A node whose eth_simulateV1 rejects the call's shape (anvil cannot simulate a deployment
      // there: -32602) is asked the next method, as a node without it would be.
      if (methodUnsupported(reply.error) || (method === 'eth_simulateV1' && reply.error.code === -32602)) {
        unsupported.push(method);
        continue;
      }
      // The sender cannot pay the value (and gas): the transaction cannot succeed, which is what a
      // revert tells the caller too. Nodes say so as an error of every method (-32003, -38014, -32000).
      if (/insufficient funds/i.test(reply.error.message)) {
        return done({
          reverted: true,
          revertReason: `the sender cannot pay: ${reply.error.message.slice(0, 200)}`,
          revertData: null,
          gasUsed: null,
          logs: [],
          nativeTransfers: [],
          effectsKnown: method !== 'eth_call',
        });
      }
      if (method === 'eth_call' && isRevertError(reply.error)) {
        const revertData = errorData(reply.error);
        return done({
          reverted: true,
          revertReason: decodeRevert(revertData) ?? reasonFromMessage(reply.error.message),
          revertData,
          gasUsed: null,
          logs: [],
          nativeTransfers: [],
          effectsKnown: false,
        });
      }
      // debug_traceCall reports a revert in the frame, not as an error; anything else is the node's.
      return fail(source, started, {
        reason: 'upstream_error',
        message: `${source} refused ${method} (${reply.error.code}: ${reply.error.message.slice(0, 200)})`,
      });
    }
    if (method === 'eth_call')
      return done({
        reverted: false,
        revertReason: null,
        revertData: null,
        gasUsed: null,
        logs: [],
        nativeTransfers: [],
        effectsKnown: false,
      });
    const parsed = method === 'eth_simulateV1' ? parseSimulateV1(reply.result) : parseCallTrace(reply.result);
    if (!parsed.ok)
      return fail(source, started, { reason: 'upstream_bad_response', message: `${source}: ${parsed.message}` });
    return done(parsed.sim);
  }
  return fail(source, started, {
    reason: 'upstream_error',
    message: `${source} offers none of ${unsupported.join(', ')}: the transaction cannot be simulated`,
  });
}
