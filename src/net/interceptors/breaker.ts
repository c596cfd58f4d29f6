/**
 * The circuit breaker of the call's host (net/breaker.ts) as a wrapper: while the host's circuit
 * is open the call is refused at once with `circuit_open`; otherwise the outcome is recorded when
 * the answer ends. A transport failure counts as the host's failure (timeout, reset, refused,
 * broken answer); a complete answer counts as the call's `circuit.classify` says (default: the host
 * is up). A call cancelled by its caller counts for nothing. Each redirect hop of a caller's URL
 * passes here on its own, so every hop's host has its own breaker.
 */
import type { Dispatcher } from 'undici';
import { cancelled, failureClass, hostPort, throughCircuit, type CallClass } from '../breaker.js';
import { classifyFailure } from '../transport.js';
import type { UpstreamFail } from '../result.js';
import {
  type Answer,
  type CircuitOptions,
  type Dispatch,
  type Handler,
  type NetDispatchOptions,
  NetRefusal,
  TRUNCATED_TRAILER,
  Forward,
} from './types.js';

type Outcome = { ok: true; answer: Answer } | { ok: false; err: Error; answered: boolean };

function flatten(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

class Watched extends Forward {
  private answer: Answer | null = null;
  private chunks: Buffer[] | null = null;
  constructor(
    handler: Handler,
    private readonly keepBody: boolean,
    private readonly settle: (o: Outcome) => void,
  ) {
    super(handler);
  }
  override onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    this.answer = { status, headers: flatten(headers), body: '', truncated: false };
    if (this.keepBody) this.chunks = [];
    super.onResponseStart(controller, status, headers, message);
  }
  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks?.push(chunk);
    super.onResponseData(controller, chunk);
  }
  override onResponseEnd(controller: Dispatcher.DispatchController, trailers: Record<string, string | string[]>): void {
    const a = this.answer as Answer;
    if (this.chunks) a.body = Buffer.concat(this.chunks).toString('utf8');
    a.truncated = trailers[TRUNCATED_TRAILER] !== undefined;
    this.settle({ ok: true, answer: a });
    super.onResponseEnd(controller, trailers);
  }
  override onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    this.settle({ ok: false, err, answered: this.answer !== null });
    super.onResponseError(controller, err);
  }
}

function classOf(o: Outcome, c: CircuitOptions, signal: unknown): CallClass {
  if (cancelled(signal as AbortSignal | undefined)) return 'ignore';
  if (o.ok) return c.classify ? c.classify(o.answer) : 'success';
  // An answer the redirect wrapper turned down (too many hops, a bad Location): the host did answer.
  if (o.answered && o.err instanceof NetRefusal) return 'success';
  const f = classifyFailure(o.err, signal as AbortSignal | undefined, 'connect');
  return failureClass(f.reason, f.status);
}

export function circuitBreaker() {
  return (dispatch: Dispatch): Dispatch =>
    (opts, handler) => {
      const o = opts as NetDispatchOptions;
      const c = o.circuit;
      if (!c) return dispatch(opts, handler);
      const host = hostPort(new URL(String(o.origin)));
      let started = false;
      const call = (): Promise<Outcome> =>
        new Promise<Outcome>((settle) => {
          started = true;
          dispatch(opts, new Watched(handler, c.classify !== undefined, settle));
        });
      throughCircuit({ scope: c.scope, label: c.label, host }, host, call, (r) => classOf(r, c, o.signal)).then(
        (r) => {
          if (started || r.ok) return;
          // Refused without a call: the circuit is open.
          const open = r as UpstreamFail;
          const err = new NetRefusal('circuit_open', open.message, { retryAfterS: open.retryAfterS });
          handler.onResponseError?.(null as unknown as Dispatcher.DispatchController, err);
        },
        (err: unknown) => {
          if (!started) handler.onResponseError?.(null as unknown as Dispatcher.DispatchController, err as Error);
        },
      );
      return true;
    };
}
