/**
 * One retry when the connection is reset before any answer: the usual cause is a keep-alive
 * connection the server had just closed, and a fresh one works. Nothing else is retried (a
 * timeout or a 5xx repeated would only double the load on a struggling host), and never once an
 * answer has started.
 */
import { errorCode, Forward, type Dispatch, type Handler, type NetDispatchOptions } from './types.js';
import type { Dispatcher } from 'undici';

export const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

class RetryOnce extends Forward {
  private started = false;
  private retried = false;
  constructor(
    handler: Handler,
    private readonly opts: NetDispatchOptions,
    private readonly dispatch: Dispatch,
  ) {
    super(handler);
  }
  override onResponseStart(...args: Parameters<Forward['onResponseStart']>): void {
    this.started = true;
    super.onResponseStart(...args);
  }
  override onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    if (!this.started && !this.retried && !this.opts.signal?.aborted && RESET_CODES.has(errorCode(err))) {
      this.retried = true;
      this.dispatch(this.opts, this);
      return;
    }
    super.onResponseError(controller, err);
  }
}

export function retryOnReset() {
  return (dispatch: Dispatch): Dispatch =>
    (opts, handler) =>
      dispatch(opts, new RetryOnce(handler, opts as NetDispatchOptions, dispatch));
}
