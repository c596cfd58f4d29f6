/** The free read-only endpoints: /, /health, /v1/capabilities, /v1/agents, /openapi.json, /docs. */
import { Router } from 'express';
import type { Config } from '../../config.js';
import { VERSION } from '../../version.js';
import { buildOpenApi } from '../../openapi.js';
import { agentInfos, GET_ENDPOINTS, POST_ENDPOINTS } from '../endpoints.js';
import { CHECK_TYPES, GUARD_ACTIONS, checkSchemaId, describeFields, schemaMap } from '../../schema-info.js';
import { MAX_DEPTH } from '../validation.js';
import { docsRouter } from './docs.js';
import {
  MAX_BODY_BYTES,
  NETWORK_V1,
  NETWORK_V2,
  PRICE_ATOMIC,
  PRICE_DISPLAY,
  USDC_BASE,
  USDC_DECIMALS,
} from '../../pricing.js';

const maxItems = (id: string, field: string): number | undefined => schemaMap[id]?.properties?.[field]?.maxItems;

export function capabilities(config: Readonly<Config>): Record<string, unknown> {
  return {
    service: 'preflight',
    version: VERSION,
    check_types: CHECK_TYPES.map((type) => {
      const id = checkSchemaId(type);
      return { type, description: schemaMap[id].description, fields: describeFields(id) };
    }),
    guard: { actions: GUARD_ACTIONS, fields: describeFields('GuardRequest') },
    agents: agentInfos(),
    pricing: {
      per_call: {
        amount: PRICE_ATOMIC,
        decimals: USDC_DECIMALS,
        display: PRICE_DISPLAY,
        asset: USDC_BASE,
        network: NETWORK_V1,
        network_caip2: NETWORK_V2,
        scheme: 'exact',
      },
      payments_enabled: config.billing && config.x402PayTo !== null,
      free_tier: { plan: 'Basic', monthly_calls: config.freeTierMonthlyLimit },
      plans: config.planLimits,
    },
    limits: {
      max_body_bytes: MAX_BODY_BYTES,
      max_nesting_depth: MAX_DEPTH,
      max_checks_per_request: maxItems('DecideRequest', 'checks'),
      max_asset_ids: maxItems('StablecoinIntelligenceRequest', 'asset_ids'),
      max_bridge_status_urls: maxItems('BridgeRiskRequest', 'bridge_status_urls'),
      max_yield_options: maxItems('YieldRoutingRequest', 'options'),
      deadline_ms: {
        default: config.requestDeadlineMs,
        max: config.maxDeadlineMs,
        request_field: 'context.deadline_ms',
      },
    },
    auth: {
      billing: config.billing,
      methods: [
        { kind: 'api_key', header: 'x-api-key' },
        { kind: 'api_key', header: 'Authorization', format: 'Bearer <API_KEY>' },
        { kind: 'x402', version: 2, header: 'PAYMENT-SIGNATURE' },
        { kind: 'x402', version: 1, header: 'X-PAYMENT' },
      ],
      signup: 'POST /v1/api-keys/signup',
      free_endpoints: [
        ...GET_ENDPOINTS.map((e) => `GET ${e.path}`),
        ...POST_ENDPOINTS.filter((e) => e.access === 'free').map((e) => `POST ${e.path}`),
      ],
      payment_only_endpoints: POST_ENDPOINTS.filter((e) => e.access === 'payment_only').map((e) => `POST ${e.path}`),
    },
  };
}

export function metaRouter(config: Readonly<Config>): Router {
  const r = Router();
  const started = Date.now();
  const caps = capabilities(config);
  const openapi = buildOpenApi(config.publicBaseUrl);
  const agents = agentInfos();
  r.get('/', (_req, res) => {
    res.json({
      name: 'preflight',
      description: 'Pre-execution verification for on-chain agents: proceed, wait or block before you act.',
      version: VERSION,
      links: {
        health: '/health',
        capabilities: '/v1/capabilities',
        agents: '/v1/agents',
        openapi: '/openapi.json',
        docs: '/docs',
        metrics: '/metrics',
        signup: '/v1/api-keys/signup',
      },
    });
  });
  r.get('/health', (_req, res) => {
    res.setHeader('cache-control', 'no-store');
    res.json({ status: 'ok', version: VERSION, uptime_s: Math.floor((Date.now() - started) / 1000) });
  });
  r.get('/v1/capabilities', (_req, res) => {
    res.json(caps);
  });
  r.get('/v1/agents', (_req, res) => {
    res.json(agents);
  });
  r.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  r.use(docsRouter());
  return r;
}
