/** What the three example agents share: their settings, and the permit a drainer site asks for. */
export function settings() {
  const need = (name: string): string => {
    const v = process.env[name];
    if (!v) throw new Error(`set ${name} (see examples/README.md)`);
    return v;
  };
  return {
    baseUrl: need('PREFLIGHT_URL'),
    apiKey: process.env.PREFLIGHT_API_KEY,
    attester: process.env.PREFLIGHT_ATTESTER,
    rpcUrl: need('RPC_URL'),
    key: need('AGENT_KEY') as `0x${string}`,
  };
}

/** Base USDC and Permit2, at their Base addresses. */
export const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
export const PERMIT2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3';

/** A Permit2 allowance of all the USDC Permit2 can move, for a stranger: what a drainer asks to sign. */
export function drainerPermit(spender: string) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  return {
    domain: { name: 'Permit2', chainId: 8453, verifyingContract: PERMIT2 as `0x${string}` },
    types: {
      PermitSingle: [
        { name: 'details', type: 'PermitDetails' },
        { name: 'spender', type: 'address' },
        { name: 'sigDeadline', type: 'uint256' },
      ],
      PermitDetails: [
        { name: 'token', type: 'address' },
        { name: 'amount', type: 'uint160' },
        { name: 'expiration', type: 'uint48' },
        { name: 'nonce', type: 'uint48' },
      ],
    },
    primaryType: 'PermitSingle' as const,
    message: {
      details: { token: USDC as `0x${string}`, amount: 2n ** 160n - 1n, expiration: now + 86_400n, nonce: 0n },
      spender: spender as `0x${string}`,
      sigDeadline: now + 600n,
    },
  };
}

/** What an agent reports about an attempt: mined, or refused with the guard's verdict and reasons. */
export function refusal(err: unknown): string {
  for (let e = err; e; e = (e as { cause?: unknown }).cause) {
    const r = e as { name?: string; verdict?: string; reasons?: string[] };
    if (r.name === 'PreflightBlockedError' || r.name === 'PreflightWaitError')
      return `refused: ${r.verdict} (${(r.reasons ?? []).join(', ')})`;
  }
  throw err;
}
