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

/**
 * `abs` (finite, not negative, below 1e21) rounded to at most `digits` fraction digits, without
 * trailing zeros, as Intl.NumberFormat rounds: the number's shortest decimal text (its String),
 * half away from zero (2.675 → "2.68", though the double is a little below 2.675).
 */
function roundedText(abs: number, digits: number): string {
  const s = String(abs);
  const e = s.indexOf('e');
  if (e !== -1) {
    // Only below 1e-6 here: d.ddde-N with N ≥ 7, which rounds to one millionth or to zero.
    const exp = Number(s.slice(e + 1));
    if (digits === 6 && exp === -7 && s.charCodeAt(0) >= 0x35) return '0.000001';
    return '0';
  }
  const dot = s.indexOf('.');
  if (dot === -1 || s.length - dot - 1 <= digits) return s;
  const up = s.charCodeAt(dot + 1 + digits) >= 0x35;
  let kept = digits === 0 ? s.slice(0, dot) : s.slice(0, dot + 1 + digits);
  if (up) {
    // Add one in the last kept place, carrying leftwards over nines (and over the point).
    const chars = kept.split('');
    let i = chars.length - 1;
    for (; i >= 0; i--) {
      if (chars[i] === '.') continue;
      if (chars[i] === '9') chars[i] = '0';
      else {
        chars[i] = String.fromCharCode(chars[i].charCodeAt(0) + 1);
        break;
      }
    }
    kept = i < 0 ? `1${chars.join('')}` : chars.join('');
  }
  if (digits > 0) {
    let end = kept.length;
    while (kept.charCodeAt(end - 1) === 0x30) end--;
    if (kept.charCodeAt(end - 1) === 0x2e) end--;
    kept = kept.slice(0, end);
  }
  return kept;
}

/**
 * A USD amount with thousands separators: 1234567.891 → "$1,234,568"; small amounts keep cents.
 * The text is en-US Intl.NumberFormat's with at most 0, 2 or 6 fraction digits, made without it
 * below 1e21 (a guard's answer under a policy writes one or two, and the formatter's call cost
 * more than the rest of its message).
 */
export function fmtUsd(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const abs = Math.abs(n);
  const digits = abs >= 1000 ? 0 : abs >= 1 ? 2 : 6;
  if (abs >= 1e21) return `$${usdFormat(digits).format(n)}`;
  let text = roundedText(abs, digits);
  const dot = text.indexOf('.');
  const int = dot === -1 ? text : text.slice(0, dot);
  if (int.length > 3) {
    let grouped = int.slice(0, ((int.length - 1) % 3) + 1);
    for (let i = grouped.length; i < int.length; i += 3) grouped += `,${int.slice(i, i + 3)}`;
    text = dot === -1 ? grouped : `${grouped}${text.slice(dot)}`;
  }
  // Intl writes the sign of a negative amount, and of negative zero, as a hyphen-minus.
  return n < 0 || Object.is(n, -0) ? `$-${text}` : `$${text}`;
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
