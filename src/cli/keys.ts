/**
 * Operator command line for API keys, on the database named by DATABASE_URL:
 *   node dist/src/cli/keys.js list [--json]
 *   node dist/src/cli/keys.js revoke <id|prefix|key>
 *   node dist/src/cli/keys.js set-plan <id|prefix|key> <Basic|DeFi|Execution>
 * Running servers cache key lookups for up to 5 s, so a revocation or plan change reaches them
 * within that time. Exit codes: 0 done, 1 no key matched, 2 usage error, 3 configuration or
 * database error.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hashApiKey, isWellFormedKey } from '../billing/keys.js';
import { planLimit, usagePeriod } from '../billing/quota.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { openStore, StoreError } from '../store/index.js';
import { isPlan, PLANS } from '../store/rows.js';
import type { Store } from '../store/types.js';

export const USAGE = `usage: keys list [--json]
       keys revoke <id|prefix|key>
       keys set-plan <id|prefix|key> <${PLANS.join('|')}>`;

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

/** A full key given on the command line is turned into its record's id; the key itself is not printed. */
async function target(store: Store, arg: string): Promise<string> {
  if (!isWellFormedKey(arg)) return arg;
  const rec = await store.findApiKeyByHash(hashApiKey(arg));
  return rec ? rec.id : arg;
}

async function list(store: Store, config: Readonly<Config>, json: boolean, io: CliIo): Promise<number> {
  const period = usagePeriod(new Date());
  const keys = await store.listApiKeys();
  const rows = await Promise.all(
    keys.map(async (k) => ({
      id: k.id,
      prefix: k.prefix,
      email: k.email,
      plan: k.plan,
      requested_plan: k.requestedPlan,
      created_at: k.createdAt.toISOString(),
      revoked_at: k.revokedAt?.toISOString() ?? null,
      used: await store.getUsage(k.id, period),
      limit: planLimit(config, k.plan),
    })),
  );
  if (json) {
    io.out(JSON.stringify({ period, keys: rows }, null, 2));
    return 0;
  }
  const table = [['ID', 'PREFIX', 'EMAIL', 'PLAN', 'REQUESTED', `USED ${period}`, 'CREATED', 'STATUS']];
  for (const r of rows) {
    table.push([
      r.id,
      r.prefix,
      r.email,
      r.plan,
      r.requested_plan ?? '-',
      `${r.used}/${r.limit}`,
      r.created_at.slice(0, 19) + 'Z',
      r.revoked_at ? `revoked ${r.revoked_at.slice(0, 10)}` : 'active',
    ]);
  }
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table)
    io.out(
      row
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    );
  io.out(`${rows.length} key(s), ${rows.filter((r) => !r.revoked_at).length} active`);
  return 0;
}

export async function runKeysCli(args: string[], store: Store, config: Readonly<Config>, io: CliIo): Promise<number> {
  const [cmd, a, b] = args;
  if (cmd === 'list' && (args.length === 1 || (args.length === 2 && a === '--json')))
    return list(store, config, a === '--json', io);
  if (cmd === 'revoke' && args.length === 2) {
    const n = await store.revokeApiKey(await target(store, a));
    if (n === 0) {
      io.err(`no active key matches ${JSON.stringify(a)}`);
      return 1;
    }
    io.out(`revoked ${n} key(s); running servers stop accepting it within 5 s`);
    return 0;
  }
  if (cmd === 'set-plan' && args.length === 3) {
    if (!isPlan(b)) {
      io.err(`unknown plan ${JSON.stringify(b)}: one of ${PLANS.join(', ')}`);
      return 2;
    }
    const n = await store.setPlan(await target(store, a), b);
    if (n === 0) {
      io.err(`no active key matches ${JSON.stringify(a)}`);
      return 1;
    }
    io.out(`set ${n} key(s) to ${b} (${planLimit(config, b)} calls a month)`);
    return 0;
  }
  io.err(USAGE);
  return 2;
}

async function main(): Promise<number> {
  const io: CliIo = { out: (l) => process.stdout.write(l + '\n'), err: (l) => process.stderr.write(l + '\n') };
  const args = process.argv.slice(2);
  if (args.length === 0 || args[0] === '--help' || args[0] === '-h') {
    io.err(USAGE);
    return args.length === 0 ? 2 : 0;
  }
  let store: Store;
  let config: Readonly<Config>;
  try {
    config = loadConfig();
    store = await openStore(config);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof StoreError) {
      io.err(`error: ${err.message}`);
      return 3;
    }
    throw err;
  }
  try {
    return await runKeysCli(args, store, config, io);
  } finally {
    await store.close();
  }
}

const entry = process.argv[1] ? realpathSync(process.argv[1]) : '';
if (entry === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(3);
    },
  );
}
