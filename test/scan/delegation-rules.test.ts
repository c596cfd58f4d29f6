/**
 * The delegation rules (docs/action-scan.md §6) as a table: each case a set of facts and the
 * status, reason and signals it must give; and the overrides that install a type-4 transaction's
 * delegations. Pure.
 */
import t from 'tap';
import {
  type DelegationFacts,
  delegationOverrides,
  designator,
  judgeDelegation,
  ZERO_ADDRESS,
} from '../../src/scan/delegation.js';

const D = '0x00000000000000000000000000000000000000de';
const base: DelegationFacts = {
  delegate: D,
  chainId: 8453,
  requestChainId: 8453,
  code: true,
  verified: true,
  listed: true,
  sweptAssets: [],
  sweptApprovals: [],
};
const swept = {
  sweptAssets: [
    { asset: 'native', standard: 'native' as const, direction: 'out' as const, counterparty: D, amount: '1', usd: 1 },
  ],
};
const approved = {
  sweptApprovals: [{ token: D, spender: D, amount: '5', unlimited: false, kind: 'erc20' as const }],
};

const cases: Array<[string, Partial<DelegationFacts>, string, string | null, string[]]> = [
  ['listed, verified, quiet', {}, 'pass', null, []],
  ['listed, unverified, quiet', { verified: false }, 'pass', null, []],
  ['verified, unlisted', { listed: false }, 'warn', 'unlisted_delegate', ['unlisted_delegate']],
  [
    'unverified, unlisted',
    { listed: false, verified: false },
    'fail',
    'unverified_delegate',
    ['unverified_delegate', 'unlisted_delegate'],
  ],
  ['listed, every chain', { chainId: 0 }, 'warn', 'all_chains_authorization', ['all_chains_authorization']],
  [
    'unlisted, every chain',
    { chainId: 0, listed: false },
    'fail',
    'all_chains_authorization',
    ['all_chains_authorization', 'unlisted_delegate'],
  ],
  ['another chain', { chainId: 1 }, 'fail', 'chain_mismatch', ['chain_mismatch']],
  ['a chain without id', { requestChainId: null }, 'fail', 'chain_mismatch', ['chain_mismatch']],
  ['no code', { code: false }, 'fail', 'delegate_has_no_code', ['delegate_has_no_code']],
  ['sweeps, listed and verified', swept, 'fail', 'delegate_sweeps_funds', ['delegate_sweeps_funds']],
  ['grants an allowance under the probe', approved, 'fail', 'delegate_sweeps_funds', ['delegate_sweeps_funds']],
  [
    'sweeps, unlisted, on every chain',
    { ...swept, listed: false, chainId: 0 },
    'fail',
    'delegate_sweeps_funds',
    ['delegate_sweeps_funds', 'all_chains_authorization', 'unlisted_delegate'],
  ],
  ['unknown source, listed', { verified: null }, 'pass', null, []],
  ['unknown source, unlisted', { verified: null, listed: false }, 'warn', 'unlisted_delegate', ['unlisted_delegate']],
  [
    'revocation, unlisted, every chain, no code',
    { delegate: ZERO_ADDRESS, listed: false, verified: null, code: null, chainId: 0 },
    'pass',
    null,
    [],
  ],
  [
    'revocation for another chain',
    { delegate: ZERO_ADDRESS, listed: false, verified: null, code: null, chainId: 10 },
    'fail',
    'chain_mismatch',
    ['chain_mismatch'],
  ],
];

for (const [name, over, status, reason, signals] of cases) {
  t.test(name, async (t) => {
    const v = judgeDelegation({ ...base, ...over });
    t.equal(v.status, status);
    t.equal(v.reason, reason);
    t.same(
      v.signals.map((s) => s.reason),
      signals,
    );
  });
}

t.test('the designator is 0xef0100 followed by the delegate; the zero address clears the code', async (t) => {
  t.equal(designator('0xAbCdEf0000000000000000000000000000000001'), '0xef0100abcdef0000000000000000000000000000000001');
  t.equal(designator(ZERO_ADDRESS), '0x');
});

t.test('a type-4 transaction installs what the chain would: its chain or 0, the last per authority', async (t) => {
  const A = '0x1111111111111111111111111111111111111111';
  const B = '0x2222222222222222222222222222222222222222';
  const o = delegationOverrides(
    [
      { authority: A, address: D, chain_id: 8453, nonce: null },
      { authority: B, address: D, chain_id: 1, nonce: null },
      { authority: A, address: ZERO_ADDRESS, chain_id: 0, nonce: null },
    ],
    8453,
  );
  t.same(o, { [A]: { code: '0x' } }, "the other chain's is skipped, the later one for A wins");
  t.same(delegationOverrides([{ authority: B, address: D, chain_id: 0, nonce: 3 }], 8453), {
    [B]: { code: designator(D) },
  });
});

t.test(
  'DELEGATE_ALLOWLIST: comma-separated addresses, lower-cased, empty by default; anything else refused',
  async (t) => {
    const { loadConfig } = await import('../../src/config.js');
    t.same(loadConfig({}).delegateAllowlist, []);
    t.same(
      loadConfig({ DELEGATE_ALLOWLIST: ` 0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B, ${D} ,` }).delegateAllowlist,
      ['0x63c0c19a282a1b52b07dd5a65b58948a07dae32b', D],
    );
    t.throws(() => loadConfig({ DELEGATE_ALLOWLIST: '0x1234' }), /DELEGATE_ALLOWLIST must list 0x addresses/);
  },
);
