/**
 * The client as a package of its own (docs/client.md §5): `npm pack` builds it with its own
 * tsconfig and packs only its dist/; the tarball, unpacked into a fresh project beside its peer
 * dependencies and nothing of this repository, is imported by name, its declarations type-check a
 * TypeScript consumer (and reject a wrong call), and it calls the real service with a key and
 * verifies the signed answer.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { post, startTestApp } from '../../../test/helpers/app.js';

const run = promisify(execFile);
/** The client's source folder (clients/typescript), found from this compiled test under dist/. */
const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const pkgDir = join(repo, 'clients', 'typescript');
const PEERS = ['@x402/evm', '@x402/extensions', '@x402/fetch', 'viem'];

const work = mkdtempSync(join(tmpdir(), 'preflight-client-pkg-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

const CONSUMER_JS = `
import { createClient, verifyAttestation } from '@preflight/client';
const { URL_, KEY, SIGNER } = process.env;
const client = createClient({ baseUrl: URL_, apiKey: KEY });
const body = { goal: 'swap 100 USDC on Base', checks: [{ type: 'approval_amount', amount: '1000', spender: '0x${'11'.repeat(20)}' }] };
const answer = await client.decide(body);
const verified = await verifyAttestation(answer, { signer: SIGNER, requestBody: JSON.stringify(body) });
const tampered = await verifyAttestation({ ...answer, verdict: answer.verdict === 'block' ? 'proceed' : 'block' }, { signer: SIGNER });
console.log(JSON.stringify({ verdict: answer.verdict, verified, tampered }));
`;

const CONSUMER_TS = `
import { createClient, PreflightError, type DecideResponse, type GuardInput } from '@preflight/client';
const client = createClient({ baseUrl: 'https://preflight.example.com', apiKey: 'pvk_x' });
export async function go(): Promise<DecideResponse> {
  const input: GuardInput = { action: 'swap', chain: 'base', amount_usd: 100 };
  const answer = await client.guard(input);
  const verdict: 'proceed' | 'wait' | 'block' = answer.verdict;
  if (verdict !== 'proceed') throw new PreflightError(200, answer, null);
  // @ts-expect-error an action the schema does not admit
  await client.guard({ action: 'teleport' });
  return answer;
}
`;

t.test('npm pack gives a tarball of dist/ alone, built from the client sources', async (t) => {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: pkgDir,
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false' },
    timeout: 120_000,
  });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  t.same(
    packed.files.map((f) => f.path).sort(),
    ['dist/index.d.ts', 'dist/index.js', 'dist/types.d.ts', 'dist/types.js', 'package.json'],
    'only the built client and its manifest',
  );

  const project = join(work, 'consumer');
  const scope = join(project, 'node_modules', '@preflight');
  mkdirSync(scope, { recursive: true });
  await run('tar', ['-xzf', join(work, packed.filename), '-C', scope]);
  await run('mv', [join(scope, 'package'), join(scope, 'client')]);
  for (const peer of PEERS) {
    const at = join(project, 'node_modules', peer);
    mkdirSync(dirname(at), { recursive: true });
    symlinkSync(join(repo, 'node_modules', peer), at, 'dir');
  }
  for (const file of ['index.js', 'index.d.ts']) {
    const text = readFileSync(join(scope, 'client', 'dist', file), 'utf8');
    t.notMatch(text, /\.\.\/\.\.\/|src\/generated/, `dist/${file} reaches nothing outside the package`);
  }
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));

  t.test('its declarations type-check a consumer and reject a wrong call', async (t) => {
    writeFileSync(join(project, 'consumer.ts'), CONSUMER_TS);
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
    const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
    const out = await run(process.execPath, [tsc, '-p', join(project, 'tsconfig.json')], { timeout: 120_000 }).then(
      () => '',
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    t.equal(out, '', 'tsc accepts the consumer, and the @ts-expect-error line is an error');
  });

  t.test('imported by name, it calls the service and verifies the signed answer', async (t) => {
    const app = await startTestApp({ BILLING: 'on' });
    t.teardown(() => app.close());
    const signup = await post(`${app.url}/v1/api-keys/signup`, { email: 'client-package@example.com' });
    const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as { attestation: { signer: string } };
    writeFileSync(join(project, 'consumer.mjs'), CONSUMER_JS);
    const { stdout } = await run(process.execPath, [join(project, 'consumer.mjs')], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', URL_: app.url, KEY: signup.body.api_key, SIGNER: caps.attestation.signer },
      timeout: 60_000,
    });
    t.same(JSON.parse(stdout), { verdict: 'proceed', verified: true, tampered: false });
  });
});
