/**
 * HTTPS through the pinned address: the connection goes to the checked IP while SNI and the
 * certificate check still use the URL's host name.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Agent } from 'undici';
import { safeFetch } from '../../src/net/safe-fetch.js';
import { staticResolver } from '../../src/net/resolver.js';

function selfSigned(name: string): { key: string; cert: string } | null {
  const dir = mkdtempSync(join(tmpdir(), 'tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        `/CN=${name}`,
        '-addext',
        `subjectAltName=DNS:${name}`,
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'k.pem'), 'utf8'), cert: readFileSync(join(dir, 'c.pem'), 'utf8') };
  } catch {
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const pair = selfSigned('secure.test');

t.test(
  'https to a pinned address keeps SNI and certificate checks on the host name',
  { skip: pair ? false : 'openssl is not available to make a test certificate' },
  async (t) => {
    const { key, cert } = pair as { key: string; cert: string };
    const seen: { sni: string | undefined; host: string | undefined }[] = [];
    const server = https.createServer({ key, cert }, (req, res) => {
      seen.push({ sni: (req.socket as import('node:tls').TLSSocket).servername || undefined, host: req.headers.host });
      res.end('secure');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const agent = new Agent({ connect: { ca: cert } }); // trusts the test certificate, nothing else changes
    t.teardown(async () => {
      await agent.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    });
    const resolver = staticResolver({ 'secure.test': ['127.0.0.1'], 'impostor.test': ['127.0.0.1'] });

    const r = await safeFetch(`https://secure.test:${port}/`, { allowPrivate: true, resolver, dispatcher: agent });
    t.equal(r.ok && r.data.body, 'secure');
    t.same(seen, [{ sni: 'secure.test', host: `secure.test:${port}` }]);

    // Same address, another name: the certificate does not cover it, so the pinning cannot be used to skip verification.
    const wrong = await safeFetch(`https://impostor.test:${port}/`, {
      allowPrivate: true,
      resolver,
      dispatcher: agent,
    });
    t.equal(!wrong.ok && wrong.reason, 'upstream_unreachable');
    t.match(!wrong.ok && wrong.message, /ALTNAME|certificate/i);
    t.equal(seen.length, 1);
  },
);
