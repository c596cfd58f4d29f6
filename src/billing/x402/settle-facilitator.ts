/**
 * Facilitator settlement (X402_SETTLEMENT=facilitator): the x402 facilitator API, `POST /verify`
 * and `POST /settle`, each with `{x402Version, paymentPayload, paymentRequirements}`. An invalid
 * payment is a 200 with `isValid: false` (or `success: false`), not an HTTP error. Calls go over the
 * operator dispatcher (net/dispatchers.ts), like every configured upstream: keep-alive, body cap,
 * userinfo as Basic auth, the facilitator host's circuit breaker.
 */
import { requestJson } from '../../net/json.js';
import type { PaymentRecord } from '../../store/types.js';
import { errorText } from './errors.js';
import type { SendResult, SettlementSender } from './settle-local.js';
import type { StoredPayment } from './types.js';

export type VerifyAnswer =
  | { kind: 'valid' }
  | { kind: 'invalid'; reason: string }
  | { kind: 'unavailable'; error: string };

export class FacilitatorClient implements SettlementSender {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs = 15_000,
  ) {}

  private async post(path: '/verify' | '/settle', body: unknown): Promise<Record<string, unknown>> {
    const r = await requestJson(this.baseUrl + path, {
      source: 'facilitator',
      method: 'POST',
      body: JSON.stringify(body),
      timeoutMs: this.timeoutMs,
      // An invalid payment may come with a 4xx that still carries its answer: the body decides.
      accept: () => true,
      circuit: { label: 'facilitator' },
    });
    if (!r.ok) throw new Error(`facilitator ${path}: ${r.message}`);
    const json = r.data.json;
    if (typeof json !== 'object' || json === null || Array.isArray(json))
      throw new Error(`facilitator ${path} answered ${r.data.status} without a JSON object`);
    if (r.data.status !== 200 && !('isValid' in json) && !('success' in json)) {
      throw new Error(`facilitator ${path} answered ${r.data.status}`);
    }
    return json as Record<string, unknown>;
  }

  async verify(
    p: Pick<StoredPayment, 'x402Version' | 'paymentPayload' | 'paymentRequirements'>,
  ): Promise<VerifyAnswer> {
    try {
      const out = await this.post('/verify', p);
      if (out.isValid === true) return { kind: 'valid' };
      return { kind: 'invalid', reason: typeof out.invalidReason === 'string' ? out.invalidReason : 'invalid_payload' };
    } catch (err) {
      return { kind: 'unavailable', error: errorText(err) };
    }
  }

  async send(rec: PaymentRecord, onBroadcast: (txHash: string) => Promise<void>): Promise<SendResult> {
    const stored = JSON.parse(rec.payload) as StoredPayment;
    let out: Record<string, unknown>;
    try {
      out = await this.post('/settle', {
        x402Version: stored.x402Version,
        paymentPayload: stored.paymentPayload,
        paymentRequirements: stored.paymentRequirements,
      });
    } catch (err) {
      return { ok: false, error: `facilitator settle failed: ${errorText(err)}` };
    }
    const tx = typeof out.transaction === 'string' && out.transaction !== '' ? out.transaction : null;
    if (tx !== null) await onBroadcast(tx);
    if (out.success === true && tx !== null) return { ok: true, txHash: tx };
    const reason = typeof out.errorReason === 'string' ? out.errorReason : 'no transaction';
    return tx === null
      ? { ok: false, error: `facilitator refused: ${reason}` }
      : { ok: false, error: `facilitator refused: ${reason}`, txHash: tx };
  }
}
