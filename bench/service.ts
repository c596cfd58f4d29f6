/**
 * The service as the bench runs it: the real process entry (startServer from src/server.ts) with
 * configuration from the environment the driver sets, in a child process of its own. It reports
 * its URL over IPC and drains on SIGTERM like the production server.
 */
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { startServer } from '../src/server.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const running = await startServer(config, logger);
  process.send?.({ url: running.url });
  const stop = (): void => {
    void running.shutdown('bench done').finally(() => {
      logger.flush();
      process.exit(0);
    });
  };
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
}

main().catch((err: Error) => {
  process.send?.({ error: err.message });
  process.exit(1);
});
