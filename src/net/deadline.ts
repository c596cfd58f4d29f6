/**
 * One signal that fires on the caller's abort or after `timeoutMs`, whichever comes first.
 * Built from a plain timer and listener (removed by `done`) rather than AbortSignal.any, whose
 * dependent signals stay referenced by long-lived parents on Node 20.
 */
export interface Deadline {
  signal: AbortSignal;
  done(): void;
}

export function deadline(parent: AbortSignal | undefined, timeoutMs: number | undefined): Deadline {
  if (timeoutMs === undefined && parent) return { signal: parent, done: () => {} };
  const ctl = new AbortController();
  const onAbort = (): void => ctl.abort(parent?.reason);
  if (parent?.aborted) ctl.abort(parent.reason);
  else parent?.addEventListener('abort', onAbort, { once: true });
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => ctl.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  timer?.unref();
  return {
    signal: ctl.signal,
    done() {
      if (timer) clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}
