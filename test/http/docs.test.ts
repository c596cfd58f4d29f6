/**
 * GET /docs: the API reference page. Served by the service from swagger-ui-dist (never a CDN), free,
 * linked from GET /, under a Content-Security-Policy with no inline script; and, in a real headless
 * Chromium, it renders every operation of /openapi.json while loading nothing from another origin.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { startTestApp } from '../helpers/app.js';
import { chromiumGate, openPage } from '../helpers/chromium.js';

const app = await startTestApp({ BILLING: 'on' });
t.teardown(() => app.close());

const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const openapi = (await (await fetch(`${app.url}/openapi.json`)).json()) as {
  paths: Record<string, Record<string, unknown>>;
};
const operations = Object.entries(openapi.paths)
  .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
  .sort();

t.test('GET / links the reference page', async (t) => {
  const body = (await (await fetch(`${app.url}/`)).json()) as { links: Record<string, string> };
  t.equal(body.links.docs, '/docs');
});

t.test('/docs is free, has no inline script and a CSP that allows this origin only', async (t) => {
  // Billing is on and no credentials are sent: a paid endpoint would answer 401/402 here.
  const res = await fetch(`${app.url}/docs`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/html/);
  const csp = res.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'(;|$)/, 'scripts from this origin only, no unsafe-inline or unsafe-eval');
  t.notMatch(csp, /https?:|\*|unsafe/, 'no other origin and no unsafe source anywhere');
  t.equal(res.headers.get('x-content-type-options'), 'nosniff');
  const html = await res.text();
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
  t.ok(scripts.length >= 2, 'the bundle and the init file');
  for (const [, attrs, body] of scripts) {
    t.match(attrs, /\bsrc="\/docs\//, 'every script is a file of /docs');
    t.equal(body.trim(), '', 'and has no inline code');
  }
  t.notMatch(html, /\son[a-z]+=/i, 'no inline event handlers');
  t.notMatch(html, /(src|href)="(https?:)?\/\//, 'nothing referenced on another origin');

  const denied = await fetch(`${app.url}/docs`, { method: 'POST' });
  t.equal(denied.status, 405);
});

t.test('the assets are the installed swagger-ui-dist files', async (t) => {
  for (const [name, type] of [
    ['swagger-ui-bundle.js', /^text\/javascript/],
    ['swagger-ui.css', /^text\/css/],
    ['favicon-32x32.png', /^image\/png/],
  ] as const) {
    const res = await fetch(`${app.url}/docs/${name}`);
    t.equal(res.status, 200, name);
    t.match(res.headers.get('content-type'), type, name);
    const served = Buffer.from(await res.arrayBuffer());
    const file = readFileSync(join(dist, name));
    if (name.endsWith('.png')) t.ok(served.equals(file), `${name} byte for byte`);
    // Text files lose only their source-map comment (the map is not served).
    else
      t.equal(
        served.toString().trim(),
        file
          .toString()
          .replace(/\/[/*]# sourceMappingURL=\S+/, '')
          .trim(),
        name,
      );
  }
  const init = await fetch(`${app.url}/docs/init.js`);
  t.equal(init.status, 200);
  t.match(await init.text(), /url: '\/openapi\.json'[\s\S]*validatorUrl: null/);
  for (const path of ['/docs/index.html', '/docs/swagger-ui-bundle.js.map', '/docs/..%2fpackage.json', '/docs/nope.js'])
    t.equal((await fetch(`${app.url}${path}`)).status, 404, `${path} is not served`);
});

t.test('/openapi.json documents /docs as an HTML page', async (t) => {
  t.ok(openapi.paths['/docs']?.get, 'GET /docs is an operation of the document');
  t.match(openapi.paths['/docs'].get, { security: [], responses: { 200: { content: { 'text/html': {} } } } });
});

const gate = chromiumGate();
if (gate.fail) t.fail(gate.fail);
t.test(
  'headless Chromium renders every operation, loading nothing from another origin',
  { skip: gate.skip },
  async (t) => {
    if (!gate.bin) return;
    const page = await openPage(gate.bin);
    t.teardown(() => page.close());

    await page.send('Page.navigate', { url: `${app.url}/docs` });
    // Swagger UI fetches /openapi.json and renders one .opblock per operation. Waiting on the
    // result itself, with a bound far above any normal render, keeps this free of timing guesses.
    const deadline = Date.now() + 90_000;
    let rendered: string[] = [];
    while (Date.now() < deadline) {
      rendered = await page.evaluate<string[]>(`[...document.querySelectorAll('.opblock')].map((b) =>
      b.querySelector('.opblock-summary-method').textContent.trim() + ' ' +
      b.querySelector('.opblock-summary-path').getAttribute('data-path'))`);
      if (rendered.length >= operations.length) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    t.same([...rendered].sort(), operations, `the page lists all ${operations.length} operations, method and path`);

    const title = await page.evaluate<string>(`document.querySelector('.info .title')?.textContent ?? ''`);
    t.match(title, /Pre-execution verification service/, 'the document title is shown');

    const origin = new URL(app.url).origin;
    const requested = page.events
      .filter((e) => e.method === 'Network.requestWillBeSent')
      .map((e) => e.params.request.url as string);
    t.ok(requested.includes(`${origin}/openapi.json`), 'the page fetched /openapi.json');
    t.ok(requested.includes(`${origin}/docs/swagger-ui-bundle.js`), 'and the bundle from this service');
    const elsewhere = requested.filter((u) => !u.startsWith('data:') && new URL(u).origin !== origin);
    t.same(elsewhere, [], 'no request left this origin');

    const failed = page.events.filter((e) => e.method === 'Network.loadingFailed').map((e) => e.params);
    t.same(failed, [], 'no request failed (a CSP block shows here too)');
    const statuses = page.events
      .filter((e) => e.method === 'Network.responseReceived')
      .map((e) => [e.params.response.url, e.params.response.status]);
    t.same(
      statuses.filter(([, s]) => s !== 200),
      [],
      'every response was 200',
    );

    const problems = [
      ...page.events
        .filter((e) => e.method === 'Log.entryAdded' && ['error', 'warning'].includes(e.params.entry.level))
        .map((e) => e.params.entry.text as string),
      ...page.events
        .filter((e) => e.method === 'Runtime.consoleAPICalled' && e.params.type === 'error')
        .map((e) => JSON.stringify(e.params.args)),
      ...page.events.filter((e) => e.method === 'Runtime.exceptionThrown').map((e) => JSON.stringify(e.params)),
    ];
    t.same(problems, [], 'no console error, CSP violation or exception');
  },
);
