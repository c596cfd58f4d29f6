/** The guard's own check modules; the engine's registry merges them with the ten public ones. */
import { rpcHealth } from './rpc_health.js';
import { liquidityDepth } from './liquidity_depth.js';

export const guardChecks = {
  rpc_health: rpcHealth,
  liquidity_depth: liquidityDepth,
} as const;
