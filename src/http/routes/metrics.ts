/**
 * GET /metrics: the Prometheus text exposition of the app's registry. Free to call, but when
 * METRICS_TOKEN is set the scraper must send it as a Bearer token; the comparison is on digests
 * of equal length so its timing says nothing about the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Config } from '../../config.js';
import type { Metrics } from '../../metrics.js';

export interface MetricsRouteDeps {
  config: Pick<Config, 'metricsToken'>;
  metrics: Pick<Metrics, 'metricsText' | 'contentType'>;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

function bearer(req: Request): string | null {
  const h = req.headers.authorization;
  if (h === undefined) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m === null ? null : m[1];
}

export function metricsHandler(deps: MetricsRouteDeps): RequestHandler {
  const expected = deps.config.metricsToken === null ? null : digest(deps.config.metricsToken);
  return async (req: Request, res: Response) => {
    if (expected !== null) {
      const given = bearer(req);
      if (given === null || !timingSafeEqual(digest(given), expected)) {
        res.status(401).set('WWW-Authenticate', 'Bearer realm="metrics"').json({
          detail:
            'The metrics endpoint needs the METRICS_TOKEN configured for this service, sent as "Authorization: Bearer <token>".',
        });
        return;
      }
    }
    const body = await deps.metrics.metricsText();
    res.status(200).set('Content-Type', deps.metrics.contentType).set('Cache-Control', 'no-store').send(body);
  };
}
