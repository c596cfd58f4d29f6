import { pino, type Logger, type DestinationStream } from 'pino';

/** Header and body paths that must never reach a log line. */
export const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-payment"]',
  'req.headers["payment-signature"]',
  'headers["x-api-key"]',
  'headers.authorization',
  'headers["x-payment"]',
  'headers["payment-signature"]',
  'api_key',
  '*.api_key',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'preflight' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ sync: false }),
  );
}

export type { Logger };
