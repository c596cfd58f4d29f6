/**
 * Timers alive in this process, by their delay, ref'd or not: an AbortSignal.timeout's timer is
 * unref'd and stays until it fires, so a call that left one behind shows here after its answer.
 * The hook is enabled when this module is first imported; undici's keep-alive timers are of other
 * delays than the ones the tests look for.
 */
import { createHook } from 'node:async_hooks';

const liveTimers = new Map<number, number>();
createHook({
  init(id, type, _trigger, resource) {
    if (type === 'Timeout') liveTimers.set(id, (resource as { _idleTimeout?: number })._idleTimeout ?? -1);
  },
  destroy(id) {
    liveTimers.delete(id);
  },
}).enable();

/** How many timers of `delayMs` are alive, read after the current turn's immediates have run. */
export async function timersOf(delayMs: number): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  return [...liveTimers.values()].filter((d) => d === delayMs).length;
}
