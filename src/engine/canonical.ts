/**
 * Stable JSON of a validated check (defaults already applied): the cache and single-flight key.
 * Keys are sorted and a null field counts as absent, as it does for every optional field.
 * Built with plain loops: it runs for every check of every request, cache hits included.
 */
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
