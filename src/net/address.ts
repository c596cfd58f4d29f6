/**
 * Address classifier for the SSRF rules: which IPs a request-supplied URL may reach. Anything
 * that is not plainly public unicast is forbidden, including ranges that merely might route
 * somewhere local (IPv4-compatible, Teredo, site-local, unallocated IPv6).
 */
import { parseIPv4, parseIPv6 } from './ip.js';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'unique_local'
  | 'multicast'
  | 'unspecified'
  | 'reserved'
  | 'cgnat'
  | 'documentation'
  | 'benchmark'
  | 'broadcast'
  | 'invalid';

type V4Range = readonly [base: string, prefix: number, cls: AddressClass];

// Most specific first where ranges nest (broadcast inside 240/4).
const V4_RANGES: readonly V4Range[] = [
  ['0.0.0.0', 8, 'unspecified'], // "this network": Linux connects 0.0.0.0 to the local host
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'cgnat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link_local'], // includes the cloud metadata address 169.254.169.254
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmark'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
];

const V4_TABLE = V4_RANGES.map(([base, prefix, cls]) => {
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  return { net: ((parseIPv4(base) as number) & mask) >>> 0, mask, cls };
});

export function classifyIPv4(v: number): AddressClass {
  for (const r of V4_TABLE) if ((v & r.mask) >>> 0 === r.net) return r.cls;
  return 'public';
}

function groupsPrefix(g: number[], prefix: number[], bits: number): boolean {
  for (let i = 0; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((g[i] & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

const embedded = (hi: number, lo: number): number => ((hi << 16) | lo) >>> 0;

type V6Range = readonly [prefix: number[], bits: number, cls: AddressClass | ((g: number[]) => AddressClass)];

// Checked in order; anything outside 2000::/3 that no row names is unallocated, hence reserved.
const V6_TABLE: readonly V6Range[] = [
  [[0, 0, 0, 0, 0, 0, 0, 0], 128, 'unspecified'],
  [[0, 0, 0, 0, 0, 0, 0, 1], 128, 'loopback'],
  [[0, 0, 0, 0, 0, 0xffff], 96, (g) => classifyIPv4(embedded(g[6], g[7]))], // IPv4-mapped
  [[0, 0, 0, 0, 0xffff, 0], 96, (g) => classifyIPv4(embedded(g[6], g[7]))], // IPv4-translated (SIIT)
  [[0x64, 0xff9b, 0, 0, 0, 0], 96, (g) => classifyIPv4(embedded(g[6], g[7]))], // NAT64 well-known
  [[0x64, 0xff9b, 1], 48, 'private'], // NAT64 local use
  [[0x2001, 0x2, 0], 48, 'benchmark'],
  [[0x2001, 0xdb8], 32, 'documentation'],
  [[0x2001], 23, 'reserved'], // IETF protocol assignments, Teredo, ORCHID
  [[0x2002], 16, (g) => classifyIPv4(embedded(g[1], g[2]))], // 6to4 carries an IPv4 address
  [[0x3fff], 20, 'documentation'],
  [[0x5f00], 16, 'reserved'], // SRv6 SIDs
  [[0x2000], 3, 'public'],
  [[0xfc00], 7, 'unique_local'],
  [[0xfe80], 10, 'link_local'],
  [[0xff00], 8, 'multicast'],
];

export function classifyIPv6(g: number[]): AddressClass {
  for (const [prefix, bits, cls] of V6_TABLE) {
    if (groupsPrefix(g, prefix, bits)) return typeof cls === 'function' ? cls(g) : cls;
  }
  return 'reserved'; // ::/96 IPv4-compatible, 100::/64 discard, fec0::/10 site-local, unallocated
}

/**
 * Classify an IP literal in any spelling a resolver or URL parser might accept
 * (2130706433, 0177.0.0.1, 0x7f.1, 127.1, [::ffff:127.0.0.1], fe80::1%eth0).
 * A string that is not an IP address is 'invalid'.
 */
export function classifyAddress(ip: string): AddressClass {
  const v6 = parseIPv6(ip);
  if (v6) return classifyIPv6(v6);
  const v4 = parseIPv4(ip);
  if (v4 !== null) return classifyIPv4(v4);
  return 'invalid';
}

/** True for every address a request-supplied URL must not reach (all but public unicast). */
export function isForbiddenAddress(ip: string): boolean {
  return classifyAddress(ip) !== 'public';
}
