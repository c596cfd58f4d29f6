/**
 * Bundles the operator console (console/src, docs/console.md §5) with esbuild into
 * dist/console/assets: one minified ES module and one stylesheet, no source maps, nothing loaded
 * from another origin at run time. `npm run build` runs it after tsc; it fails when the script is
 * over its budget of 150 KB gzipped.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const SOURCE = fileURLToPath(new URL('../../console/src/', import.meta.url));
const ASSETS = fileURLToPath(new URL('./assets/', import.meta.url));
const SCRIPT_BUDGET_GZIP = 150 * 1024;

mkdirSync(ASSETS, { recursive: true });
await build({
  entryPoints: { console: `${SOURCE}main.tsx` },
  outdir: ASSETS,
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});
const gz = gzipSync(readFileSync(`${ASSETS}console.js`)).length;
if (gz > SCRIPT_BUDGET_GZIP)
  throw new Error(`console.js is ${gz} bytes gzipped, over its budget of ${SCRIPT_BUDGET_GZIP}`);
console.log(`console: console.js ${gz} bytes gzipped (budget ${SCRIPT_BUDGET_GZIP})`);
