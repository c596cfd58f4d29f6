/**
 * The bench's floor: bare node:http that reads the body, parses it, validates it with the same
 * precompiled validator as the service and answers a fixed cached decide answer of the same size
 * and shape as the service's, with the same headers (bench/answer.ts). Nothing an HTTP service
 * written in Node can do for this request costs less; the service's cached decide is reported as
 * a ratio to it (and to the express reference, bench/reference.ts) in the same run.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ValidateFunction } from 'ajv';
import { DecideRequest } from '../src/generated/validators.js';
import { CACHED_ANSWER, CACHED_ANSWER_HEADERS } from './answer.js';

const validate = DecideRequest as unknown as ValidateFunction;
const LIMIT = 256 * 1024;

function send(
  res: http.ServerResponse,
  status: number,
  body: Buffer,
  extra: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, { ...extra, 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
}

export function buildFloor(): http.Server {
  return http.createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/decide') return send(res, 404, Buffer.from('{"detail":"Not Found"}'));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= LIMIT) chunks.push(c);
    });
    req.on('end', () => {
      if (size > LIMIT) return send(res, 413, Buffer.from('{"detail":"Request body too large"}'));
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return send(res, 422, Buffer.from('{"detail":"invalid JSON"}'));
      }
      if (!validate(body)) return send(res, 422, Buffer.from(JSON.stringify({ detail: validate.errors })));
      send(res, 200, CACHED_ANSWER, CACHED_ANSWER_HEADERS);
    });
  });
}

async function main(): Promise<void> {
  const server = buildFloor().listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
}

if (process.argv[1] && import.meta.url === new URL(process.argv[1], 'file://').href) void main();
