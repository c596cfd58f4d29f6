/**
 * Compiles contracts/PreflightAccount.sol with the pinned solc (contracts/compile.ts) into
 * contracts/build/PreflightAccount.json, `{ abi, bytecode }`, the artifact an operator or agent
 * deploys. `--check` compiles in memory and exits 1 when the committed artifact differs (drift),
 * as `npm run check:schemas` does for the generated validators. Runs from dist/contracts/.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTRACTS_DIR, compileContracts } from './compile.js';

/** Deployable contracts of the project (not the test fixtures), by source file. */
export const ARTIFACTS = ['PreflightAccount'] as const;

export function artifactText(name: (typeof ARTIFACTS)[number]): string {
  const c = compileContracts([`${name}.sol`])[name];
  if (!c) throw new Error(`${name}.sol has no contract ${name}`);
  return `${JSON.stringify({ contractName: name, compiler: 'solc 0.8.30', abi: c.abi, bytecode: c.bytecode }, null, 2)}\n`;
}

export const artifactPath = (name: string): string => join(CONTRACTS_DIR, 'build', `${name}.json`);

function main(): number {
  const check = process.argv.includes('--check');
  let drift = 0;
  for (const name of ARTIFACTS) {
    const text = artifactText(name);
    const path = artifactPath(name);
    if (check) {
      let committed = '';
      try {
        committed = readFileSync(path, 'utf8');
      } catch {
        // missing: drift
      }
      if (committed !== text) {
        process.stderr.write(
          `contracts/build/${name}.json is not what contracts/${name}.sol compiles to: run \`npm run contracts\`\n`,
        );
        drift++;
      }
    } else {
      mkdirSync(join(CONTRACTS_DIR, 'build'), { recursive: true });
      writeFileSync(path, text);
      process.stdout.write(`wrote contracts/build/${name}.json\n`);
    }
  }
  if (check && drift === 0) process.stdout.write('contracts: build artifacts match their sources\n');
  return drift === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === new URL(process.argv[1], 'file://').href) process.exitCode = main();
