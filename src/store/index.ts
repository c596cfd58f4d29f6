/**
 * Opens the store named by DATABASE_URL and brings its schema up to date. `sqlite:<path>` (the
 * default, a file under ./data) or `postgres://...`. Fails with a StoreError whose message names
 * the database (password hidden) and the reason, so start-up stops with one clear line.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { StoreError } from './errors.js';
import type { Store } from './types.js';

export type * from './types.js';
export { StoreError } from './errors.js';

export interface OpenStoreOptions {
  logger?: Pick<Logger, 'error'>;
  /** PostgreSQL pool size (default 10). */
  poolMax?: number;
  /** How long to wait for the first PostgreSQL connection (default 5000 ms). */
  connectTimeoutMs?: number;
}

export async function openStore(config: Pick<Config, 'databaseUrl'>, opts: OpenStoreOptions = {}): Promise<Store> {
  const url = config.databaseUrl;
  let store: Store;
  if (/^postgres(ql)?:\/\//.test(url)) {
    // Each driver is loaded only when named, so a SQLite deployment never loads pg and vice versa.
    const { PostgresStore } = await import('./postgres.js');
    store = await PostgresStore.open(url, {
      logger: opts.logger,
      max: opts.poolMax,
      connectTimeoutMs: opts.connectTimeoutMs,
    });
  } else if (url.startsWith('sqlite:')) {
    const { SqliteStore, sqlitePath } = await import('./sqlite.js');
    store = SqliteStore.open(sqlitePath(url));
  } else {
    throw new StoreError(
      `DATABASE_URL must be sqlite:<path> or postgres://..., got ${JSON.stringify(url.split(':')[0] + ':...')}`,
    );
  }
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => undefined);
    if (err instanceof StoreError) throw err;
    throw new StoreError(`database migration failed on the ${store.kind} store: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return store;
}
