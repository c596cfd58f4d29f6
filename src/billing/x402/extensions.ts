/**
 * The two x402 v2 extensions the challenge carries (docs/x402.md §9, §10): `payment-identifier`,
 * an idempotency key a paying client may attach so a retry never pays twice, and `bazaar`, the
 * discovery record x402 catalogues list an endpoint by (method, an input example, the input and
 * output schemas from schemas/).
 */
import { SCHEMA_POST_ENDPOINTS } from '../../http/endpoints.js';
import { schemaMap } from '../../schema-info.js';

export const PAYMENT_IDENTIFIER = 'payment-identifier';
export const BAZAAR = 'bazaar';
const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** The id's format, as the extension specifies: 16 to 128 of `[A-Za-z0-9_-]`. */
export const PAYMENT_ID = /^[A-Za-z0-9_-]{16,128}$/;

/** The declaration: ids are welcome, not required. */
export function paymentIdentifierDeclaration(): Record<string, unknown> {
  return {
    info: { required: false },
    schema: {
      $schema: DRAFT_2020_12,
      type: 'object',
      properties: {
        required: { type: 'boolean' },
        id: { type: 'string', minLength: 16, maxLength: 128, pattern: '^[a-zA-Z0-9_-]+$' },
      },
      required: ['required'],
    },
  };
}

export type PaymentIdResult = { kind: 'none' } | { kind: 'id'; id: string } | { kind: 'malformed'; detail: string };

/** The id a v2 PaymentPayload carries in `extensions["payment-identifier"].info.id`, if any. */
export function readPaymentId(raw: Record<string, unknown>): PaymentIdResult {
  const exts = raw.extensions;
  if (exts === undefined || exts === null) return { kind: 'none' };
  if (typeof exts !== 'object' || Array.isArray(exts))
    return { kind: 'malformed', detail: 'The PaymentPayload `extensions` must be an object.' };
  const ext = (exts as Record<string, unknown>)[PAYMENT_IDENTIFIER];
  if (ext === undefined) return { kind: 'none' };
  const info = typeof ext === 'object' && ext !== null ? (ext as Record<string, unknown>).info : undefined;
  if (typeof info !== 'object' || info === null || Array.isArray(info))
    return { kind: 'malformed', detail: 'extensions["payment-identifier"] must be an object with an `info` object.' };
  const id = (info as Record<string, unknown>).id;
  if (id === undefined) return { kind: 'none' };
  if (typeof id !== 'string' || !PAYMENT_ID.test(id)) {
    return {
      kind: 'malformed',
      detail: 'extensions["payment-identifier"].info.id must be 16 to 128 characters of letters, digits, "-" and "_".',
    };
  }
  return { kind: 'id', id };
}

/** A small valid request per request schema: the body example catalogues show. */
const EXAMPLES: Record<string, Record<string, unknown>> = {
  DecideRequest: {
    goal: 'Swap 1,000 USDC for ETH on Base if USDC holds its peg',
    checks: [{ type: 'stablecoin_depeg', asset_id: 'usd-coin', block_deviation_pct: 0.5 }],
  },
  GuardRequest: { action: 'swap', chain: 'base', amount_usd: 1000 },
  StablecoinIntelligenceRequest: { asset_ids: ['usd-coin', 'tether'] },
  BridgeRiskRequest: { bridge_status_urls: ['https://status.example.com'] },
  YieldRoutingRequest: { options: [{ name: 'Aave USDC on Base', apy: 4.2 }] },
};

type Json = Record<string, unknown>;

/**
 * A schema from schemas/ cut to one level: its own properties with their types, references to
 * other schemas as plain objects, descriptions left out. The challenge travels in a header and the
 * client echoes it in its payment header, so the record must stay small; the full schemas are in
 * /openapi.json.
 */
function shallow(id: string): Json {
  const s = schemaMap[id] as Json;
  const props: Json = {};
  for (const [name, p] of Object.entries((s.properties ?? {}) as Record<string, Json>)) props[name] = brief(p);
  const out: Json = { type: 'object', properties: props };
  if (Array.isArray(s.required)) out.required = [...s.required];
  return out;
}

function brief(p: Json): Json {
  if (typeof p.$ref === 'string') return { type: 'object' };
  const out: Json = {};
  for (const k of ['type', 'enum', 'const', 'minItems', 'maxItems', 'minimum', 'maximum'] as const)
    if (p[k] !== undefined) out[k] = p[k];
  if (p.items !== undefined && typeof p.items === 'object') out.items = brief(p.items as Json);
  if (out.type === undefined && out.enum === undefined && out.const === undefined) return {};
  return out;
}

const bazaarCache = new Map<string, Json | null>();

/** The bazaar record for a paid POST path, or null for a path that is not one of ours. */
export function bazaarDeclaration(path: string): Json | null {
  const cached = bazaarCache.get(path);
  if (cached !== undefined) return cached;
  const e = SCHEMA_POST_ENDPOINTS.find((x) => x.path === path && x.access !== 'free');
  const example = e ? EXAMPLES[e.request] : undefined;
  let record: Json | null = null;
  if (e && example && schemaMap[e.request] && schemaMap[e.response]) {
    record = {
      info: {
        input: { type: 'http', method: 'POST', bodyType: 'json', body: example },
        output: { type: 'json' },
      },
      schema: {
        $schema: DRAFT_2020_12,
        type: 'object',
        properties: {
          input: {
            type: 'object',
            properties: {
              type: { type: 'string', const: 'http' },
              method: { type: 'string', enum: ['POST'] },
              bodyType: { type: 'string', enum: ['json'] },
              body: shallow(e.request),
            },
            required: ['type', 'method', 'bodyType', 'body'],
            additionalProperties: false,
          },
          output: {
            type: 'object',
            properties: { type: { type: 'string' }, example: shallow(e.response) },
            required: ['type'],
          },
        },
        required: ['input'],
      },
    };
  }
  bazaarCache.set(path, record);
  return record;
}
