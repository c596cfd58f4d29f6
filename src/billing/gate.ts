/**
 * The billing gate: runs after body validation and before the handler, and decides who pays for
 * the call. Order (semantics §7): credentials (401), then quota (429) or payment (402).
 */
import type { Request, Response } from 'express';

/**
 * The x402 side of the gate, implemented by the payment engine.
 *
 * - `configured`: payments can be taken (X402_PAY_TO set). When false the gate never calls the rest.
 * - `hasPayment(req)`: the request carries a payment header (X-PAYMENT or PAYMENT-SIGNATURE);
 *   presence only, no verification.
 * - `challenge(req, res, note?)`: sends the 402 challenge; `note` is one extra sentence for the
 *   body (e.g. that an API key is the other way to pay).
 * - `handle(req, res)`: verifies and claims the attached payment. `{ok: false}` means it has
 *   already answered (402 or other). `{ok: true}` lets the handler run; the gate calls
 *   `onServed()` once, when the response has finished with a status below 500. After a 5xx it is
 *   not called: the caller was not served, so the payment should not be settled.
 */
export interface PaymentGate {
  readonly configured: boolean;
  hasPayment(req: Request): boolean;
  challenge(req: Request, res: Response, note?: string): void;
  handle(req: Request, res: Response): Promise<{ ok: true; onServed(): void } | { ok: false }>;
}
