/** A Config for client tests: defaults, a short hard timeout, and the given upstream URLs. */
import { loadConfig, type Config } from '../../src/config.js';

export function configWith(env: Record<string, string>): Readonly<Config> {
  return loadConfig({ CHECK_HARD_TIMEOUT_MS: '2000', ...env });
}
