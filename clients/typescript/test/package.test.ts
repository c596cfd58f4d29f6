/**
 * The client as a package of its own (docs/client.md §5): `npm pack` builds it with its own
 * tsconfig and packs only its dist/; the tarball, unpacked into a fresh project beside its peer
 * dependencies and nothing of this repository, is imported by name, its declarations type-check a
 * TypeScript consumer (and reject a wrong call), and it calls the real service with a key and
 * verifies the signed answer.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { post, startTestApp } from '../../../test/helpers/app.js';
import { consumerProject, pack, run, typeCheck } from '../../../test/helpers/pack.js';

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
  const packed = await pack('typescript', work);
  t.same(
    packed.files,
    [
      'dist/index.d.ts',
      'dist/index.js',
      'dist/types.d.ts',
      'dist/types.js',
      'dist/wallet-guard.d.ts',
      'dist/wallet-guard.js',
      'package.json',
    ],
    'only the built client and its manifest',
  );

  const project = join(work, 'consumer');
  await consumerProject(project, { '@preflight/client': packed.tarball }, PEERS);
  for (const file of ['index.js', 'index.d.ts', 'wallet-guard.js']) {
    const text = readFileSync(join(project, 'node_modules', '@preflight', 'client', 'dist', file), 'utf8');
    t.notMatch(text, /\.\.\/\.\.\/|src\/generated/, `dist/${file} reaches nothing outside the package`);
  }

  t.test('its declarations type-check a consumer and reject a wrong call', async (t) => {
    t.equal(
      await typeCheck(project, CONSUMER_TS),
      '',
      'tsc accepts the consumer, and the @ts-expect-error line is an error',
    );
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
