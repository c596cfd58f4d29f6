import t from 'tap';
import { checkError, fromUpstreamFail, neverThrow } from '../../src/checks/outcome.js';
import { fmtNum, fmtPct, fmtUsd, hexQuantity, roundRatio } from '../../src/format.js';
import type { UpstreamFail } from '../../src/net/result.js';
import { ctx, testConfig } from './helpers.js';

const fail = (f: Partial<UpstreamFail>): UpstreamFail => ({
  ok: false,
  reason: 'upstream_timeout',
  message: 'price_provider: request timed out',
  source: 'price_provider',
  latencyMs: 5,
  ...f,
});

t.test('fromUpstreamFail', async (t) => {
  const rows: Array<[string, Partial<UpstreamFail>, string, number, number | undefined]> = [
    ['timeout: error, never reused', { reason: 'upstream_timeout' }, 'error', 0, 2],
    [
      '429 with retry-after: cached for that long',
      { reason: 'upstream_rate_limited', retryAfterS: 17, status: 429 },
      'error',
      17,
      17,
    ],
    ['rate limit without retry-after', { reason: 'upstream_rate_limited' }, 'error', 60, 60],
    ['open circuit', { reason: 'circuit_open' }, 'error', 30, 30],
    ['5xx', { reason: 'upstream_http_error', status: 502 }, 'error', 0, 2],
    ['target_forbidden is a verdict on the URL', { reason: 'target_forbidden' }, 'fail', 30, undefined],
    ['too_many_redirects likewise', { reason: 'too_many_redirects', status: 302 }, 'fail', 30, undefined],
  ];
  for (const [name, f, status, ttl, retry] of rows) {
    const out = fromUpstreamFail(fail(f), 30);
    t.equal(out.status, status, name);
    t.equal(out.reason, f.reason, name);
    t.equal(out.ttl_s, ttl, `${name}: ttl`);
    t.equal(out.retry_after_s, retry, `${name}: retry_after_s`);
    t.equal(out.source, 'price_provider', name);
    t.match(out.message, /\.$/, `${name}: a sentence`);
    if (f.status) t.match(out.observed, { http_status: f.status }, `${name}: status observed`);
  }
});

t.test('neverThrow turns a bug into error internal_error', async (t) => {
  const run = neverThrow<{ x: number }>(async () => {
    throw new TypeError('cannot read properties of undefined');
  });
  const out = await run({ x: 1 }, ctx(testConfig()));
  t.equal(out.status, 'error');
  t.equal(out.reason, 'internal_error');
  t.match(out.message, /cannot read properties of undefined/);
  t.equal(checkError('field_missing', 'm', 'dex_provider').ttl_s, 0);
});

t.test('formatting', async (t) => {
  t.equal(fmtPct(0.0288), '2.88%');
  t.equal(fmtPct(0.02), '2%');
  t.equal(fmtPct(roundRatio(Math.abs(0.98 - 1))), '2%');
  t.equal(roundRatio(Math.abs(1.02 - 1)), 0.02);
  t.equal(fmtNum(0.004531), '0.004531');
  t.equal(fmtNum(3120.5512345), '3120.55');
  t.equal(fmtNum(12_500_000), '12500000');
  t.equal(fmtUsd(879284.45), '$879,284');
  t.equal(fmtUsd(12.345), '$12.35');
  t.equal(hexQuantity('0x1b'), 27);
  t.equal(hexQuantity('27'), null);
  t.equal(hexQuantity('0x'), null);
});
