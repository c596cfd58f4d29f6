/**
 * The three wallet guards as packages of their own (docs/wallets.md §4): each `npm pack` gives its
 * dist/, README and manifest alone; unpacked into a fresh project beside the typed client's tarball and
 * only their peers, a TypeScript consumer type-checks against each (and a wrong option is an
 * error), and a consumer imports each by name and has the real service block a Permit2 permit to
 * a drainer before its key signs it. The AgentKit consumer runs with every non-loopback URL
 * refused from its first line.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { consumerProject, pack, REPO, run, typeCheck } from '../helpers/pack.js';

const work = mkdtempSync(join(tmpdir(), 'preflight-wallet-pkgs-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
// Packing, installing and type-checking four packages is npm's and tsc's work, not the service's:
// on a slow 2-core host under the whole suite it took 117 to 121 s of the default 120.
t.setTimeout(300_000);

const CLIENT_PEERS = ['@x402/evm', '@x402/extensions', '@x402/fetch', 'viem'];
const PACKAGES = [
  { folder: 'viem', name: '@preflight/viem', peers: ['viem'] },
  { folder: 'ethers', name: '@preflight/ethers', peers: ['ethers'] },
  { folder: 'agentkit', name: '@preflight/agentkit', peers: ['@coinbase/agentkit', 'viem', 'zod'] },
] as const;

const CONSUMER_TS = `
import type { LocalAccount } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { AbstractSigner, Wallet } from 'ethers';
import { EvmWalletProvider } from '@coinbase/agentkit';
import { guardAccount, PreflightBlockedError, executeThroughAccount } from '@preflight/viem';
import { GuardedSigner, PreflightWaitError } from '@preflight/ethers';
import { GuardedEvmWalletProvider, preflightActionProvider } from '@preflight/agentkit';

const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const options = { baseUrl: 'https://preflight.example.com', apiKey: 'pvk_x', attester: '0x0000000000000000000000000000000000000001', onWait: 'retry' as const, maxWaitMs: 10_000 };
export const account: LocalAccount = guardAccount(privateKeyToAccount(key), { ...options, allowRawSign: false });
export const signer: AbstractSigner = new GuardedSigner(new Wallet(key), options);
export const wrap = (inner: EvmWalletProvider): EvmWalletProvider => new GuardedEvmWalletProvider(inner, options);
export const tools = preflightActionProvider({ baseUrl: options.baseUrl, apiKey: options.apiKey });
export function reasons(e: unknown): string[] {
  if (e instanceof PreflightBlockedError || e instanceof PreflightWaitError) return e.reasons;
  return [];
}
export const run = executeThroughAccount;
// @ts-expect-error onWait is "throw" or "retry"
guardAccount(privateKeyToAccount(key), { baseUrl: 'x', onWait: 'sometimes' });
`;

const permit = `
const now = Math.floor(Date.now() / 1000);
const permit = {
  domain: { name: 'Permit2', chainId: 8453, verifyingContract: '0x000000000022D473030F116dDEE9F6B43aC78BA3' },
  types: {
    PermitSingle: [{ name: 'details', type: 'PermitDetails' }, { name: 'spender', type: 'address' }, { name: 'sigDeadline', type: 'uint256' }],
    PermitDetails: [{ name: 'token', type: 'address' }, { name: 'amount', type: 'uint160' }, { name: 'expiration', type: 'uint48' }, { name: 'nonce', type: 'uint48' }],
  },
  primaryType: 'PermitSingle',
  message: {
    details: { token: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', amount: (2n ** 160n - 1n).toString(), expiration: now + 3600, nonce: 0 },
    spender: '0x00000000000000000000000000000000000d7a17',
    sigDeadline: now + 600,
  },
};
const { URL_, KEY, SIGNER } = process.env;
const options = { baseUrl: URL_, apiKey: KEY, attester: SIGNER };
const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const outcome = (e) => ({ name: e?.name, verdict: e?.verdict, reasons: e?.reasons });
`;

const CONSUMERS: Record<string, string> = {
  viem: `import { guardAccount, PreflightBlockedError } from '@preflight/viem';
import { privateKeyToAccount } from 'viem/accounts';
${permit}
const account = guardAccount(privateKeyToAccount(key), options);
const e = await account.signTypedData(permit).catch((e) => e);
console.log(JSON.stringify({ ...outcome(e), isClass: e instanceof PreflightBlockedError }));`,
  ethers: `import { GuardedSigner, PreflightBlockedError } from '@preflight/ethers';
import { Wallet } from 'ethers';
${permit}
const signer = new GuardedSigner(new Wallet(key), options);
const { EIP712Domain, ...types } = permit.types;
const e = await signer.signTypedData(permit.domain, types, permit.message).catch((e) => e);
console.log(JSON.stringify({ ...outcome(e), isClass: e instanceof PreflightBlockedError }));`,
  agentkit: `import { GuardedEvmWalletProvider, PreflightBlockedError } from '@preflight/agentkit';
import { ViemWalletProvider } from '@coinbase/agentkit';
import { createWalletClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { base } from 'viem/chains';
${permit}
const chain = { ...base, rpcUrls: { default: { http: ['http://127.0.0.1:1'] } } };
const wallet = createWalletClient({ account: privateKeyToAccount(key), chain, transport: http('http://127.0.0.1:1') });
const provider = new GuardedEvmWalletProvider(new ViemWalletProvider(wallet, { rpcUrl: 'http://127.0.0.1:1' }), options);
const e = await provider.signTypedData(permit).catch((e) => e);
console.log(JSON.stringify({ ...outcome(e), isClass: e instanceof PreflightBlockedError }));`,
};

t.test('each wallet guard packs, installs beside its peers, type-checks and guards', async (t) => {
  const client = await pack('typescript', work);
  const tarballs: Record<string, string> = { '@preflight/client': client.tarball };
  for (const p of PACKAGES) {
    const packed = await pack(p.folder, work);
    t.same(
      packed.files,
      ['README.md', 'dist/index.d.ts', 'dist/index.js', 'package.json'],
      `${p.name}: its dist/, README and manifest alone`,
    );
    tarballs[p.name] = packed.tarball;
    const manifest = JSON.parse(readFileSync(join(REPO, 'clients', p.folder, 'package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
      dependencies?: unknown;
    };
    t.notOk(manifest.dependencies, `${p.name} has peers only`);
    t.ok(manifest.peerDependencies['@preflight/client'], `${p.name} names the typed client as a peer`);
  }
  const project = join(work, 'consumer');
  const peers = [...new Set([...CLIENT_PEERS, ...PACKAGES.flatMap((p) => p.peers), 'ethers'])];
  await consumerProject(project, tarballs, peers);
  for (const name of Object.keys(tarballs)) {
    const text = readFileSync(join(project, 'node_modules', name, 'dist', 'index.js'), 'utf8');
    t.notMatch(text, /\.\.\/\.\.\/|clients\/typescript/, `${name} reaches nothing outside its package`);
  }

  t.equal(
    await typeCheck(project, CONSUMER_TS),
    '',
    'tsc accepts the consumer, and the @ts-expect-error line is an error',
  );

  const app = await startTestApp({ BILLING: 'off' });
  t.teardown(() => app.close());
  const caps = (await (await fetch(`${app.url}/v1/capabilities`)).json()) as { attestation: { signer: string } };
  const preload = join(REPO, 'dist', 'test', 'helpers', 'loopback-only-preload.js');
  for (const p of PACKAGES) {
    writeFileSync(join(project, `${p.folder}.mjs`), CONSUMERS[p.folder]);
    const args = p.folder === 'agentkit' ? ['--import', preload] : [];
    const { stdout, stderr } = await run(process.execPath, [...args, join(project, `${p.folder}.mjs`)], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', URL_: app.url, KEY: 'unused', SIGNER: caps.attestation.signer },
      timeout: 120_000,
    });
    const out = JSON.parse(stdout) as { name: string; verdict: string; reasons: string[]; isClass: boolean };
    t.equal(out.name, 'PreflightBlockedError', `${p.name}: ${stdout}`);
    t.equal(out.verdict, 'block');
    t.ok(out.reasons.includes('signature_scan:unlimited_permit'), String(out.reasons));
    t.ok(out.isClass, 'the error is the class the package exports');
    if (p.folder === 'agentkit') t.match(stderr, /refused: .*cca-lite\.coinbase\.com/, 'its analytics were refused');
  }
});
