/**
 * Child process for the cross-process quota test: opens the store, prints `ready`, waits for `go`
 * on stdin, fires N concurrent consumeQuota calls and prints the tally as JSON.
 * argv: url keyId period limit n
 */
import { once } from 'node:events';
import { openStore } from '../../src/store/index.js';

const [url, keyId, period, limit, n] = process.argv.slice(2);
const store = await openStore({ databaseUrl: url });
process.stdout.write('ready\n');
process.stdin.setEncoding('utf8');
await once(process.stdin, 'data');
const results = await Promise.all(
  Array.from({ length: Number(n) }, () => store.consumeQuota(keyId, period, Number(limit))),
);
await store.close();
const allowed = results.filter((r) => r.allowed).length;
process.stdout.write(JSON.stringify({ allowed, denied: results.length - allowed }) + '\n');
