/**
 * The payment gate when payments are off (no X402_PAY_TO). Kept apart from the engine so a
 * service without payments never loads the signing and chain code.
 */
import type { X402 } from './index.js';
import { hasPaymentHeader } from './header.js';

export function paymentsOff(): X402 {
  const off = (): never => {
    throw new Error('x402 payments are off: X402_PAY_TO is not set');
  };
  return {
    configured: false,
    hasPayment: (req) => hasPaymentHeader(req.headers),
    challenge: off,
    handle: off,
    start: () => undefined,
    stop: async () => undefined,
    settleNow: off,
    settlePending: async () => undefined,
  };
}
