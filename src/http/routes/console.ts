/**
 * GET /console: the operator console (docs/console.md). The page is a static shell; its script and
 * stylesheet are bundled at build time (console/build.ts) into dist/console/assets and served from
 * here, so the console works with the package alone and loads nothing from another origin. No
 * inline script or style; the Content-Security-Policy admits this origin only.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RequestHandler } from 'express';

/** `default-src 'self'` and nothing looser; the rest only narrows it. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** dist/console/assets, beside dist/src where this module runs from. */
const ASSETS = fileURLToPath(new URL('../../../console/assets/', import.meta.url));

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>preflight console</title>
<link rel="stylesheet" href="/console/console.css">
<link rel="icon" type="image/svg+xml" href="/console/icon.svg">
<script type="module" src="/console/console.js"></script>
</head>
<body>
<div id="app"></div>
<noscript>The console needs JavaScript. The API it uses is described at <a href="/docs">/docs</a>.</noscript>
</body>
</html>
`;

const FILES: Record<string, string> = {
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'icon.svg': 'image/svg+xml',
};

/** The tab's icon: a check mark, so the browser does not ask for /favicon.ico. */
const ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1f5fa8"/><path d="M4 8.5l2.5 2.5L12 5.5" stroke="#fff" stroke-width="2" fill="none"/></svg>';

const cache = new Map<string, Buffer>();
function asset(name: string): Buffer {
  if (name === 'icon.svg') return Buffer.from(ICON);
  let body = cache.get(name);
  if (!body) {
    body = readFileSync(`${ASSETS}${name}`);
    cache.set(name, body);
  }
  return body;
}

function send(
  res: { setHeader(n: string, v: string | number): unknown; end(b: Buffer | string): unknown },
  type: string,
  body: Buffer | string,
): void {
  res.setHeader('content-type', type);
  res.setHeader('content-length', Buffer.byteLength(body));
  // Revalidated on every load: a new release's bundle is picked up at once.
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('content-security-policy', CONSOLE_CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('x-frame-options', 'DENY');
  res.end(body);
}

/** The handlers of the endpoint table's `/console` row: the page, its two bundled files and its icon. */
export function consoleHandlers(): { console: RequestHandler; consoleFiles: RequestHandler } {
  return {
    console: (_req, res) => send(res, 'text/html; charset=utf-8', PAGE),
    consoleFiles: (req, res, next) => {
      const { file } = req.params;
      const type = typeof file === 'string' && Object.hasOwn(FILES, file) ? FILES[file] : undefined;
      if (!type) return next();
      res.locals.route = '/console/*';
      send(res, type, asset(file as string));
    },
  };
}
