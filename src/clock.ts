/**
 * The current time as ISO 8601 text, made once per millisecond. A busy service stamps an answer's
 * `evaluated_at` and its log lines several thousand times a second; many fall in the same
 * millisecond, and Date#toISOString is among the dearer calls an answer makes.
 */
let lastMs = -1;
let lastText = '';

export function isoNow(ms: number = Date.now()): string {
  if (ms !== lastMs) {
    lastMs = ms;
    lastText = new Date(ms).toISOString();
  }
  return lastText;
}
