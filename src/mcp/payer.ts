/**
 * Paying the stdio bin's tool calls with x402 (docs/mcp.md §2). With `PREFLIGHT_PAYER_KEY` and no
 * API key, each tool call goes through the official x402 client (`@x402/fetch` with the exact EVM
 * scheme): it meets the endpoint's 402, signs one USDC authorization on Base and sends the call
 * again with it. The client's spend control refuses any challenge that asks more than
 * `PREFLIGHT_MAX_PAYMENT_USD` (default 0.01, the published price), so a wrong or hostile
 * `PREFLIGHT_URL` cannot charge more. Each call carries an x402 payment identifier, kept across
 * its one retry after a dropped connection, so the retry gets the answer already paid for and
 * pays nothing more (docs/x402.md §9). Every byte still goes through the operator dispatcher.
 */
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { appendPaymentIdentifierToExtensions, generatePaymentId } from '@x402/extensions/payment-identifier';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { privateKeyToAccount } from 'viem/accounts';
import { operatorDispatcher } from '../net/dispatchers.js';
import { type RawResponse, send } from '../net/transport.js';
import { CallNotMade } from './tools.js';

/** Base mainnet, the only network the service takes payments on (docs/x402.md §1). */
const NETWORK = 'eip155:8453';
const KEY = /^0x[0-9a-fA-F]{64}$/;
const USD = /^(0|[1-9]\d{0,5})(\.\d{1,6})?$/;
/** Statuses whose answers carry no body, which a Response refuses to be built with. */
const NO_BODY = new Set([101, 204, 205, 304]);

export interface PayerSettings {
  key: `0x${string}`;
  /** The most one call may cost, in USD, as the x402 client's spend control reads it (`$0.01`). */
  maxUsd: `$${string}`;
}

/** The payer from the environment: null without a key, or why the settings are unusable. */
export function readPayer(env: NodeJS.ProcessEnv): { payer: PayerSettings | null } | { error: string } {
  const key = env.PREFLIGHT_PAYER_KEY?.trim();
  if (!key) return { payer: null };
  if (!KEY.test(key)) return { error: 'PREFLIGHT_PAYER_KEY must be a private key: 0x and 64 hex digits' };
  const max = env.PREFLIGHT_MAX_PAYMENT_USD?.trim() || '0.01';
  if (!USD.test(max) || Number(max) <= 0) {
    return { error: 'PREFLIGHT_MAX_PAYMENT_USD must be a positive amount in USD, e.g. 0.01' };
  }
  return { payer: { key: key as `0x${string}`, maxUsd: `$${max}` } };
}

/** A transport failure under the payer's fetch: the one kind of failure a call is retried for. */
class TransportFailure extends Error {}

/**
 * A fetch, for the x402 client, that sends over the operator dispatcher (net/transport.ts). The
 * answers whose body the dispatcher cut at its cap go into `cut`, as a Response cannot say so.
 */
function operatorFetch(timeoutMs: number, cut: WeakSet<Response>): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    const body = req.body === null ? undefined : await req.text();
    const out = await send(operatorDispatcher(), new URL(req.url), {
      method: req.method as 'POST',
      headers: Object.fromEntries(req.headers),
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!out.ok) throw new TransportFailure(out.message);
    const { status, headers } = out.res;
    const res = new Response(NO_BODY.has(status) ? null : out.res.body, { status, headers });
    if (out.res.truncated) cut.add(res);
    return res;
  }) as typeof fetch;
}

/**
 * POSTs `body` to `url`, paid by `payer`: one payment identifier for the call, and one more
 * attempt under it when the connection fails. Throws when the call could not be made or paid.
 */
export function payingPoster(
  payer: PayerSettings,
  headers: Readonly<Record<string, string>>,
  timeoutMs: number,
): (url: URL, body: string) => Promise<RawResponse> {
  const signer = privateKeyToAccount(payer.key);
  const cut = new WeakSet<Response>();
  const transport = operatorFetch(timeoutMs, cut);
  return async (url, body) => {
    const id = generatePaymentId();
    const client = new x402Client();
    registerExactEvmScheme(client, { signer, networks: [NETWORK] });
    client.setSpendControls({ maxAmountPerPayment: payer.maxUsd });
    client.onBeforePaymentCreation(async (ctx) => {
      if (ctx.paymentRequired.extensions) appendPaymentIdentifierToExtensions(ctx.paymentRequired.extensions, id);
    });
    const pay = wrapFetchWithPayment(transport, client);
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await pay(url, { method: 'POST', headers: { ...headers }, body });
        const text = await res.text();
        return { status: res.status, headers: Object.fromEntries(res.headers), body: text, truncated: cut.has(res) };
      } catch (err) {
        if (err instanceof TransportFailure) {
          if (attempt >= 1) throw err;
          continue;
        }
        // The x402 client's own refusals: its spend control, a challenge it cannot read or sign.
        const message = (err as Error).message;
        throw new CallNotMade(
          /spendControls/.test(message)
            ? `Not paid: the service asks more per call than PREFLIGHT_MAX_PAYMENT_USD allows (${payer.maxUsd}); nothing was signed.`
            : `The x402 payment could not be made: ${message}`,
        );
      }
    }
  };
}
