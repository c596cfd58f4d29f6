/**
 * The layer rules of docs/layers.md §2, held on the import graph of src/ as the compiler parses
 * it. The layer table is read from docs/layers.md §1 itself. Each rule is also run on the real
 * graph with one import planted against it, so a rule that could not fail would show here.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import {
  crossFolderCycles,
  cycles,
  type Edge,
  importsOf,
  importsOutside,
  type Layer,
  parseLayers,
  rankOf,
  readGraph,
  unplaced,
  upwardImports,
} from './graph.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url)); // dist/test/layers → repo root
const layers = parseLayers(readFileSync(`${ROOT}docs/layers.md`, 'utf8'));
const { files, edges } = readGraph(`${ROOT}src`);

const foundation = (l: Layer[]) => (to: string) => rankOf(l, to) === 0;
/** Rule 3: net/ imports only net/ and layer 0. */
const netProblems = (l: Layer[], e: Edge[]) =>
  importsOutside(e, 'net/', (to) => to.startsWith('net/') || foundation(l)(to));
/** Rule 4: nothing under checks/ or scan/ imports http/. */
const httpProblems = (e: Edge[]) => [
  ...importsOutside(e, 'checks/', (to) => !to.startsWith('http/')),
  ...importsOutside(e, 'scan/', (to) => !to.startsWith('http/')),
];
const planted = (from: string, to: string): Edge[] => [...edges, { from, to, specifier: 'planted', typeOnly: true }];
/** What a rule says of the graph with a planted import that it does not say of the real one. */
const added = (rule: (e: Edge[]) => string[], withPlant: Edge[]): string[] => {
  const before = new Set(rule(edges));
  return rule(withPlant).filter((p) => !before.has(p));
};

t.test('the graph is the real one', async (t) => {
  t.ok(files.length > 100, `${files.length} files under src/`);
  t.ok(edges.length > 400, `${edges.length} imports between them`);
  t.ok(layers.length >= 10, `${layers.length} rows in docs/layers.md §1`);
  const known = new Set(files);
  t.same(
    edges.filter((e) => !known.has(e.to)).map((e) => `src/${e.from}: ${e.specifier}`),
    [],
    'every relative import names a file under src/',
  );
  t.same(
    layers.map((l) => l.rank),
    layers.map((_, i) => i),
    'the rows are ranked 0, 1, 2… in order',
  );
});

t.test('every file under src/ is in one row of docs/layers.md §1', async (t) => {
  t.same(unplaced(layers, files), [], 'files in no layer');
  const entries = layers.flatMap((l) => l.entries);
  t.same(
    entries.filter((e, i) => entries.indexOf(e) !== i),
    [],
    'no entry in two rows',
  );
  t.same(
    entries.filter((e) => !files.some((f) => (e.endsWith('/') ? f.startsWith(e) : f === e))),
    [],
    'no row names a folder or file that is not there',
  );
});

t.test('rule 1: imports go downward only', async (t) => {
  t.same(upwardImports(layers, edges), [], 'imports of a higher layer');
});

t.test('rule 2: no import circle crosses a folder', async (t) => {
  t.same(crossFolderCycles(files, edges), [], 'circles over more than one folder');
});

t.test('rule 3: net/ knows no provider', async (t) => {
  t.same(netProblems(layers, edges), [], 'imports from net/ of anything but net/ and layer 0');
});

t.test('rule 4: nothing under checks/ or scan/ imports http/', async (t) => {
  t.same(httpProblems(edges), [], 'imports of http/ from checks/ or scan/');
});

t.test('each rule fails on an import planted against it', async (t) => {
  const intoMetrics = planted('net/breaker.ts', 'metrics.ts');
  t.same(
    added((e) => upwardImports(layers, e), intoMetrics),
    ['src/net/breaker.ts → src/metrics.ts (type only): layer 1 imports layer 2'],
    'rule 1 names the import',
  );
  t.same(
    added((e) => netProblems(layers, e), planted('net/rpc.ts', 'upstreams/price.ts')),
    ['src/net/rpc.ts → src/upstreams/price.ts (type only)'],
    'rule 3 names the import',
  );
  t.same(
    added(httpProblems, planted('scan/typed-data-shape.ts', 'http/errors.ts')),
    ['src/scan/typed-data-shape.ts → src/http/errors.ts (type only)'],
    'rule 4 names the import',
  );
  // metrics.ts imports net/breaker.ts: a type import back closes a circle over two folders.
  const circles = added((e) => crossFolderCycles(files, e), intoMetrics);
  t.equal(circles.length, 1, 'rule 2 finds the circle');
  t.match(circles[0], /^a circle of \d+ files over /, 'and says how many files');
  t.ok(circles[0].includes('metrics.ts') && circles[0].includes('net/breaker.ts'), 'and names them');
  // scan/typed-data.ts imports scan/rules.ts: an import back is a circle inside scan/ alone.
  const inside = planted('scan/rules.ts', 'scan/typed-data.ts');
  t.ok(
    cycles(files, inside).some((c) => c.includes('scan/rules.ts') && c.includes('scan/typed-data.ts')),
    'a circle inside one folder is a circle',
  );
  t.same(
    added((e) => crossFolderCycles(files, e), inside),
    [],
    'but is allowed',
  );
  t.same(unplaced(layers, [...files, 'newfolder/thing.ts']), ['src/newfolder/thing.ts'], 'a file in no row is named');
});

t.test('the parser sees every form of import', async (t) => {
  const source = [
    "import a from './a.js';",
    "import type { B } from './b.js';",
    "import { type C, type D } from './c.js';",
    "import { type E, f } from './e.js';",
    "import './side-effect.js';",
    "export { g } from './g.js';",
    "export type { H } from './h.js';",
    "export * from './star.js';",
    "const lazy = await import('./lazy.js');",
    "let q: import('./query.js').Q;",
    "import fs from 'node:fs';",
  ].join('\n');
  t.same(importsOf('x.ts', source), [
    { specifier: './a.js', typeOnly: false },
    { specifier: './b.js', typeOnly: true },
    { specifier: './c.js', typeOnly: true },
    { specifier: './e.js', typeOnly: false },
    { specifier: './side-effect.js', typeOnly: false },
    { specifier: './g.js', typeOnly: false },
    { specifier: './h.js', typeOnly: true },
    { specifier: './star.js', typeOnly: false },
    { specifier: './lazy.js', typeOnly: false },
    { specifier: './query.js', typeOnly: true },
    { specifier: 'node:fs', typeOnly: false },
  ]);
});
