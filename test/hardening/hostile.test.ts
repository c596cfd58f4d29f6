/**
 * Known hostile bodies, each with its exact answer: the regressions the fuzz found (deep nesting
 * in free-form fields, unpaired surrogates reaching URL encoding, corrupt compressed bodies)
 * and the prototype keys that must stay data.
 */
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { startTestApp, post } from '../helpers/app.js';
import { startCoinGecko } from '../emulators/coingecko.js';
import { startStatusPage } from '../emulators/statuspage.js';
import { MAX_DEPTH } from '../../src/http/validation.js';
import { deepText } from './values.js';

const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);
const objects = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

t.test('hostile bodies get their exact answers', async (t) => {
  const cg = await startCoinGecko();
  cg.setPrice('usd-coin', 'usd', 1);
  const app = await startTestApp({ PRICE_API_URL: cg.url, LOG_LEVEL: 'warn' });
  t.teardown(async () => {
    await app.close();
    await cg.close();
  });
  const decide = `${app.url}/v1/decide`;
  const zeros = (n: number): number[] => Array.from({ length: n }, () => 0);

  t.test('nesting past the depth limit is a 422 naming where, in every free-form field', async (t) => {
    // The body is level 1, so the first container too deep has a loc of MAX_DEPTH + 1 entries.
    const cases: Array<[string, string, string, Array<string | number>]> = [
      [
        'constraints, arrays',
        decide,
        `{"goal":"g","constraints":{"x":${arrays(40_000)}}}`,
        ['body', 'constraints', 'x', ...zeros(MAX_DEPTH - 2)],
      ],
      [
        'constraints, objects',
        decide,
        `{"goal":"g","constraints":${objects(30_000)}}`,
        ['body', 'constraints', ...Array(MAX_DEPTH - 1).fill('a')],
      ],
      [
        'context',
        decide,
        `{"goal":"g","context":{"x":${arrays(5_000)}}}`,
        ['body', 'context', 'x', ...zeros(MAX_DEPTH - 2)],
      ],
      [
        'rpc params',
        decide,
        `{"goal":"g","checks":[{"type":"rpc","rpc_url":"http://127.0.0.1/","method_name":"m","params":${arrays(10_000)}}]}`,
        ['body', 'checks', 0, 'params', ...zeros(MAX_DEPTH - 3)],
      ],
      [
        'guard context',
        `${app.url}/v1/guard`,
        `{"action":"swap","context":${deepText('proto', 15_000)}}`,
        ['body', 'context', ...Array(MAX_DEPTH - 1).fill('__proto__')],
      ],
      ['body root', decide, arrays(100_000), ['body', ...zeros(MAX_DEPTH)]],
    ];
    for (const [name, url, body, loc] of cases) {
      const r = await post(url, body);
      t.equal(r.status, 422, name);
      t.same(
        r.body.detail,
        [
          {
            loc,
            msg: `Input is nested too deeply: at most ${MAX_DEPTH} levels of objects and arrays`,
            type: 'too_deep',
          },
        ],
        `${name}: loc and type`,
      );
    }
    const fits = await post(decide, `{"goal":"g","constraints":{"x":${arrays(MAX_DEPTH - 2)}}}`);
    t.equal(fits.status, 200, `exactly ${MAX_DEPTH} levels are served`);
    t.equal(JSON.stringify(fits.body.decision.constraints), `{"x":${arrays(MAX_DEPTH - 2)}}`, 'and echoed whole');
  });

  t.test('unpaired surrogates are a 422 before they reach a URL or a store', async (t) => {
    const cases: Array<[string, string, Array<string | number>]> = [
      ['/v1/agents/stablecoin-intelligence/analyze', '{"asset_ids":["usd-coin","\\ud8cd"]}', ['body', 'asset_ids', 1]],
      ['/v1/agents/stablecoin-intelligence/analyze', '{"quote":"us\\udc00"}', ['body', 'quote']],
      [
        '/v1/decide',
        '{"goal":"g","checks":[{"type":"price","asset_id":"\\ud800x"}]}',
        ['body', 'checks', 0, 'asset_id'],
      ],
      [
        '/v1/decide',
        '{"goal":"g","checks":[{"type":"dex_price","chain":"base","pair_address":"\\udfff"}]}',
        ['body', 'checks', 0, 'pair_address'],
      ],
      ['/v1/guard', '{"action":"swap","stablecoin_asset_id":"\\ud83d"}', ['body', 'stablecoin_asset_id']],
      ['/v1/decide', '{"goal":"g","constraints":{"\\ud800":1}}', ['body', 'constraints', '\ud800']],
    ];
    for (const [path, body, loc] of cases) {
      const r = await post(`${app.url}${path}`, body);
      t.equal(r.status, 422, `${path} ${body}`);
      t.same(
        r.body.detail?.map((d: { loc: unknown; type: string }) => [d.loc, d.type]),
        [[loc, 'string_unicode']],
      );
    }
    const pair = await post(
      `${app.url}/v1/agents/stablecoin-intelligence/analyze`,
      '{"asset_ids":["usd-coin"],"quote":"usd","note":"\\ud83e\\udd84 \\u202e"}',
    );
    t.equal(pair.status, 200, 'a surrogate pair and RTL marks are fine');
    t.same(
      app.logs.filter((l) => l.msg === 'unhandled error'),
      [],
      'nothing reached the error handler unexpectedly',
    );
  });

  t.test('a corrupt compressed body is a 400, a sound one is read', async (t) => {
    const json = '{"goal":"g"}';
    const send = (encoding: string, body: Buffer) =>
      fetch(decide, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        body: new Uint8Array(body),
      });
    for (const [encoding, body] of [
      ['gzip', Buffer.from(json)],
      ['deflate', Buffer.from('xx')],
      ['br', Buffer.from([0xff, 0xff, 0xff])],
      ['gzip', gzipSync(json).subarray(0, 15)],
    ] as const) {
      const r = await send(encoding, body);
      t.equal(r.status, 400, `${encoding}: ${body.length} corrupt bytes`);
      t.match(await r.json(), { detail: /could not be decompressed/ });
    }
    for (const [encoding, body] of [
      ['gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
      ['br', brotliCompressSync(json)],
    ] as const) {
      t.equal((await send(encoding, body)).status, 200, `${encoding} body is read`);
    }
    const bomb = await send('gzip', gzipSync(Buffer.alloc(20 * 1024 * 1024, 32)));
    t.equal(bomb.status, 413, 'the size limit applies to the decompressed body');
  });

  t.test('prototype keys stay data at every level', async (t) => {
    const body =
      '{"__proto__":{"polluted":"root"},"goal":"g","constructor":{"prototype":{"polluted":"c"}},' +
      '"constraints":{"__proto__":{"polluted":"k"},"constructor":{"prototype":{"polluted":"p"}},"prototype":{"polluted":"q"}},' +
      '"context":{"__proto__":{"deadline_ms":1,"polluted":"ctx"}},"checks":[{"__proto__":{"type":"http"},"type":"approval_amount","amount":"1"}]}';
    const r = await post(decide, body);
    t.equal(r.status, 200);
    t.equal(r.body.decision.constraints.__proto__?.polluted, 'k', 'an own __proto__ key is echoed as data');
    t.equal(r.body.evidence[0].type, 'approval_amount', 'a __proto__ key did not change the check type');
    t.equal(({} as Record<string, unknown>).polluted, undefined);
    t.equal((Object.prototype as Record<string, unknown>).deadline_ms, undefined);
  });
});

t.test('caller headers no HTTP request can carry are dropped; the check still runs', async (t) => {
  const site = await startStatusPage();
  site.setPage('/ok', 'all systems operational');
  // A private deployment: the loopback status page is a permitted target.
  const app = await startTestApp({ ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'warn' });
  t.teardown(async () => {
    await app.close();
    await site.close();
  });
  const bad: Record<string, string> = {
    'x-emoji': 'go \ud83e\udd84',
    'x-ctl': 'a\u0001b',
    'x-del': 'a\u007fb',
    'x-cjk': '\u4e2d\u6587',
    'x-crlf': 'a\r\nx-injected: 1',
  };
  const headers = { ...bad, 'x-latin1': 'caf\u00e9', 'x-token': 'abc' };
  for (const [type, field] of [
    ['http', 'url'],
    ['bridge_exploit_monitor', 'status_url'],
  ]) {
    const r = await post(`${app.url}/v1/decide`, { goal: 'g', checks: [{ type, [field]: `${site.url}/ok`, headers }] });
    t.equal(r.status, 200);
    t.match(
      r.body.evidence[0],
      { status: 'pass', reason: null },
      `${type}: the page was fetched, not reported unreachable`,
    );
  }
  t.ok(site.received.length >= 2, 'both checks reached the page');
  for (const req of site.received) {
    t.equal(req.headers['x-token'], 'abc', 'sendable headers are sent');
    t.equal(req.headers['x-latin1'], 'caf\u00e9', 'a Latin-1 value is sendable and sent');
    for (const name of [...Object.keys(bad), 'x-injected'])
      t.equal(req.headers[name], undefined, `${name} was dropped`);
  }
});
