/**
 * Property-based fuzz of every POST endpoint over real HTTP (keep-alive, bounded concurrency),
 * with billing on and a real key. Over 10,000 generated requests: only 2xx or 4xx, never a hang,
 * every 4xx a JSON body with `detail` (422s exactly HTTPValidationError, 402s an x402 challenge),
 * every 2xx its documented response shape; afterwards the process is healthy, quota was counted
 * for served keyed calls only, keys exist only for issued signups, no prototype was polluted and
 * the loopback sink behind every generated URL saw no connection.
 */
import t from 'tap';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { startTestApp, post } from '../helpers/app.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { startDexScreener } from '../emulators/dexscreener.js';
import { startSourcify } from '../emulators/sourcify.js';
import { startEmulator } from '../emulators/core.js';
import { validator, type SchemaId } from '../../src/http/validation.js';
import { usagePeriod } from '../../src/billing/quota.js';
import { requestArb, PAIR, type FuzzRequest } from './bodies.js';
import { startSink, SINK_SECRET } from './sink.js';

const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const BATCH = 200; // requests per property run
const CONCURRENCY = 24; // requests in flight at once
const TIMEOUT_MS = 15_000; // above the largest deadline a body may ask for (10 s)
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

// About 20-45 s alone on 2 cores; CI runs two test files at once, so allow well past tap's 120 s default.
t.setTimeout(240_000);

interface Answer {
  status: number;
  text: string;
}

/** `fn` over `items` with at most `limit` running at once; results in order. */
async function inPool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

const isValidationError = validator('HTTPValidationError');

/** What is wrong with an answer, or null. */
function judge(req: FuzzRequest, a: Answer): string | null {
  if (a.status >= 500) return `server error ${a.status}`;
  if (a.status < 200 || (a.status >= 300 && a.status < 400)) return `unexpected status ${a.status}`;
  if (a.text.includes(SINK_SECRET)) return 'the loopback sink answered: a request reached it';
  let body: any;
  try {
    body = JSON.parse(a.text);
  } catch {
    return 'body is not JSON';
  }
  if (a.status < 300) {
    if (req.endpoint.access === 'payment_only') return 'served without payment';
    if (req.endpoint.access === 'paid' && !req.keyed) return 'paid endpoint served without the key';
    const ok = validator(req.endpoint.response as SchemaId);
    if (!ok(body)) return `2xx body does not match ${req.endpoint.response}: ${JSON.stringify(ok.errors?.slice(0, 2))}`;
    return null;
  }
  if (a.status === 402) {
    return body?.x402Version === 1 && Array.isArray(body.accepts) && body.accepts.length > 0
      ? null
      : '402 without an x402 challenge';
  }
  if (body === null || typeof body !== 'object' || !('detail' in body)) return `${a.status} body without detail`;
  if (a.status === 422 && (!isValidationError(body) || (body as { detail: unknown[] }).detail.length === 0))
    return '422 body is not an HTTPValidationError';
  if (a.status !== 422 && typeof body.detail !== 'string') return `${a.status} detail is not a sentence`;
  return null;
}

t.test('fuzzed POST bodies: no 5xx, no hang, exact error shapes, no state change, no pollution', async (t) => {
  const protoBefore = Reflect.ownKeys(Object.prototype).map(String).sort();
  const sink = await startSink();
  const cg = await startCoinGecko();
  const dex = await startDexScreener();
  const sourcify = await startSourcify();
  const facilitator = await startEmulator(); // payments are configured, but no generated request pays
  cg.setPrice('usd-coin', 'usd', 0.9998)
    .setPrice('tether', 'usd', 1.0004)
    .setPrice('dai', 'usd', 0.97)
    .setPrice('ethereum', 'usd', 3120.5);
  dex.setPair('base', PAIR);
  const app = await startTestApp({
    POOL_THREADS: process.env.FUZZ_POOL_THREADS ?? '2',
    BILLING: 'on',
    FREE_TIER_MONTHLY_LIMIT: '10000000',
    SIGNUPS_PER_HOUR: '1000000',
    ALLOW_PRIVATE_TARGETS: 'false',
    LOG_LEVEL: 'warn',
    PRICE_API_URL: cg.url,
    DEX_API_URL: dex.url,
    SOURCIFY_URL: sourcify.url,
    X402_PAY_TO: '0x1111111111111111111111111111111111111111',
    X402_SETTLEMENT: 'facilitator',
    X402_FACILITATOR_URL: facilitator.url,
  });
  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
  t.teardown(async () => {
    await agent.close();
    await app.close();
    await Promise.all([sink.close(), cg.close(), dex.close(), sourcify.close(), facilitator.close()]);
  });

  const first = await post(`${app.url}/v1/api-keys/signup`, { email: 'fuzz-owner@example.com' });
  t.equal(first.status, 200);
  const apiKey = first.body.api_key as string;
  const [keyRecord] = await app.store.listApiKeys();
  const periods = new Set([usagePeriod(new Date())]);

  const stats = { sent: 0, status: new Map<number, number>(), servedKeyed: 0, issued: 1 };
  const send = async (req: FuzzRequest): Promise<Answer | null> => {
    try {
      const res = await request(`${app.url}${req.endpoint.path}`, {
        method: 'POST',
        headers: req.headers,
        body: req.body,
        dispatcher: agent,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      return { status: res.statusCode, text: await res.body.text() };
    } catch {
      return null; // timed out or the connection died: both are failures of the service
    }
  };
  const started = performance.now();
  t.comment(`fuzz seed ${SEED} (FUZZ_SEED to replay), ${TOTAL} requests in batches of ${BATCH}`);

  await fc.assert(
    fc.asyncProperty(fc.array(requestArb(sink.port, apiKey), { minLength: BATCH, maxLength: BATCH }), async (batch) => {
      const answers = await inPool(batch, CONCURRENCY, send);
      const problems: string[] = [];
      answers.forEach((a, i) => {
        const req = batch[i];
        stats.sent++;
        const problem = a === null ? `no answer within ${TIMEOUT_MS} ms` : judge(req, a);
        if (a) {
          stats.status.set(a.status, (stats.status.get(a.status) ?? 0) + 1);
          if (a.status < 300 && req.endpoint.access === 'paid') stats.servedKeyed++;
          if (a.status < 300 && req.endpoint.handler === 'signup' && JSON.parse(a.text).api_key) stats.issued++;
        }
        if (problem) {
          const body = typeof req.body === 'string' ? req.body : `<${req.body.length} bytes>`;
          problems.push(
            `${problem}\n  request: ${req.label}\n  body: ${JSON.stringify(body.slice(0, 300))}\n  answer: ${a ? `${a.status} ${a.text.slice(0, 300)}` : 'none'}`,
          );
        }
      });
      if (problems.length > 0)
        throw new Error(`${problems.length} bad answers in a batch:\n${problems.slice(0, 3).join('\n')}`);
    }),
    {
      numRuns: Math.ceil(TOTAL / BATCH),
      seed: SEED,
      endOnFailure: true, // shrinking re-sends whole batches; the message already names the request
      reporter: (out) => {
        if (out.failed)
          throw new Error(
            `fuzz failed (seed ${out.seed}): ${(out.errorInstance as Error | undefined)?.message ?? 'unknown'}`,
          );
      },
    },
  );
  periods.add(usagePeriod(new Date()));
  const seconds = (performance.now() - started) / 1000;
  t.comment(
    `${stats.sent} requests in ${seconds.toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries([...stats.status].sort()))}`,
  );

  t.ok(stats.sent >= 10_000 || TOTAL < 10_000, `at least 10,000 requests (${stats.sent})`);
  t.ok((stats.status.get(200) ?? 0) > stats.sent / 10, 'a good share of bodies were valid and served');
  t.ok((stats.status.get(422) ?? 0) > stats.sent / 10, 'a good share were rejected by validation');
  const health = await fetch(`${app.url}/health`);
  t.equal(health.status, 200, 'the service is still healthy');
  t.equal((await health.json()).status, 'ok');

  let used = 0;
  for (const p of periods) used += await app.store.getUsage(keyRecord.id, p);
  t.equal(used, stats.servedKeyed, 'quota counted exactly the served keyed calls: no rejected request cost anything');
  t.equal(
    (await app.store.listApiKeys()).length,
    stats.issued,
    'one stored key per issued signup, none from rejected ones',
  );
  t.equal(sink.connections(), 0, 'no generated URL reached the loopback sink');
  t.equal(facilitator.stats.requests, 0, 'no payment was settled');
  t.same(
    app.logs.filter((l) => l.msg === 'unhandled error').map((l) => l.err),
    [],
    'no unhandled errors were logged',
  );

  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype has no `polluted`');
  t.equal(([] as unknown as Record<string, unknown>).polluted, undefined, 'Array.prototype has no `polluted`');
  t.same(Reflect.ownKeys(Object.prototype).map(String).sort(), protoBefore, 'Object.prototype gained no keys');
});
