/**
 * The example agents of examples/ run as their README says, against anvil (a local Base) and the
 * service started as a user starts it: each pays 0.001 ETH (proceed, mined) and is refused the
 * drainer's permit (block, not signed). The AgentKit one runs with every non-loopback URL refused.
 */
import { join } from 'node:path';
import t from 'tap';
import { REPO, run } from '../helpers/pack.js';
import { startWalletWorld, type WalletWorld } from '../helpers/wallets.js';

let world: WalletWorld;
t.before(async () => {
  world = await startWalletWorld();
});
t.teardown(() => world?.close());

for (const name of ['viem', 'ethers', 'agentkit']) {
  t.test(`examples/${name}-agent.ts`, async (t) => {
    const key = await world.fundedKey(0n);
    const preload = join(REPO, 'dist', 'test', 'helpers', 'loopback-only-preload.js');
    const args = name === 'agentkit' ? ['--import', preload] : [];
    const before = await world.guardCalls();
    const { stdout } = await run(process.execPath, [...args, join(REPO, 'dist', 'examples', `${name}-agent.js`)], {
      cwd: REPO,
      env: {
        PATH: process.env.PATH ?? '',
        PREFLIGHT_URL: world.url,
        PREFLIGHT_API_KEY: world.apiKey,
        PREFLIGHT_ATTESTER: world.attester,
        RPC_URL: world.chain.rpcUrl,
        AGENT_KEY: key,
      },
      timeout: 120_000,
    });
    t.match(stdout, /^pay 0\.001 ETH: mined in block \d+$/m, stdout);
    t.match(
      stdout,
      /^sign a Permit2 allowance for a stranger: refused: block \(.*signature_scan:unlimited_permit.*\)$/m,
    );
    if (name === 'agentkit') t.match(stdout, /tools: .*PreflightActionProvider_preflight_guard/);
    t.equal((await world.guardCalls()) - before, 2, 'two guard calls');
  });
}
