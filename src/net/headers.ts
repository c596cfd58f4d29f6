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
// Anything an HTTP/1.1 field value cannot carry: CR/LF/NUL would split a header, and the client
// refuses the other control characters and code points past U+00FF outright.
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

export function isDroppedHeader(name: string): boolean {
  const n = name.toLowerCase();
  return DROPPED.has(n) || n.startsWith('proxy-');
}

/** Lower-cased copy without dropped names, invalid names, or values that cannot be sent as they are. */
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
