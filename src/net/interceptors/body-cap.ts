/**
 * The body cap (1 MiB unless the call says otherwise): past it the download stops and the
 * connection is closed rather than drained; the part received is delivered, and the trailer
 * TRUNCATED_TRAILER tells the reader it was cut. A hostile or broken upstream cannot make us hold
 * an unbounded body.
 */
import type { Dispatcher } from 'undici';
import { type Dispatch, type Handler, type NetDispatchOptions, TRUNCATED_TRAILER, Forward } from './types.js';

export const MAX_UPSTREAM_BODY_BYTES = 1024 * 1024;

class Capped extends Forward {
  private size = 0;
  private cut = false;
  constructor(
    handler: Handler,
    private readonly cap: number,
  ) {
    super(handler);
  }
  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.cut) return;
    if (this.size + chunk.length <= this.cap) {
      this.size += chunk.length;
      super.onResponseData(controller, chunk);
      return;
    }
    this.cut = true;
    if (this.cap > this.size) super.onResponseData(controller, chunk.subarray(0, this.cap - this.size));
    super.onResponseEnd(controller, { [TRUNCATED_TRAILER]: 'true' });
    controller.abort(new Error('body over the size cap'));
  }
  override onResponseEnd(controller: Dispatcher.DispatchController, trailers: Record<string, string | string[]>): void {
    if (!this.cut) super.onResponseEnd(controller, trailers);
  }
  override onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    if (!this.cut) super.onResponseError(controller, err); // the abort we caused after delivering
  }
}

export function bodyCap() {
  return (dispatch: Dispatch): Dispatch =>
    (opts, handler) =>
      dispatch(opts, new Capped(handler, (opts as NetDispatchOptions).maxBodyBytes ?? MAX_UPSTREAM_BODY_BYTES));
}
