// After a failed `npm test`: which saved test outputs (.tap/test-results) do not parse as passing, and why.
// tap can exit 1 with every assertion counted as passed (a nested plan that does not match, a bail-out
// inside a subtest); its summary then does not say which file it was.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Parser } from 'tap-parser';

const root = '.tap/test-results';
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.tap')) files.push(p);
  }
};
try {
  walk(root);
} catch (err) {
  console.log(`no saved test outputs under ${root}: ${err.message}`);
  process.exit(0);
}
/** Why a parser's results are not ok, nested subtests included, each named by its path. */
const watch = (parser, path, why) => {
  parser.on('child', (child) => watch(child, [...path, child.name || '(unnamed)'], why));
  parser.on('complete', (r) => {
    if (r.ok) return;
    const at = path.length ? `${path.join(' > ')}: ` : '';
    if (r.bailout) why.push(`${at}bailed out: ${r.bailout}`);
    if (r.plan && r.plan.end !== r.count) why.push(`${at}plan 1..${r.plan.end}, ${r.count} test points`);
    for (const x of r.failures ?? []) why.push(`${at}not ok ${x.id ?? ''} ${x.name ?? ''} ${x.tapError ?? ''}`.trim());
  });
};
const check = (text) =>
  new Promise((resolve) => {
    const why = [];
    const parser = new Parser((r) => resolve({ ok: r.ok, why }));
    watch(parser, [], why);
    parser.end(text);
  });
let bad = 0;
for (const f of files.sort()) {
  const { ok, why } = await check(readFileSync(f, 'utf8'));
  if (ok) continue;
  bad++;
  console.log(`${f}: not ok${why.length ? `\n  ${why.join('\n  ')}` : ''}`);
}
console.log(`${files.length} saved test outputs, ${bad} not ok`);
