/**
 * GET /docs: the interactive API reference, Swagger UI rendering /openapi.json (docs/api-reference.md).
 * Every file comes from the installed `swagger-ui-dist` package and is served by the service itself,
 * never from a CDN, so the page works on a machine with no way out. The page has no inline script
 * (the start-up code is /docs/init.js) and a Content-Security-Policy that allows only this origin.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { RequestHandler } from 'express';

/** Only what the page needs: the service's own files, JSON fetched from it, and the CSS's data: images. */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>preflight API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<noscript>This page needs JavaScript. The API description itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// validatorUrl: null keeps Swagger UI from sending the document to its public validator (its
// default); the linters in npm test validate it instead. "Try it out" sends to this origin only.
const INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

/** The package's files the page loads, by the name they are served under. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const distDir = (): string => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** Read once, on first use; a missing package is a startup-visible error on the first request. */
const cache = new Map<string, Buffer>();
function asset(name: string): Buffer {
  let body = cache.get(name);
  if (!body) {
    body = readFileSync(join(distDir(), name));
    // The source map is not served: drop the comment so a browser's developer tools do not ask for it.
    if (name.endsWith('.js') || name.endsWith('.css'))
      body = Buffer.from(body.toString('utf8').replace(/\n?\/[/*]# sourceMappingURL=\S+?(\s*\*\/)?\s*$/, '\n'));
    cache.set(name, body);
  }
  return body;
}

function send(
  res: { setHeader(n: string, v: string | number): unknown; end(b: Buffer | string): unknown },
  type: string,
  body: Buffer | string,
  cache: string,
): void {
  res.setHeader('content-type', type);
  res.setHeader('content-length', Buffer.byteLength(body));
  res.setHeader('cache-control', cache);
  res.setHeader('content-security-policy', DOCS_CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.end(body);
}

/** The handlers of the endpoint table's `/docs` row: the page, and the files under it (`/docs/:file`). */
export function docsHandlers(): { docs: RequestHandler; docsFiles: RequestHandler } {
  return {
    docs: (_req, res) => {
      send(res, 'text/html; charset=utf-8', PAGE, 'no-cache');
    },
    docsFiles: (req, res, next) => {
      const { file } = req.params;
      if (typeof file !== 'string') return next();
      if (file.toLowerCase() === 'init.js') {
        res.locals.route = '/docs/*';
        send(res, 'text/javascript; charset=utf-8', INIT, 'no-cache');
        return;
      }
      const type = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
      if (!type) return next();
      res.locals.route = '/docs/*';
      // The files change only with the package version, i.e. with a new release of the service.
      send(res, type, asset(file), 'public, max-age=86400');
    },
  };
}
