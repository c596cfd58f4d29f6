/**
 * The import graph of src/, read from the TypeScript sources with the compiler's own parser:
 * `import`, `import type`, `export … from`, `import("…")` calls and `import("…").T` type
 * queries all count as edges (a type-only import still ties two layers together). Only relative
 * specifiers are followed; packages and `node:` builtins are outside the graph. See docs/layers.md.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** One import: the importing file, the imported file (both relative to src/, posix), the specifier. */
export interface Edge {
  from: string;
  to: string;
  specifier: string;
  typeOnly: boolean;
}

function listTs(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listTs(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The specifiers a source file imports, with whether each is type-only. */
export function importsOf(fileName: string, text: string): Array<{ specifier: string; typeOnly: boolean }> {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: Array<{ specifier: string; typeOnly: boolean }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      found.push({ specifier: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly });
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument;
      if (ts.isLiteralTypeNode(arg) && ts.isStringLiteral(arg.literal)) {
        found.push({ specifier: arg.literal.text, typeOnly: true });
      }
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length > 0 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false });
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push({ specifier: node.moduleReference.expression.text, typeOnly: node.isTypeOnly });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Every file under `srcDir` (relative, posix) and every edge between two of them. */
export function readGraph(srcDir: string): { files: string[]; edges: Edge[] } {
  const root = resolve(srcDir);
  const toKey = (abs: string) => relative(root, abs).split(sep).join(posix.sep);
  const paths = listTs(root);
  const files = paths.map(toKey).sort();
  const known = new Set(files);
  const edges: Edge[] = [];
  for (const abs of paths) {
    const from = toKey(abs);
    for (const { specifier, typeOnly } of importsOf(abs, readFileSync(abs, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      // A JSON data file (the embedded sanctions snapshot) imports nothing: not a node of the graph.
      if (specifier.endsWith('.json') && existsSync(resolve(dirname(abs), specifier))) continue;
      const target = toKey(resolve(dirname(abs), specifier)).replace(/\.(m?js|cjs)$/, '');
      const to = [`${target}.ts`, `${target}/index.ts`, target].find((c) => known.has(c));
      // A relative import that resolves outside src/ (or to nothing) is still an edge to report.
      edges.push({ from, to: to ?? target, specifier, typeOnly });
    }
  }
  return { files, edges };
}

/** The folder a file belongs to: its directory under src/, '.' for the files at the top. */
export function folderOf(file: string): string {
  return posix.dirname(file);
}

/** The strongly connected components with more than one file (Tarjan), each sorted. */
export function cycles(files: string[], edges: Edge[]): string[][] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) next.get(e.from)?.push(e.to);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let counter = 0;
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!next.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const f of files) if (!index.has(f)) connect(f);
  return out;
}

/** One row of the layer table: its rank and its entries (`net/` a folder, `config.ts` a file). */
export interface Layer {
  rank: number;
  entries: string[];
}

/** The table of docs/layers.md §1: rows `| rank | `entry` `entry` … | … |` under its heading. */
export function parseLayers(markdown: string): Layer[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('1. '));
  if (section === undefined) throw new Error('docs/layers.md has no section "## 1."');
  const layers: Layer[] = [];
  for (const line of section.split('\n')) {
    const row = /^\|\s*(\d+)\s*\|([^|]*)\|/.exec(line);
    if (!row) continue;
    const entries = [...row[2].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    layers.push({ rank: Number(row[1]), entries });
  }
  return layers;
}

/** The rank of a file: the row whose entry matches it, the longest folder entry winning. */
export function rankOf(layers: Layer[], file: string): number | undefined {
  let best: { rank: number; length: number } | undefined;
  for (const { rank, entries } of layers) {
    for (const entry of entries) {
      const hit = entry.endsWith('/') ? file.startsWith(entry) : file === entry;
      if (hit && (best === undefined || entry.length > best.length)) best = { rank, length: entry.length };
    }
  }
  return best?.rank;
}

const show = (e: Edge): string => `src/${e.from} → src/${e.to}${e.typeOnly ? ' (type only)' : ''}`;

/** Files in no row of the table. */
export function unplaced(layers: Layer[], files: string[]): string[] {
  return files.filter((f) => rankOf(layers, f) === undefined).map((f) => `src/${f}`);
}

/** Imports of a higher layer (rule 1), each with both ranks. */
export function upwardImports(layers: Layer[], edges: Edge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    const from = rankOf(layers, e.from);
    const to = rankOf(layers, e.to);
    if (from === undefined || to === undefined) continue; // named by unplaced()
    if (to > from) out.push(`${show(e)}: layer ${from} imports layer ${to}`);
  }
  return out;
}

/** Circles whose files sit in more than one folder (rule 2). */
export function crossFolderCycles(files: string[], edges: Edge[]): string[] {
  return cycles(files, edges)
    .filter((c) => new Set(c.map(folderOf)).size > 1)
    .map((c) => `a circle of ${c.length} files over ${[...new Set(c.map(folderOf))].join(', ')}: ${c.join(', ')}`);
}

/** Imports from files under `under` to anything outside `allowed` (folders or top-level files). */
export function importsOutside(edges: Edge[], under: string, allowed: (to: string) => boolean): string[] {
  return edges.filter((e) => e.from.startsWith(under) && !allowed(e.to)).map(show);
}
