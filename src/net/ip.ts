/**
 * IP literal parsing. IPv4 accepts every numeric spelling that WHATWG URL and inet_aton accept
 * (decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1, short 127.1), so a host that some layer
 * would read as an address is always recognised as one here too.
 */
import { isIPv6 } from 'node:net';

const DEC = /^(?:0|[1-9][0-9]*)$/;
const OCT = /^0[0-7]+$/;
const HEX = /^0x[0-9a-f]*$/i;

function part(s: string): number | null {
  if (s.length > 34) return null; // longer than any 32-bit value in any base
  if (HEX.test(s)) return s.length === 2 ? 0 : parseInt(s.slice(2), 16);
  if (OCT.test(s)) return parseInt(s.slice(1), 8);
  if (DEC.test(s)) return parseInt(s, 10);
  return null;
}

/** Parse an IPv4 address in any numeric spelling; the 32-bit value, or null when it is not one. */
export function parseIPv4(input: string): number | null {
  const parts = input.split('.');
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop(); // WHATWG allows one trailing dot
  if (parts.length === 0 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const p of parts) {
    const n = part(p);
    if (n === null) return null;
    nums.push(n);
  }
  const last = nums.pop() as number;
  if (nums.some((n) => n > 255)) return null;
  if (last >= 256 ** (4 - nums.length)) return null;
  let v = last;
  for (let i = 0; i < nums.length; i++) v += nums[i] * 256 ** (3 - i);
  return v;
}

export function formatIPv4(v: number): string {
  return `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

/** Parse an IPv6 address (brackets and a zone id allowed) into eight 16-bit groups. */
export function parseIPv6(input: string): number[] | null {
  let s = input;
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (!isIPv6(s)) return null;
  const lastColon = s.lastIndexOf(':');
  if (s.indexOf('.', lastColon) > 0) {
    // Embedded dotted IPv4 in the last 32 bits (::ffff:127.0.0.1): rewrite it as two hex groups.
    // isIPv6 has already checked that the dotted part is strict.
    const v4 = parseIPv4(s.slice(lastColon + 1)) as number;
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const compressed = s.indexOf('::');
  const head = compressed >= 0 ? s.slice(0, compressed) : s;
  const rest = compressed >= 0 ? s.slice(compressed + 2) : null;
  const h = head ? head.split(':').map((g) => parseInt(g, 16)) : [];
  const r = rest ? rest.split(':').map((g) => parseInt(g, 16)) : [];
  const fill = rest === null ? 0 : 8 - h.length - r.length;
  const groups = [...h, ...new Array<number>(fill).fill(0), ...r];
  return groups.length === 8 ? groups : null;
}

export function formatIPv6(g: number[]): string {
  // Canonical enough for a URL host: lower-case hex, no compression needed for correctness.
  return g.map((x) => x.toString(16)).join(':');
}

/** The address as a connectable literal (dotted IPv4 or plain IPv6), or null when it is not an IP. */
export function canonicalIp(input: string): { family: 4 | 6; ip: string } | null {
  const v6 = parseIPv6(input);
  if (v6) return { family: 6, ip: formatIPv6(v6) };
  const v4 = parseIPv4(input);
  if (v4 !== null) return { family: 4, ip: formatIPv4(v4) };
  return null;
}
