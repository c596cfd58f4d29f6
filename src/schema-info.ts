/** Facts derived from the schemas, so no list is copied by hand. */
import { schemas } from './generated/schemas.js';

type AnySchema = {
  $id?: string;
  properties?: Record<string, any>;
  required?: readonly string[];
  description?: string;
  oneOf?: readonly { $ref: string }[];
};

const all = schemas as unknown as Record<string, AnySchema>;

/** The ten public check types, in schema order. */
export const CHECK_TYPES: readonly string[] = Object.freeze(
  (all.Check.oneOf ?? []).map((ref) => all[ref.$ref].properties!.type.const as string),
);

export const GUARD_ACTIONS: readonly string[] = Object.freeze([
  ...(all.GuardRequest.properties!.action.enum as string[]),
]);

export interface FieldInfo {
  name: string;
  type: unknown;
  required: boolean;
  default?: unknown;
  enum?: unknown[];
  description?: string;
}

export function describeFields(id: string): FieldInfo[] {
  const s = all[id];
  return Object.entries(s.properties ?? {}).map(([name, p]) => ({
    name,
    type: p.$ref ?? p.type ?? 'any',
    required: (s.required ?? []).includes(name),
    ...(p.default !== undefined ? { default: p.default } : {}),
    ...(p.enum ? { enum: p.enum } : {}),
    ...(p.const !== undefined ? { enum: [p.const] } : {}),
    ...(p.description ? { description: p.description } : {}),
  }));
}

export function checkSchemaId(type: string): string {
  const ref = (all.Check.oneOf ?? []).find((r) => all[r.$ref].properties!.type.const === type);
  if (!ref) throw new Error(`unknown check type ${type}`);
  return ref.$ref;
}

export { all as schemaMap };
