#!/usr/bin/env node
// Writes src/screening/ofac-snapshot.json, the embedded default sanctions list (docs/screening.md §1),
// from a clone of the public extraction of OFAC's SDN list by 0xB10C
// (https://github.com/0xB10C/ofac-sanctioned-digital-currency-addresses, branch `lists`):
//   node ops/ofac-snapshot.mjs <path to the clone's git directory> [commit]
// Every 0x address of 40 hex digits across the per-asset lists is kept, lowercased, with the
// assets it is tagged under. Nothing of the extraction's code is used: only its list files.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const [dir, rev = 'lists'] = process.argv.slice(2);
if (!dir) throw new Error('usage: node ops/ofac-snapshot.mjs <git dir> [commit]');
const git = (...a) => execFileSync('git', ['-C', dir, ...a], { encoding: 'utf8', maxBuffer: 64 << 20 });
const commit = git('rev-parse', rev).trim();
const date = git('log', '-1', '--format=%cI', commit).trim().slice(0, 10);
const files = git('ls-tree', '--name-only', commit)
  .split('\n')
  .filter((f) => /^sanctioned_addresses_[A-Z0-9]+\.json$/.test(f));
const assets = new Map();
for (const f of files) {
  const asset = f.slice('sanctioned_addresses_'.length, -'.json'.length);
  for (const a of JSON.parse(git('show', `${commit}:${f}`))) {
    if (typeof a !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(a)) continue;
    const k = a.toLowerCase();
    if (!assets.has(k)) assets.set(k, new Set());
    assets.get(k).add(asset);
  }
}
const entries = [...assets]
  .sort(([a], [b]) => (a < b ? -1 : 1))
  .map(([address, s]) => ({ address, assets: [...s].sort() }));
const out = {
  format: 'preflight-sanctions-list/1',
  name: 'ofac_sdn',
  kind: 'sanctions',
  source: 'https://github.com/0xB10C/ofac-sanctioned-digital-currency-addresses',
  commit,
  date,
  derived_from: "OFAC's SDN Advanced XML (sdn_advanced.xml), every 'Digital Currency Address - *' feature",
  entries,
};
// One entry a line, so a refresh of the snapshot reads as a diff of addresses.
const head = JSON.stringify({ ...out, entries: [] }, null, 1).replace(/\n "entries": \[\]\n\}$/, '');
const body = entries.map((e) => `  ${JSON.stringify(e)}`).join(',\n');
writeFileSync(new URL('../src/screening/ofac-snapshot.json', import.meta.url), `${head}\n "entries": [\n${body}\n ]\n}\n`);
console.log(`${entries.length} addresses from ${commit} of ${date}`);
