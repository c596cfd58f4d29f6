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

t.test('fmtUsd writes what en-US Intl.NumberFormat writes, without calling it below 1e21', async (t) => {
  // The formatter's own text is the reference: at most 0 fraction digits from $1,000, 2 from $1,
  // 6 below; rounded on the number's shortest decimal text, half away from zero.
  const intl = (n: number): string => {
    if (!Number.isFinite(n)) return String(n);
    const digits = Math.abs(n) >= 1000 ? 0 : Math.abs(n) >= 1 ? 2 : 6;
    return `$${new Intl.NumberFormat('en-US', { maximumFractionDigits: digits }).format(n)}`;
  };
  const edges = [
    0,
    -0,
    1,
    -1,
    0.125,
    2.675,
    1.005,
    999.995,
    999.994,
    999.999,
    9.999995,
    99.995,
    0.9999995,
    0.99999949,
    1e-7,
    -1e-7,
    5e-7,
    -5e-7,
    4.9999999e-7,
    9.5e-7,
    1e-6,
    1e-9,
    0.0000015,
    0.0000025,
    1000,
    1000.5,
    2500.5,
    -2500.5,
    1234.5,
    1234567.891,
    123456.78,
    2 ** 53,
    -(2 ** 53),
    1e15,
    779681812043308900,
    1e20,
    9.99e20,
    1e21,
    2.5e22,
    Number.POSITIVE_INFINITY,
    Number.NaN,
  ];
  for (const n of edges) t.equal(fmtUsd(n), intl(n), `${n}`);
  // And a seeded sweep over every magnitude the three precisions meet.
  let seed = 42;
  const next = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  let differ = 0;
  for (let i = 0; i < 20_000; i++) {
    let n = next() * 10 * 10 ** (Math.floor(next() * 32) - 12);
    if (next() < 0.3) n = -n;
    if (next() < 0.2) n = Math.round(n * 1000) / 1000;
    if (next() < 0.2) n = Number(n.toPrecision(1 + Math.floor(next() * 8)));
    if (fmtUsd(n) !== intl(n) && differ++ < 5) t.fail(`${n}: ${fmtUsd(n)} against ${intl(n)}`);
  }
  t.equal(differ, 0, '20,000 amounts written alike');
});
