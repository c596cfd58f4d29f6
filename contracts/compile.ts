/**
 * Compiles the project's Solidity sources with the pinned compiler from npm (`solc` 0.8.30, the
 * exact version in package.json), so no artifact is committed and none can drift from its source.
 * One compilation per process and set of files; every contract of every file is returned.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import solc from 'solc';

/** The repository's contracts/ directory (this file runs from dist/contracts/). */
export const CONTRACTS_DIR = fileURLToPath(new URL('../../contracts/', import.meta.url));
export const SOLC_VERSION = '0.8.30';

export interface CompiledContract {
  /** The ABI as the compiler emits it (JSON fragments; ethers and viem both take it). */
  abi: readonly Record<string, unknown>[];
  /** Creation bytecode, 0x-prefixed. */
  bytecode: string;
  /** Runtime bytecode, 0x-prefixed (for anvil_setCode or a state override). */
  deployedBytecode: string;
  /** The source file it came from, relative to contracts/. */
  source: string;
}

interface SolcError {
  severity: 'error' | 'warning' | 'info';
  formattedMessage: string;
}

interface SolcOutput {
  errors?: SolcError[];
  contracts?: Record<
    string,
    Record<
      string,
      { abi: Record<string, unknown>[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }
    >
  >;
}

const cache = new Map<string, Record<string, CompiledContract>>();

/** The `.sol` files under a directory of contracts/ (default `test`), relative to contracts/. */
export function solidityFiles(subdir = 'test'): string[] {
  return readdirSync(join(CONTRACTS_DIR, subdir))
    .filter((f) => f.endsWith('.sol'))
    .sort()
    .map((f) => `${subdir}/${f}`);
}

/**
 * Compiles `files` (paths relative to contracts/; default every file of contracts/test) and
 * returns each contract by name. Throws with the compiler's messages on any error, or when the
 * loaded compiler is not the pinned version.
 */
export function compileContracts(files: readonly string[] = solidityFiles()): Record<string, CompiledContract> {
  const key = [...files].sort().join('\n');
  const hit = cache.get(key);
  if (hit) return hit;
  const version = String(solc.version());
  if (!version.startsWith(`${SOLC_VERSION}+`))
    throw new Error(`solc ${SOLC_VERSION} is pinned, but ${version} is installed`);
  const sources: Record<string, { content: string }> = {};
  for (const f of files) sources[f] = { content: readFileSync(join(CONTRACTS_DIR, f), 'utf8') };
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: 'cancun',
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc: ${errors.map((e) => e.formattedMessage).join('\n')}`);
  const result: Record<string, CompiledContract> = {};
  for (const [source, contracts] of Object.entries(out.contracts ?? {})) {
    for (const [name, c] of Object.entries(contracts)) {
      if (result[name]) throw new Error(`two contracts are named ${name}`);
      result[name] = {
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
        source,
      };
    }
  }
  cache.set(key, result);
  return result;
}

/** One contract by name (compiling contracts/test once per process). */
export function compiled(name: string): CompiledContract {
  const c = compileContracts()[name];
  if (!c) throw new Error(`no contract named ${name} in contracts/test`);
  return c;
}
