/**
 * `node --import <this file>`: installs the loopback-only refusal (./loopback-only.ts) in a child
 * process before anything else is loaded, for consumers that import AgentKit.
 */
import { installLoopbackOnly } from './loopback-only.js';

const refusal = installLoopbackOnly();
process.on('exit', () => {
  if (refusal.refused.length > 0) process.stderr.write(`refused: ${refusal.refused.join(' ')}\n`);
});
