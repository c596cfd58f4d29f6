/**
 * Hostile JSON values for the body fuzz, and the mutations that plant them in a valid body.
 * Trees are serialised here rather than by JSON.stringify, so raw JSON text (1e309, 2**80,
 * 40,000 nested arrays) can stand anywhere in a small tree, and own `__proto__` keys survive.
 */
import fc from 'fast-check';

/** JSON text inserted verbatim where it stands in a tree. */
export class Raw {
  constructor(readonly text: string) {}
}

type Tree = Record<string, unknown> | unknown[];
const isTree = (v: unknown): v is Tree => v !== null && typeof v === 'object' && !(v instanceof Raw);

export function serialize(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  if (isTree(v))
    return `{${Object.keys(v)
      .map((k) => `${JSON.stringify(k)}:${serialize((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** Writes an own property, even for `__proto__`, where plain assignment would set the prototype. */
export function put(o: Tree, key: string | number, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

export function own(key: string, value: unknown): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  put(o, key, value);
  return o;
}

/** Deep copy keeping own `__proto__` keys; Raw leaves are immutable and shared. */
export function clone<T>(v: T): T {
  if (!isTree(v)) return v;
  if (Array.isArray(v)) return v.map(clone) as T;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) put(out, k, clone((v as Record<string, unknown>)[k]));
  return out as T;
}

export const EDGE_NUMBERS = [
  '1e308',
  '-1e308',
  '1e309',
  '-1e309',
  '-0',
  '0',
  '5e-324',
  '4e-325',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '-9007199254740993',
  '123456789012345678901234567890123456789',
  '0.30000000000000004',
  '1E+2',
  '-1',
  '2147483648',
  '1.5',
  '49',
  '50',
  '10000',
  '10001',
  '599',
  '600',
  '1e-7',
];

export const numberArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...EDGE_NUMBERS).map((s) => new Raw(s)),
  fc.double(),
  fc.integer(),
  fc.bigInt({ min: -(2n ** 90n), max: 2n ** 90n }).map((b) => new Raw(b.toString())),
);

export const SPECIAL_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  'x\ud83dy',
  '\ud83d\ude00',
  '\u202eevil\u202c',
  '\u200f\u202bשלום',
  '\ufeff',
  '\u2028\u2029',
  '\ud835\udd4f'.repeat(1000),
  '<script>alert(1)</script>',
  "'; DROP TABLE api_keys; --",
  '../../etc/passwd',
  '%00',
  '${7*7}',
  '{{7*7}}',
  '\r\nX-Injected: 1',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'usd-coin',
  '0x',
  '0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
];

const loneSurrogates = fc.string({
  unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
  maxLength: 8,
});

export const stringArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: loneSurrogates },
  // From a little over the field limits to past the 256 KiB body limit.
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom('x', '\ud83e\udd84', '\u0000', '\u00e9', '\u202e'),
        fc.integer({ min: 2000, max: 140_000 }),
      )
      .map(([c, n]) => c.repeat(n)),
  },
);

export function deepText(kind: 'array' | 'object' | 'proto' | 'constructor', n: number): string {
  switch (kind) {
    case 'array':
      return '['.repeat(n) + ']'.repeat(n);
    case 'object':
      return '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    case 'proto':
      return '{"__proto__":'.repeat(n) + '{"polluted":"yes"}' + '}'.repeat(n);
    case 'constructor':
      return '[{"constructor":'.repeat(n) + '{"prototype":{"polluted":"yes"}}' + '}]'.repeat(n);
  }
}

/** Nesting around the depth limit, and thousands deep (some past the body limit). */
export const deepArb: fc.Arbitrary<Raw> = fc
  .tuple(
    fc.constantFrom('array', 'object', 'proto', 'constructor') as fc.Arbitrary<
      'array' | 'object' | 'proto' | 'constructor'
    >,
    fc.oneof(fc.integer({ min: 55, max: 70 }), fc.integer({ min: 1000, max: 40_000 })),
  )
  .map(([kind, n]) => new Raw(deepText(kind, n)));

export const DANGEROUS_KEYS = ['__proto__', 'constructor', 'prototype'];

/** Objects whose own keys would pollute a prototype if merged with assignment. */
export const polluterArb: fc.Arbitrary<unknown> = fc
  .constantFrom(...DANGEROUS_KEYS)
  .chain((k) =>
    fc
      .constantFrom<unknown>(
        { polluted: 'yes' },
        { prototype: { polluted: 'yes' } },
        own('__proto__', { polluted: 'yes' }),
        'polluted',
      )
      .map((v) => own(k, v)),
  );

export const wrongTypeArb: fc.Arbitrary<unknown> = fc.constantFrom<unknown>(
  null,
  true,
  false,
  0,
  -1,
  '',
  'str',
  [],
  {},
  [1, 'a', null],
  { a: 1 },
);

export const wildArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: wrongTypeArb },
  { weight: 3, arbitrary: numberArb },
  { weight: 3, arbitrary: stringArb },
  { weight: 2, arbitrary: polluterArb },
  { weight: 1, arbitrary: deepArb },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

export interface Mutation {
  op: 'replace' | 'delete' | 'add';
  at: number;
  key: string;
  value: unknown;
}

export const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom<Mutation['op']>('replace', 'replace', 'delete', 'add'),
  at: fc.nat(),
  key: fc.oneof(
    fc.constantFrom(...DANGEROUS_KEYS, 'polluted', 'deadline_ms', 'type', 'goal', 'action'),
    fc.string({ maxLength: 8 }),
  ),
  value: wildArb,
});

/** Every container and every (container, key) slot of a tree, in a stable order. */
function walk(root: unknown): { containers: Tree[]; slots: Array<[Tree, string | number]> } {
  const containers: Tree[] = [];
  const slots: Array<[Tree, string | number]> = [];
  const visit = (v: unknown): void => {
    if (!isTree(v)) return;
    containers.push(v);
    const keys: Array<string | number> = Array.isArray(v) ? v.map((_, i) => i) : Object.keys(v);
    for (const k of keys) {
      slots.push([v, k]);
      visit((v as Record<string | number, unknown>)[k]);
    }
  };
  visit(root);
  return { containers, slots };
}

/** Applies mutations to a copy of `body`. The body itself may be replaced when it is not a tree. */
export function mutate(body: unknown, mutations: readonly Mutation[]): unknown {
  const root = clone(body);
  for (const mutation of mutations) {
    // Generated values may be shared constants: plant copies, never the instances themselves.
    const m = { ...mutation, value: clone(mutation.value) };
    const { containers, slots } = walk(root);
    if (m.op === 'add' || slots.length === 0) {
      if (containers.length === 0) continue;
      const c = containers[m.at % containers.length];
      if (Array.isArray(c)) c.push(m.value);
      else put(c, m.key, m.value);
      continue;
    }
    const [parent, key] = slots[m.at % slots.length];
    if (m.op === 'replace') put(parent, key, m.value);
    else if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete (parent as Record<string, unknown>)[key];
  }
  return root;
}
