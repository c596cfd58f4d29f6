/**
 * POST /v1/api-keys/signup, behind body validation. Issues one Basic key per e-mail address
 * (case-insensitive, trimmed); the raw key appears once, in this answer, and is never stored or
 * logged. Every valid attempt counts against SIGNUPS_PER_HOUR for the client address, duplicates
 * included, so the endpoint cannot be used to probe which addresses hold keys at speed.
 */
import { createHash, randomUUID } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { requestOrigin, type ApiHandler, type ApiRequest } from '../api.js';
import { generateApiKey } from '../../billing/keys.js';
import { nextSignupWindowStart, planLimit, secondsUntil, signupWindow } from '../../billing/quota.js';
import type { Config } from '../../config.js';
import type { ApiKeySignupRequest, ApiKeySignupResponse } from '../../generated/types.js';
import type { Logger } from '../../log.js';
import type { Store } from '../../store/types.js';
import { HttpError, sendJson } from '../errors.js';

export interface SignupDeps {
  config: Readonly<Config>;
  store: Store;
  logger: Logger;
  now?: () => Date;
}

/**
 * The client address. With TRUST_PROXY the last X-Forwarded-For entry: the one our own proxy
 * appended, which the client cannot forge (earlier entries it can). So exactly one trusted hop.
 */
export function clientAddress(req: Pick<IncomingMessage, 'headers' | 'socket'>, trustProxy: boolean): string {
  const xff = req.headers['x-forwarded-for'];
  const list = (Array.isArray(xff) ? xff.join(',') : (xff ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const raw = trustProxy && list.length > 0 ? list[list.length - 1] : (req.socket.remoteAddress ?? 'unknown');
  return raw.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');
}

/** IPv6 clients are limited per /64, the block one subscriber usually holds, so rotating addresses inside it does not help. */
export function addressBucket(addr: string): string {
  if (!isIPv6(addr)) return addr;
  const [head, tail] = addr.split('::');
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const width = (g: string[]) => g.reduce((n, x) => n + (x.includes('.') ? 2 : 1), 0);
  const h = groups(head);
  const t = groups(tail);
  const full = tail === undefined ? h : [...h, ...Array(8 - width(h) - width(t)).fill('0'), ...t];
  return (
    full
      .slice(0, 4)
      .map((g) => parseInt(g, 16).toString(16))
      .join(':') + '::/64'
  );
}

/** docs_url and base_url: PUBLIC_BASE_URL when set, else from the request's own scheme and Host. */
function links(config: Readonly<Config>, req: ApiRequest): Pick<ApiKeySignupResponse, 'docs_url' | 'base_url'> {
  const base = config.publicBaseUrl ?? requestOrigin(req, config.trustProxy);
  return { docs_url: `${base}/openapi.json`, base_url: base };
}

export function signupHandler(deps: SignupDeps): ApiHandler {
  const { config, store } = deps;
  const now = deps.now ?? (() => new Date());
  const log = deps.logger.child({ component: 'signup' });
  const limit = config.signupsPerHour;
  const storeDown = (err: unknown): never => {
    log.error({ err }, 'key store unavailable');
    throw new HttpError(
      503,
      'The key store is unavailable right now; no key was issued. Retry shortly.',
      {},
      { 'Retry-After': '5' },
    );
  };

  return async (req, res) => {
    const body = req.body as ApiKeySignupRequest;
    const at = now();
    // Only a digest of the address is stored: enough to count, nothing to leak.
    const client = createHash('sha256')
      .update(addressBucket(clientAddress(req, config.trustProxy)))
      .digest('hex')
      .slice(0, 32);
    const count = await store.countSignup(client, signupWindow(at), limit).catch(storeDown);
    if (!count.allowed) {
      const retry = Math.max(1, secondsUntil(nextSignupWindowStart(at), at));
      throw new HttpError(
        429,
        `Too many signups from this address: at most ${limit} an hour. Retry in ${retry} s.`,
        { limit, retry_after_s: retry },
        { 'Retry-After': String(retry) },
      );
    }

    const issued = generateApiKey();
    const requested = body.requested_plan ?? null;
    const created = await store
      .createApiKey({
        id: randomUUID(),
        keyHash: issued.hash,
        prefix: issued.prefix,
        email: body.email,
        plan: 'Basic',
        requestedPlan: requested,
        company: body.company ?? null,
        fullName: body.full_name ?? null,
        useCase: body.use_case ?? null,
        website: body.website ?? null,
      })
      .catch(storeDown);
    res.setHeader('Cache-Control', 'no-store');
    let answer: ApiKeySignupResponse;
    if (!created) {
      log.info({ outcome: 'duplicate' }, 'api key signup refused');
      answer = {
        ok: false,
        message:
          'An active API key already exists for this e-mail address; each address holds one. A key is shown only once, at signup: to replace a lost key, ask the operator to revoke it, then sign up again.',
        api_key: null,
        ...links(config, req),
      };
    } else {
      log.info({ outcome: 'issued', prefix: issued.prefix, requestedPlan: requested }, 'api key issued');
      const upgrade =
        requested && requested !== 'Basic'
          ? ` Your request for the ${requested} plan is recorded; an operator can move this key to it.`
          : '';
      answer = {
        ok: true,
        message: `API key issued on the Basic plan: ${planLimit(config, 'Basic')} calls a month, reset on the 1st (UTC). Send it as x-api-key or Authorization: Bearer. It is shown only this once: store it now.${upgrade}`,
        api_key: issued.key,
        ...links(config, req),
      };
    }
    sendJson(res, 200, answer);
  };
}
