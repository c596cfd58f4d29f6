/** One short line for a failure of the chain, a facilitator or the network, for logs and the ledger. */
export function errorText(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const e = err as { shortMessage?: unknown; reason?: unknown; message?: unknown; code?: unknown };
    const reason = typeof e.reason === 'string' && e.reason !== '' ? e.reason : null;
    const short =
      typeof e.shortMessage === 'string' ? e.shortMessage : typeof e.message === 'string' ? e.message : null;
    const text =
      reason !== null && short !== null && !short.includes(reason) ? `${short}: ${reason}` : (short ?? reason);
    if (text !== null) return text.length > 300 ? `${text.slice(0, 300)}…` : text;
  }
  return String(err).slice(0, 300);
}
