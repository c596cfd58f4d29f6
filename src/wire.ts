/**
 * Named parts of the wire types. The schemas own these vocabularies (src/generated/types.ts is
 * built from schemas/), so they sit in the lowest layer and every folder reads them from here
 * rather than from the layer that happens to use them most (docs/layers.md §2).
 */
import type { CheckResult, DecideResponse, HTTPValidationError } from './generated/types.js';

/** The answer: proceed, wait or block (docs/rules.md). */
export type Verdict = DecideResponse['verdict'];

/** A check result's status (schemas/check-result.schema.json). */
export type CheckStatus = CheckResult['status'];

/** One item of a 422's `detail` array: where, what, and a stable type. */
export type ValidationDetail = HTTPValidationError['detail'][number];

/**
 * A value's own JSON text, kept under this key by whoever made the value when that is cheaper
 * than JSON.stringify walking it (an answer's attestation: src/attest/attester.ts; an evidence
 * item: src/engine/runner.ts). A symbol key, so JSON.stringify never sees it; sendJson
 * (src/http/errors.ts) writes the text in the value's place when the value is a property of the
 * body or an element of an array that is. The text must be exactly what JSON.stringify of the
 * value gives; a value that cannot vouch for that gives undefined and is walked.
 */
export const JSON_TEXT: unique symbol = Symbol('JSON text');

/** What JSON escapes in a string: a control character, a quote, a backslash, or a surrogate (written as is only in a pair). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON escapes.
const ESCAPED = /[\u0000-\u001f"\\\ud800-\udfff]/;

/**
 * JSON.stringify of a string, without the call into the runtime when the string holds nothing JSON
 * escapes: for the names, codes and sentences an answer's text is built from, the scan costs less
 * than the call (a short string is scanned here, a longer one by the regular expression).
 */
export function jsonString(s: string): string {
  if (s.length > 24) return ESCAPED.test(s) ? JSON.stringify(s) : `"${s}"`;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(s);
  }
  return `"${s}"`;
}

/**
 * The JSON text of `value`, made once per frozen object (one shared by many rows or answers, such
 * as a span's limit windows or a version's policy reference) and kept in `cache`; any other object's
 * is made afresh, as it may have changed since.
 */
export function frozenText<T extends object>(cache: WeakMap<T, string>, value: T, make: (v: T) => string): string {
  if (!Object.isFrozen(value)) return make(value);
  let text = cache.get(value);
  if (text === undefined) {
    text = make(value);
    cache.set(value, text);
  }
  return text;
}
