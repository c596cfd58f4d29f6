/**
 * Caller-supplied request headers for request-supplied URLs. The caller may not choose the Host
 * (it would defeat the address pinning), hop-by-hop headers, or framing (content-length,
 * transfer-encoding, expect) that could desynchronise the connection we share between requests.
 */
const DROPPED = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  'expect',
  'http2-settings',
]);

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\r\n\0]/;

export function isDroppedHeader(name: string): boolean {
  const n = name.toLowerCase();
  return DROPPED.has(n) || n.startsWith('proxy-');
}

/** Lower-cased copy without dropped names, invalid names, or values that could split a header. */
export function sanitizeHeaders(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string' || !TOKEN.test(name) || BAD_VALUE.test(value) || isDroppedHeader(name)) continue;
    out[name.toLowerCase()] = value;
  }
  return out;
}

/** Credentials meant for one origin; not carried across a redirect to another. */
export const ORIGIN_BOUND = ['authorization', 'cookie'] as const;
