/**
 * Debian's Chromium driven by playwright-core, kept on loopback by the same flags as
 * test/helpers/chromium.ts, for the console's browser tests (docs/console.md §6): every request the
 * page makes is recorded, and axe-core can be run in the page as it is, under its own CSP.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { chromiumGate, LOOPBACK_FLAGS } from './chromium.js';

export { chromiumGate };

/** Launches the gate's binary (a name on PATH or a path) headless with the loopback flags. */
export function launch(bin: string): Promise<Browser> {
  const path = bin.includes('/') ? bin : spawnSync('which', [bin], { encoding: 'utf8' }).stdout.trim();
  return chromium.launch({ executablePath: path, headless: true, args: LOOPBACK_FLAGS });
}

export interface Tab {
  context: BrowserContext;
  page: Page;
  /** Every URL the page asked for, in order. */
  requests: string[];
  /** Console errors, page errors and CSP reports. */
  problems: string[];
}

export const WIDTHS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

export async function openTab(browser: Browser, viewport: { width: number; height: number }): Promise<Tab> {
  const context = await browser.newContext({ viewport, permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  return { context, page, requests, problems };
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[]; failureSummary?: string }>;
}

/**
 * axe-core's WCAG 2.1 A and AA rules on the page as it stands. The script goes in through the
 * DevTools protocol (as a browser extension would), which the page's CSP does not govern.
 */
export async function axe(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE);
  const result = (await page.evaluate(
    `window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })`,
  )) as { violations: AxeViolation[] };
  return result.violations;
}

/** Whether the page scrolls sideways at its width (the document wider than the window). */
export function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
}
