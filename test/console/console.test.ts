/**
 * The operator console (docs/console.md) in Debian's Chromium driven by playwright-core, on
 * loopback only, against the service started as a user starts it (dist/src/server.js) on
 * PostgreSQL, with billing on and the price upstream emulated. It checks what the page is made of
 * (CSP, no inline script, the bundle's size), that the page talks to its own origin only and keeps
 * the key out of URLs, cookies and localStorage, the operator's journey through every view, axe-core
 * on every view at 1280 and 390 px with no sideways scrolling, and the verdict log with 10,000 rows.
 *
 * SCREENSHOTS_DIR=docs/console writes the screenshots docs/console.md shows.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import type { Browser, Page } from 'playwright-core';
import { axe, chromiumGate, launch, openTab, scrollsSideways, type Tab, WIDTHS } from '../helpers/browser.js';
import { pgAdmin } from '../helpers/pg.js';
import { spawnService, type ServiceProcess } from '../helpers/spawn.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { post } from '../helpers/app.js';

const ASSETS = fileURLToPath(new URL('../../console/assets/', import.meta.url));
const SHOTS = process.env.SCREENSHOTS_DIR ?? null;
type Width = keyof typeof WIDTHS;

const gate = chromiumGate();
const admin = await pgAdmin();
if (gate.fail) t.fail(gate.fail);
else if (gate.skip) t.plan(0, `skipped: ${gate.skip}`);
else if (typeof admin === 'string') {
  if (process.env.CI === 'true') t.fail(`PostgreSQL is required in CI: ${admin}`);
  else t.plan(0, `skipped: PostgreSQL is unreachable (${admin}); set PG_TEST_URL`);
} else await run(gate.bin as string, admin);

async function run(bin: string, pg: Exclude<typeof admin, string>): Promise<void> {
  const schema = `pf_console_${process.pid}_${randomBytes(4).toString('hex')}`;
  await pg.pool.query(`CREATE SCHEMA ${schema}`);
  const dbUrl = new URL(pg.url);
  dbUrl.searchParams.set('options', `-c search_path=${schema}`);
  const cg: CoinGeckoEmulator = await startCoinGecko();
  cg.setPrice('usd-coin', 'usd', 0.9998).setPrice('tether', 'usd', 1.0003);
  const service: ServiceProcess = await spawnService({
    BILLING: 'on',
    DATABASE_URL: dbUrl.toString(),
    PRICE_API_URL: cg.url,
    FREE_TIER_MONTHLY_LIMIT: '100000',
    REQUEST_DEADLINE_MS: '3000',
  });
  const browser: Browser = await launch(bin);
  t.teardown(async () => {
    await browser.close();
    service.child.kill('SIGTERM');
    await service.exited;
    await cg.close();
    await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pg.pool.end();
  });
  const origin = service.url;
  const signup = async (email: string): Promise<string> => {
    const r = await post(`${origin}/v1/api-keys/signup`, { email });
    if (r.status !== 200) throw new Error(`signup ${r.status}`);
    return r.body.api_key as string;
  };
  const ownerKey = await signup('operator@example.com');
  const tabs: Tab[] = [];
  t.teardown(() => Promise.all(tabs.map((x) => x.context.close())));
  const tab = async (width: Width): Promise<Tab> => {
    const x = await openTab(browser, WIDTHS[width]);
    tabs.push(x);
    return x;
  };

  /** axe-core and the width rule on the page as it is now, and its screenshot when asked for. */
  const audit = async (t: Test, page: Page, name: string, width: Width): Promise<void> => {
    const serious = (await axe(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
    t.same(
      serious.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
      [],
      `${name} at ${WIDTHS[width].width} px: no serious or critical accessibility violation`,
    );
    t.notOk(await scrollsSideways(page), `${name} at ${WIDTHS[width].width} px: no horizontal scrolling`);
    if (SHOTS) {
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, `${name}-${WIDTHS[width].width}.png`), fullPage: true });
    }
  };

  /** Nothing the page asked for left the service's origin, and the key is in no URL, cookie, localStorage or log line. */
  const keptHome = async (t: Test, x: Tab, key: string): Promise<void> => {
    const foreign = x.requests.filter((u) => new URL(u).origin !== origin);
    t.same(foreign, [], 'every request of the page went to the service itself');
    t.notOk(
      x.requests.some((u) => u.includes(key)),
      'the key is in no URL the page asked for',
    );
    t.notOk(x.page.url().includes(key), 'nor in the address bar');
    t.same(await x.context.cookies(), [], 'no cookie');
    t.equal(await x.page.evaluate(() => localStorage.length), 0, 'nothing in localStorage');
    t.notOk(JSON.stringify(service.logs).includes(key), "nor in the service's log");
  };

  const signIn = async (page: Page, key: string): Promise<void> => {
    await page.goto(`${origin}/console`);
    await page.getByLabel('Owner key').fill(key);
    // From the keyboard: Enter in the field submits the form.
    await page.getByLabel('Owner key').press('Enter');
  };

  t.test('the page: CSP, no inline script, one bundle within its budget', async (t) => {
    const res = await fetch(`${origin}/console`);
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type'), /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    t.match(csp, /^default-src 'self'(;|$)/, "default-src 'self'");
    t.notMatch(csp, /unsafe|https?:|\*|data:/, 'no unsafe source, no other origin, no data:');
    t.notMatch(csp, /script-src|style-src|connect-src/, 'nothing loosens the default for scripts, styles or fetches');
    const html = await res.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    t.ok(scripts.length > 0);
    for (const [, attrs, body] of scripts) {
      t.match(attrs, /\bsrc="\/console\//, 'each script is a file of the console');
      t.equal(body.trim(), '', 'with no inline body');
    }
    t.notMatch(html, /\son[a-z]+=|\sstyle=|<style/i, 'no inline handler or style');
    for (const path of ['/v1/keys', '/v1/policies', '/v1/verdicts'])
      t.equal(
        (await fetch(`${origin}${path}`, { headers: { 'x-api-key': ownerKey } })).status,
        200,
        `the endpoint it calls, ${path}, is served`,
      );
    for (const [file, type] of [
      ['console.js', /^text\/javascript/],
      ['console.css', /^text\/css/],
      ['icon.svg', /^image\/svg\+xml/],
    ] as const) {
      const r = await fetch(`${origin}/console/${file}`);
      t.equal(r.status, 200, file);
      t.match(r.headers.get('content-type'), type);
      t.equal(r.headers.get('content-security-policy'), csp);
    }
    t.equal((await fetch(`${origin}/console/../package.json`)).status, 404);
    t.equal((await fetch(`${origin}/console/console.js.map`)).status, 404, 'no source map is served');
    const gz = gzipSync(readFileSync(join(ASSETS, 'console.js'))).length;
    t.ok(gz <= 150 * 1024, `console.js is ${gz} bytes gzipped, at most 150 KB`);
    const served = Buffer.from(await (await fetch(`${origin}/console/console.js`)).arrayBuffer());
    t.equal(gzipSync(served).length, gz, 'the file served is the one built');
    t.notMatch(
      served.toString('utf8'),
      /https?:\/\/(?!www\.w3\.org\/)/,
      'the bundle names no other origin to load from',
    );
    const caps = (await (await fetch(`${origin}/v1/capabilities`)).json()) as { auth: { free_endpoints: string[] } };
    t.ok(caps.auth.free_endpoints.includes('GET /console'), 'a free GET of /v1/capabilities');
    const doc = (await (await fetch(`${origin}/openapi.json`)).json()) as { paths: Record<string, { get?: unknown }> };
    t.ok(doc.paths['/console']?.get, 'and an operation of /openapi.json');
  });

  t.test('sign-in at both widths', async (t) => {
    for (const width of ['desktop', 'phone'] as const) {
      const x = await tab(width);
      await x.page.goto(`${origin}/console`);
      await t.resolves(x.page.getByRole('heading', { name: 'Sign in' }).waitFor());
      await audit(t, x.page, 'signin', width);
      await signIn(x.page, 'pvk_not_a_key_of_this_service');
      const why = x.page.locator('#signin-error');
      await why.waitFor();
      t.match(await why.textContent(), /does not know this key/, 'a key the service does not know is told so');
      t.equal(await x.page.evaluate(() => sessionStorage.length), 0, 'a refused key is not kept');
      await keptHome(t, x, 'pvk_not_a_key_of_this_service');
      t.same(
        x.problems.filter((p) => !/status of (401|404)/.test(p)),
        [],
        'no script error or CSP violation',
      );
    }
  });

  t.test('the operator journey', async (t) => {
    const x = await tab('desktop');
    const { page } = x;
    await signIn(page, ownerKey);
    await page.getByRole('navigation', { name: 'Views' }).waitFor();
    t.equal(await page.evaluate(() => sessionStorage.length), 1, 'the key is kept in the tab');
    await page.keyboard.press('Tab');
    t.equal(
      await page.evaluate(() => document.activeElement?.textContent),
      'Skip to content',
      'the first Tab reaches the skip link',
    );
    await audit(t, page, 'overview-empty', 'desktop');

    // A policy with an allow list and a day limit; first with a wrong field, shown in place.
    await page.getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('button', { name: 'New policy' }).click();
    await page.getByLabel('Name').fill('fleet');
    const doc = {
      default: 'block',
      chains: ['base'],
      rules: [{ id: 'transfers', effect: 'allow', match: { actions: ['transfer'], max_usd: 500 } }],
      limits: [{ id: 'daily', window: 'fortnight', max_usd: 1000 }],
    };
    await page.getByLabel('Document (JSON)').fill(JSON.stringify(doc, null, 2));
    await page.getByRole('button', { name: 'Save version' }).click();
    const placed = page.locator('.error-at').first();
    await placed.waitFor();
    t.match(await placed.textContent(), /line \d+, limits\[0\]\.window/, 'the 422 names the field and its line');
    t.equal(await page.getByLabel('Document (JSON)').getAttribute('aria-invalid'), 'true');
    await audit(t, page, 'policies-error', 'desktop');
    await placed.click();
    const selected = await page.evaluate(() => {
      const ta = document.getElementById('policy-doc') as HTMLTextAreaElement;
      return ta.value.slice(ta.selectionStart, ta.selectionEnd);
    });
    t.match(selected, /"window": "fortnight"/, 'choosing the error selects the field in the document');
    doc.limits[0].window = 'day';
    await page.getByLabel('Document (JSON)').fill(JSON.stringify(doc, null, 2));
    await page.getByRole('button', { name: 'Save version' }).click();
    await page.getByText('Saved fleet as version 1.').waitFor();

    // An agent key bound to it, shown once with a copy button.
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByLabel('Name', { exact: true }).fill('agent-1');
    await page.getByLabel('Policy', { exact: true }).selectOption('fleet');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByLabel('API key');
    await secret.waitFor();
    const agentKey = await secret.inputValue();
    t.match(agentKey, /^pvk_/);
    await page.getByRole('button', { name: 'Copy the key of agent-1' }).click();
    t.equal(await page.evaluate(() => navigator.clipboard.readText()), agentKey, 'the copy button copies the key');
    // A key made without a policy, bound to it afterwards.
    await page.getByRole('button', { name: 'Done, hide it' }).click();
    await page.getByLabel('Name', { exact: true }).fill('agent-2');
    await page.getByLabel('Policy', { exact: true }).selectOption('');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('Agent key agent-2 created.').waitFor();
    await page.getByRole('button', { name: 'Done, hide it' }).click();
    await page.getByLabel('Policy of agent-2').selectOption('fleet');
    await page.locator('tr', { hasText: 'agent-2' }).getByRole('button', { name: 'Bind' }).click();
    await page.getByText('Key agent-2 is now bound to fleet.').waitFor();
    const listed = (await (await fetch(`${origin}/v1/keys`, { headers: { 'x-api-key': ownerKey } })).json()) as {
      keys: Array<{ name: string; policy: string | null }>;
    };
    t.equal(listed.keys.find((k) => k.name === 'agent-2')?.policy, 'fleet', 'the Bind button bound it');
    await audit(t, page, 'keys', 'desktop');

    // The agent key cannot manage the account.
    const other = await tab('phone');
    await signIn(other.page, agentKey);
    await other.page.locator('#signin-error').waitFor();
    t.match(await other.page.locator('#signin-error').textContent(), /agent key.*cannot manage the account/);

    // Guard calls with the agent key, from the test: usage and the log move.
    const transfer = { action: 'transfer', chain: 'base', amount_usd: 120 };
    let left = '';
    for (let i = 0; i < 3; i++) {
      const r = await post(`${origin}/v1/guard`, transfer, { 'x-api-key': agentKey });
      t.equal(r.status, 200);
      t.equal(r.body.verdict, 'proceed', JSON.stringify(r.body.failure_modes));
      left = r.headers.get('ratelimit-remaining') ?? '';
    }
    await page.getByRole('link', { name: 'Overview' }).click();
    const daily = page.locator('article.limit', { hasText: 'daily' });
    await daily.waitFor();
    const figures = await daily.locator('dl').textContent();
    t.match(figures, /Committed\$360\.00/, 'three transfers of 120 USD are in the day window');
    t.match(figures, /Bound\$1,000\.00/);
    const quota = page.locator('section', { has: page.getByRole('heading', { name: 'Monthly quota' }) });
    t.match(
      await quota.locator('dl').textContent(),
      new RegExp(`Left${left} of 100000Resets`),
      "the account's quota as the agent's last call left it",
    );
    t.ok(await daily.locator('canvas').count(), 'the window is drawn');
    await audit(t, page, 'overview', 'desktop');

    // A dry run of a transfer.
    await page.getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('button', { name: 'Open policy fleet' }).click();
    await page
      .getByLabel('Guard request (JSON)')
      .fill(JSON.stringify({ action: 'transfer', chain: 'base', amount_usd: 700 }));
    await page.getByRole('button', { name: 'Run' }).click();
    const dry = page.locator('.dry-answer');
    await dry.waitFor();
    t.match(await dry.textContent(), /Verdict\s*block/, 'a transfer over the rule bound blocks');
    await page
      .getByLabel('Guard request (JSON)')
      .fill(JSON.stringify({ action: 'transfer', chain: 'base', amount_usd: 25 }));
    await page.getByRole('button', { name: 'Run' }).click();
    await page.locator('.dry-answer', { hasText: 'Verdict proceed' }).waitFor();
    t.match(
      await dry.textContent(),
      /daily: \$25\.00 and 1 call on top of \$360\.00 and 3 used, bound \$1,000\.00/,
      'a 25 USD transfer proceeds and would take 25 USD of the day limit',
    );

    // A second version: the history lists both, with the diff and each hash.
    const v2 = { ...doc, approvals: { allow_unlimited: false } };
    await page.getByLabel('Document (JSON)').fill(JSON.stringify(v2, null, 2));
    await page.getByRole('button', { name: 'Save version' }).click();
    await page.getByText('Saved fleet as version 2.').waitFor();
    await page.getByRole('heading', { name: 'Versions of fleet' }).waitFor();
    const added = page.locator('pre.diff ins');
    await added.first().waitFor();
    t.match(await added.allTextContents(), [/"approvals"/], 'the diff from v1 to v2 shows what was added');
    t.equal(await page.locator('pre.diff del').count(), 0, 'and nothing removed');
    t.equal(await page.getByRole('button', { name: /^Copy the hash of version \d$/ }).count(), 2);
    await audit(t, page, 'policies', 'desktop');

    {
      await page.getByRole('link', { name: 'Verdicts' }).click();
      await page.locator('table.log tbody tr').first().waitFor();
      t.ok((await page.locator('table.log tbody tr', { hasText: 'agent-1' }).count()) >= 3, 'the calls are in the log');
      await page.getByLabel('Key', { exact: true }).selectOption({ label: 'agent-1' });
      const filtered = page.waitForResponse((res) => {
        const u = new URL(res.url());
        return u.pathname === '/v1/verdicts' && u.searchParams.has('key');
      });
      await page.getByRole('button', { name: 'Apply' }).click();
      t.equal(((await (await filtered).json()) as { verdicts: unknown[] }).verdicts.length, 3);
      await page.locator('table.log tbody tr').first().waitFor();
      t.same(
        await page.locator('table.log tbody td[data-label="Key"]').allTextContents(),
        ['agent-1', 'agent-1', 'agent-1'],
        'filtered by key: its three calls',
      );
      await page.locator('table.log tbody tr button').first().click();
      const detail = page.locator('tr.detail');
      t.match(await detail.textContent(), /Policyfleet v1/, 'a row opens to its policy version');
      t.match(await detail.textContent(), /Reservation(committed|reserved), \$120\.00/, 'and its reservation');
      await audit(t, page, 'verdicts', 'desktop');
    }

    // Revoke after a confirmation; the key's calls are refused.
    await page.getByRole('link', { name: 'Keys' }).click();
    const revoke = page.getByRole('button', { name: 'Revoke agent-1' });
    const dialog = page.getByRole('dialog', { name: 'Revoke agent-1?' });
    // From the keyboard: Enter opens the question, Escape withdraws it and nothing is revoked.
    await revoke.focus();
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    const still = await post(`${origin}/v1/guard`, transfer, { 'x-api-key': agentKey });
    t.equal(still.status, 200, 'a withdrawn revocation revokes nothing');
    await revoke.click();
    await dialog.waitFor();
    await audit(t, page, 'keys-revoke', 'desktop');
    await dialog.getByRole('button', { name: 'Revoke the key' }).click();
    await page.getByText('Key agent-1 is revoked').waitFor();
    const refused = await post(`${origin}/v1/guard`, transfer, { 'x-api-key': agentKey });
    t.equal(refused.status, 401, 'a revoked key is refused');

    await keptHome(t, x, ownerKey);
    t.same(
      x.problems.filter((p) => !/status of 4\d\d/.test(p)),
      [],
      'no script error or CSP violation',
    );

    // Every view at the phone width too.
    const phone = await tab('phone');
    await signIn(phone.page, ownerKey);
    for (const view of ['overview', 'keys', 'policies', 'verdicts']) {
      await phone.page.goto(`${origin}/console#${view}`);
      await phone.page.locator('main h2').waitFor();
      await phone.page.waitForLoadState('networkidle');
      if (view === 'policies') {
        await phone.page.getByRole('button', { name: 'Open policy fleet' }).click();
        await phone.page.getByRole('heading', { name: 'Versions of fleet' }).waitFor();
        await phone.page.locator('pre.diff').waitFor();
      }
      await audit(t, phone.page, view, 'phone');
    }
    await keptHome(t, phone, ownerKey);
  });

  t.test(
    'the verdict log with 10,000 rows',

    async (t) => {
      // 10,000 real keyed calls: every answer to a keyed call is a row of the log.
      const body = JSON.stringify({ action: 'transfer', chain: 'base', amount_usd: 5 });
      let sent = 0;
      let failed = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (sent < 10_000) {
            sent++;
            const r = await fetch(`${origin}/v1/guard`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-api-key': ownerKey },
              body,
            });
            await r.arrayBuffer();
            if (r.status !== 200) failed++;
          }
        }),
      );
      t.equal(failed, 0, 'the 10,000 calls were answered');
      const x = await tab('desktop');
      const { page } = x;
      await signIn(page, ownerKey);
      await page.getByRole('link', { name: 'Keys' }).click();
      await page.locator('table tbody tr').first().waitFor();
      await page.waitForLoadState('networkidle');
      const asked: string[] = [];
      page.on('request', (r) => {
        if (new URL(r.url()).pathname === '/v1/verdicts') asked.push(r.url());
      });
      /** The ids of the rows the next page's answer carries. */
      const rowsOf = async (): Promise<string[]> => {
        // The Verdicts view's own pages (the Overview reads the log too, 500 rows at a time).
        const r = await page.waitForResponse((res) => {
          const u = new URL(res.url());
          return u.pathname === '/v1/verdicts' && u.searchParams.get('limit') === '50';
        });
        return ((await r.json()) as { verdicts: Array<{ id: string }> }).verdicts.map((v) => v.id);
      };
      const started = performance.now();
      const first = rowsOf();
      await page.getByRole('link', { name: 'Verdicts' }).click();
      await page.locator('table.log tbody tr:nth-child(50)').waitFor();
      const ms = performance.now() - started;
      t.ok(ms < 1000, `the first page of 50 rows is on screen ${Math.round(ms)} ms after the click, within 1 s`);
      const page1 = await first;
      t.equal(page1.length, 50, 'one page of 50 rows was fetched');
      const seen = new Set(page1);
      for (let p = 2; p <= 3; p++) {
        const next = rowsOf();
        await page.getByRole('button', { name: 'Older' }).click();
        const ids = await next;
        t.equal(ids.length, 50, `page ${p}: one more page of 50`);
        t.notOk(
          ids.some((id) => seen.has(id)),
          `page ${p} shows none of the rows before it`,
        );
        for (const id of ids) seen.add(id);
        await page.getByText(`Page ${p}`).waitFor();
      }
      t.equal(await page.locator('table.log tbody tr').count(), 50, 'the table holds one page');
      const back = rowsOf();
      await page.getByRole('button', { name: 'Newer' }).click();
      const again = await back;
      await page.getByText('Page 2').waitFor();
      t.equal(asked.length, 4, 'four pages asked for, one request each');
      for (const u of asked) t.equal(new URL(u).searchParams.get('limit'), '50', 'each for 50 rows, never the log');
      t.ok(
        asked.slice(1).every((u) => new URL(u).searchParams.has('cursor')),
        'the later pages by their cursor',
      );
      t.notOk(
        again.some((id) => page1.includes(id)),
        'Newer goes back to page 2, not to page 1',
      );
      await keptHome(t, x, ownerKey);
    },
  );
}
