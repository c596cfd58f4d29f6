/**
 * Lints the OpenAPI document the service serves at /openapi.json with two independent linters:
 * Redocly (recommended rules, .redocly.yaml) and Spectral (spectral:oas, .spectral.yaml). The
 * document is generated from schemas/ and the endpoint table, so it is written to a temporary
 * file first. Exits non-zero when either linter reports an error; warnings are printed only.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApi } from '../src/openapi.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name: string) => join(root, 'node_modules', '.bin', name);
const dir = mkdtempSync(join(tmpdir(), 'preflight-openapi-'));
const file = join(dir, 'openapi.json');

let failed = false;
try {
  // The document as served without PUBLIC_BASE_URL (servers[0] is then the relative '/').
  writeFileSync(file, `${JSON.stringify(buildOpenApi(null), null, 2)}\n`);
  const runs: Array<[string, string[]]> = [
    [bin('redocly'), ['lint', '--config', join(root, '.redocly.yaml'), '--format', 'summary', file]],
    [bin('spectral'), ['lint', '--ruleset', join(root, '.spectral.yaml'), '--fail-severity', 'error', file]],
  ];
  for (const [cmd, args] of runs) {
    const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, NO_UPDATE_NOTIFIER: '1' } });
    if (r.status !== 0) {
      failed = true;
      console.error(`lint:openapi: ${cmd.split('/').pop()} failed (exit ${r.status ?? r.signal})`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
