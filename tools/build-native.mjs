// Builds the prepared-nonce addon (native/nonces, docs/attestations.md §3) with node-gyp, from the
// libsecp256k1 source that the `secp256k1` package ships. Run by `npm ci` (the `prepare` script).
// Without a C compiler the service still runs: the signing thread prepares nonces in JavaScript,
// slower. So a failed build only warns, except in CI (CI=true), where it fails the install.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const dir = join(root, 'native', 'nonces');

function fail(message) {
  if (process.env.CI === 'true') {
    console.error(`build-native: ${message}`);
    process.exit(1);
  }
  console.warn(`build-native: ${message}; the signing thread will prepare nonces in JavaScript (slower)`);
  process.exit(0);
}

let source;
try {
  source = join(dirname(require.resolve('secp256k1/package.json')), 'src', 'secp256k1');
} catch {
  fail('the secp256k1 package is not installed');
}
if (!existsSync(join(source, 'src', 'secp256k1.c'))) fail(`no libsecp256k1 source under ${source}`);
let gyp;
try {
  gyp = require.resolve('node-gyp/bin/node-gyp.js');
} catch {
  fail('node-gyp is not installed (a dev dependency)');
}
// The headers of the running node: npm's own setting when run by npm, else the installation's
// include/ (node-gyp would otherwise download them).
const args = [gyp, 'rebuild', '--silent'];
const prefix = join(dirname(process.execPath), '..');
if (!process.env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h')))
  args.push(`--nodedir=${prefix}`);
const run = spawnSync(process.execPath, [...args, '--', `-Dsecp256k1_dir=${source}`], {
  cwd: dir,
  stdio: 'inherit',
});
if (run.status !== 0) fail(`node-gyp rebuild failed (exit ${run.status ?? run.signal})`);
