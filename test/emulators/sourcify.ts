/**
 * Sourcify v2 emulator: /v2/contract/{chainId}/{address} in the shapes of
 * test/fixtures/upstreams/sourcify (200 minimal, 404 with match null, 400 unsupported chain).
 * Mount path: SOURCIFY_URL is the emulator's `url` (the real base includes /server).
 */
import { Emulator } from './core.js';

export const SOURCIFY_429_BODY = JSON.stringify({
  customCode: 'too_many_requests',
  message: 'You are sending too many requests',
  errorId: '1ac6b91a-0605-4459-93dc-18f210a70192',
});
export const SOURCIFY_500_BODY = JSON.stringify({
  customCode: 'internal_error',
  message: 'Something went wrong',
  errorId: '1ac6b91a-0605-4459-93dc-18f210a70192',
});

export class SourcifyEmulator extends Emulator {
  private readonly verified = new Map<string, 'exact_match' | 'match'>();
  /** Chain ids answered with 400 unsupported_chain. */
  readonly unsupportedChains = new Set<number>();

  setVerified(chainId: number, address: string, match: 'exact_match' | 'match' = 'exact_match'): this {
    this.verified.set(`${chainId}/${address.toLowerCase()}`, match);
    return this;
  }

  constructor() {
    super();
    this.route('GET', /^\/v2\/contract\/([^/]+)\/([^/]+)$/, (req) => {
      const [chainId, address] = req.params;
      if (this.unsupportedChains.has(Number(chainId))) {
        return {
          status: 400,
          body: {
            customCode: 'unsupported_chain',
            message: `The chain with chainId ${chainId} is not supported`,
            errorId: '1ac6b91a-0605-4459-93dc-18f210a70192',
          },
        };
      }
      const match = this.verified.get(`${chainId}/${address.toLowerCase()}`);
      if (!match)
        return { status: 404, body: { match: null, creationMatch: null, runtimeMatch: null, chainId, address } };
      return {
        body: {
          match,
          creationMatch: match,
          runtimeMatch: 'match',
          chainId,
          address,
          verifiedAt: '2024-07-24T12:00:00Z',
          matchId: '3266227',
        },
      };
    });
  }
}

export async function startSourcify(): Promise<SourcifyEmulator> {
  return new SourcifyEmulator().listen();
}
