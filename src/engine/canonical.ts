/**
 * Stable JSON of a validated check (defaults already applied): the cache and single-flight key.
 * Keys are sorted and a null field counts as absent, as it does for every optional field.
 * Built with plain loops: it runs for every check of every request, cache hits included.
 */
import { OldestFirst } from '../oldest-first.js';

export function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let s = '[';
    for (let i = 0; i < value.length; i++) s += (i === 0 ? '' : ',') + canonical(value[i]);
    return s + ']';
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let s = '{';
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined || v === null) continue;
    s += (s.length === 1 ? '' : ',') + JSON.stringify(k) + ':' + canonical(v);
  }
  return s + '}';
}

const MEMO_MAX_ENTRIES = 4096;
const MEMO_MAX_TEXT = 2048;
const memo = new Map<string, string>();
const memoOldest = new OldestFirst(memo);

/**
 * The cache and single-flight key of a validated check, `type:canonical(check)`, remembered by
 * the check's plain JSON text. Agents repeat the same checks written the same way: the native
 * JSON.stringify plus a lookup costs half the sorted walk, and handing back the same key string
 * every time lets the cache's own lookups reuse its hash. Equal texts are equal values, so the
 * answer is the same as computing it; large checks and a full memo (cleared oldest first) only
 * cost the computation.
 */
export function checkKey(check: { type: string }): string {
  const text = JSON.stringify(check);
  if (text.length > MEMO_MAX_TEXT) return `${check.type}:${canonical(check)}`;
  let key = memo.get(text);
  if (key === undefined) {
    key = `${check.type}:${canonical(check)}`;
    if (memo.size >= MEMO_MAX_ENTRIES) memoOldest.evict();
    memo.set(text, key);
  }
  return key;
}

const BODY_MEMO_MAX_ENTRIES = 512;
const BODY_MEMO_MAX_TEXT = 4096;

/**
 * The checkKey of each check a request asks for, remembered by the text of the request's body. An
 * agent that asks the same question again sends the same bytes: one lookup of the body's text then
 * stands for a JSON.stringify and a lookup per check, most of what keying a cached answer costs.
 *
 * One memo serves one way of turning a body into checks (the decide handler's `checks`, the guard's
 * plan), each with its own schema and config fixed for the process: the same text then gives the
 * same checks, so the keys are the ones checkKey would give. Without the text (a body read by
 * body-parser), for a long body, or for a list whose length does not match what was remembered,
 * each check is keyed as usual.
 */
export class CheckKeys {
  readonly #memo = new Map<string, readonly string[]>();
  readonly #oldest = new OldestFirst(this.#memo);

  of(bodyText: string | undefined, checks: readonly { type: string }[]): readonly string[] {
    if (bodyText === undefined || bodyText.length > BODY_MEMO_MAX_TEXT) return checks.map(checkKey);
    let keys = this.#memo.get(bodyText);
    if (keys === undefined || keys.length !== checks.length) {
      keys = checks.map(checkKey);
      if (this.#memo.size >= BODY_MEMO_MAX_ENTRIES) this.#oldest.evict();
      this.#memo.set(bodyText, keys);
    }
    return keys;
  }
}
