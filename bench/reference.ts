/**
 * The bench's yardstick: bare express 5 that parses and validates the same DecideRequest body with
 * the same precompiled validator as the service, then answers a fixed cached decide answer of the
 * same size, shape and headers as the service's (bench/answer.ts). Whatever the
 * service does beyond this (billing, cache, engine, metrics, logging) shows as the gap between the
 * two in the same run. Run as a child process: it reports its port over IPC.
 */
import express from 'express';
import type { AddressInfo } from 'node:net';
import type { ValidateFunction } from 'ajv';
import { DecideRequest } from '../src/generated/validators.js';
import { CACHED_ANSWER, CACHED_ANSWER_HEADERS } from './answer.js';

const validate = DecideRequest as unknown as ValidateFunction;

export function buildReference(): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.json({ limit: 256 * 1024, type: () => true }));
  app.post('/v1/decide', (req, res) => {
    if (!validate(req.body)) {
      res.status(422).json({ detail: validate.errors });
      return;
    }
    res.set(CACHED_ANSWER_HEADERS).type('application/json').send(CACHED_ANSWER);
  });
  return app;
}

async function main(): Promise<void> {
  const server = buildReference().listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  // The parent ends this child by closing the IPC channel or with SIGTERM.
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
}

if (process.argv[1] && import.meta.url === new URL(process.argv[1], 'file://').href) void main();
