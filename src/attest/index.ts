/**
 * Signed answers (docs/attestations.md): the signer made from ATTESTATION_KEY or the store's kept
 * key, and the one call the decide and guard handlers make to sign an answer before sending it.
 */
import type { ApiRequest, ApiResponse } from '../http/api.js';
import { CHAIN_IDS, type ChainName, type Config } from '../config.js';
import type { Store } from '../store/types.js';
import { Attester, addressOf, newPrivateKey, type Answer, type Attestation } from './attester.js';
import type { ActionFields } from './verdict.js';

export { Attester, type Attestation } from './attester.js';

/** The signer for this configuration: null when signing is off (ATTESTATIONS=off, for measurement only). */
export async function createAttester(
  config: Pick<Config, 'attestations' | 'attestationKey'> & Partial<Pick<Config, 'attestationSigning'>>,
  store: Pick<Store, 'attestationKey'>,
): Promise<Attester | null> {
  if (!config.attestations) return null;
  let key = config.attestationKey;
  if (key === null) {
    const candidate = newPrivateKey();
    key = (await store.attestationKey({ privateKey: candidate, address: addressOf(candidate) })).privateKey;
  }
  // Answers are signed on the calling thread until the signing thread is up: start-up does not wait for it.
  return new Attester(key, { thread: true, mode: config.attestationSigning ?? 'prepared' });
}

/** Decide answers are signed for Base. */
export const DECIDE_CHAIN_ID = CHAIN_IDS.base;

/**
 * The domain chain id of a guard answer: the request chain's id (base when omitted); 0 for a chain
 * with no EVM chain id known here, so no executor on any chain accepts that answer.
 */
export function guardChainId(chain: string | null | undefined): number {
  const name = chain ?? 'base';
  return Object.hasOwn(CHAIN_IDS, name) ? CHAIN_IDS[name as ChainName] : 0;
}

const NO_BODY = Buffer.alloc(0);

/**
 * Adds `attestation` to `answer` (a DecideResponse about to be sent); nothing when signing is off.
 * `policyHash` is the hash of the policy version the answer was made under, signed into the
 * verdict (docs/attestations.md §1); absent or null, 32 zero bytes are signed.
 */
export async function attach<T extends Answer>(
  attester: Attester | null | undefined,
  req: ApiRequest,
  res: ApiResponse,
  answer: T,
  chainId: number,
  transaction?: ActionFields | null,
  policyHash?: string | Buffer | null,
): Promise<T & { attestation?: Attestation }> {
  if (!attester) return answer;
  const attestation = await attester.attest(answer, {
    answerId: res.locals.answerId,
    idHash: res.locals.answerIdHash,
    body: req.rawBody ?? NO_BODY,
    chainId,
    transaction,
    policyHash,
  });
  return Object.assign(answer, { attestation });
}
