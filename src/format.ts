/**
 * Number formatting for result messages. Messages carry the numbers a person needs to judge
 * the result ("USDC at 0.9712 is 2.88% off peg; block limit 2%"); observed/expected carry the
 * same numbers untouched.
 */

/** Up to `digits` significant digits, no exponent for ordinary magnitudes, no trailing zeros. */
export function fmtNum(n: number, digits = 6): string {
  if (!Number.isFinite(n)) return String(n);
  if (n === 0) return '0';
  const abs = Math.abs(n);
  if (abs >= 1e15 || abs < 1e-9) return n.toPrecision(digits);
  if (abs >= 10 ** digits) return Math.round(n).toString();
  return String(Number(n.toPrecision(digits)));
}

/** A fraction as a percentage: 0.0288 → "2.88%". */
export function fmtPct(fraction: number): string {
  if (!Number.isFinite(fraction)) return String(fraction);
  return `${fmtNum(Math.round(fraction * 100 * 1e4) / 1e4, 6)}%`;
}

// One formatter per precision: toLocaleString builds a new one on every call, which showed as the
// largest single cost of a simulation's message.
const USD_FORMATS = new Map<number, Intl.NumberFormat>();
function usdFormat(digits: number): Intl.NumberFormat {
  let f = USD_FORMATS.get(digits);
  if (!f) {
    f = new Intl.NumberFormat('en-US', { maximumFractionDigits: digits });
    USD_FORMATS.set(digits, f);
  }
  return f;
}

/** A USD amount with thousands separators: 1234567.891 → "$1,234,568"; small amounts keep cents. */
export function fmtUsd(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const digits = Math.abs(n) >= 1000 ? 0 : Math.abs(n) >= 1 ? 2 : 6;
  return `$${usdFormat(digits).format(n)}`;
}

/** Removes floating-point noise from a computed ratio (1 - 0.98 → 0.02, not 0.020000000000000018). */
export function roundRatio(x: number): number {
  return Math.round(x * 1e12) / 1e12;
}

/** Parses a JSON-RPC quantity ("0x1b") to a number; null when it is not a hex quantity. */
export function hexQuantity(v: unknown): number | null {
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{1,64}$/.test(v)) return null;
  return Number(BigInt(v));
}
