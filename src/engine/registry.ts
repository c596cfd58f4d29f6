/** Every check module the runner can execute: the ten public types and the guard's own. */
import { checks } from '../checks/index.js';
import { guardChecks } from '../guard/checks.js';

export const registry = { ...checks, ...guardChecks } as const;
export type RegisteredType = keyof typeof registry;
