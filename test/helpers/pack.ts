/**
 * A package of clients/ as an agent project gets it: `npm pack` in its folder (which builds it with
 * its own tsconfig), the tarball unpacked into node_modules of a fresh project beside symlinks to
 * only the peers it names, and `tsc` over a consumer in that project.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
/** The repository root, found from this compiled helper under dist/test/helpers. */
export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Packs `clients/<folder>` into `dest`; the tarball's path and the files it holds. */
export async function pack(folder: string, dest: string): Promise<{ tarball: string; files: string[] }> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dest], {
    cwd: join(REPO, 'clients', folder),
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false' },
    timeout: 180_000,
  });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  return { tarball: join(dest, packed.filename), files: packed.files.map((f) => f.path).sort() };
}

/** A fresh ESM project at `project` with the tarballs unpacked under their names and the peers linked. */
export async function consumerProject(
  project: string,
  tarballs: Record<string, string>,
  peers: readonly string[],
): Promise<void> {
  mkdirSync(join(project, 'node_modules'), { recursive: true });
  for (const [name, tarball] of Object.entries(tarballs)) {
    const at = join(project, 'node_modules', name);
    mkdirSync(dirname(at), { recursive: true });
    const tmp = join(dirname(at), `.unpack-${Date.now()}`);
    mkdirSync(tmp);
    await run('tar', ['-xzf', tarball, '-C', tmp]);
    await run('mv', [join(tmp, 'package'), at]);
    await run('rmdir', [tmp]);
  }
  for (const peer of peers) {
    const at = join(project, 'node_modules', peer);
    if (existsSync(at)) continue;
    mkdirSync(dirname(at), { recursive: true });
    symlinkSync(join(REPO, 'node_modules', peer), at, 'dir');
  }
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
}

/** Type-checks `source` as consumer.ts in `project` (strict, NodeNext); tsc's output, empty when it passes. */
export async function typeCheck(project: string, source: string): Promise<string> {
  writeFileSync(join(project, 'consumer.ts'), source);
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        lib: ['ES2022', 'DOM'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: [],
      },
      files: ['consumer.ts'],
    }),
  );
  const tsc = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
  return run(process.execPath, [tsc, '-p', join(project, 'tsconfig.json')], { timeout: 180_000 }).then(
    () => '',
    (err: { stdout?: string }) => err.stdout ?? String(err),
  );
}
