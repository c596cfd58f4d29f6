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
