import t from 'tap';
import { approvalAmount, evaluateApproval } from '../../src/checks/approval_amount.js';
import { UNLIMITED_THRESHOLD } from '../../src/scan/changes.js';
import { loadConfig } from '../../src/config.js';
import type { ApprovalAmountCheck } from '../../src/generated/types.js';

const MAX256 = ((1n << 256n) - 1n).toString();
const MAX160_HEX = `0x${'f'.repeat(40)}`;
const ROUTER = '0x3fC91A3afd70395Cd496C647d5a6CC9D4B2b7FAD';
const ZERO = '0x0000000000000000000000000000000000000000';

const rows: Array<[string, Omit<ApprovalAmountCheck, 'type'>, string, string | null]> = [
  ['exact amount to a named spender', { amount: '1000000', spender: ROUTER }, 'pass', null],
  ['revocation (0) passes even without spender', { amount: '0' }, 'pass', null],
  ['hex zero is a revocation', { amount: '0x0', spender: ZERO }, 'pass', null],
  ['uint256 max is unlimited', { amount: MAX256, spender: ROUTER }, 'fail', 'unlimited_approval'],
  ['uint160 max (hex) is unlimited', { amount: MAX160_HEX, spender: ROUTER }, 'fail', 'unlimited_approval'],
  [
    'exactly 2^96-1 is unlimited',
    { amount: UNLIMITED_THRESHOLD.toString(), spender: ROUTER },
    'fail',
    'unlimited_approval',
  ],
  ['2^96-2 is bounded', { amount: (UNLIMITED_THRESHOLD - 1n).toString(), spender: ROUTER }, 'pass', null],
  [
    'unlimited to a known safe spender warns (case-insensitive)',
    { amount: MAX256, spender: ROUTER, known_safe_addresses: [ROUTER.toLowerCase()] },
    'warn',
    'unlimited_approval',
  ],
  ['zero-address spender fails', { amount: '5', spender: ZERO }, 'fail', 'zero_address_spender'],
  [
    'zero-address spender fails even when listed safe',
    { amount: MAX256, spender: ZERO, known_safe_addresses: [ZERO] },
    'fail',
    'zero_address_spender',
  ],
  ['null spender with amount warns', { amount: '5', spender: null }, 'warn', 'spender_unknown'],
  ['unlimited with no spender fails', { amount: MAX256 }, 'fail', 'unlimited_approval'],
];

t.test('approval_amount table', async (t) => {
  for (const [name, fields, status, reason] of rows) {
    const out = evaluateApproval({ type: 'approval_amount', ...fields });
    t.equal(out.status, status, `${name}: status`);
    t.equal(out.reason, reason, `${name}: reason`);
    t.equal(out.ttl_s, 300, `${name}: ttl`);
    t.equal(out.source, null, `${name}: no upstream`);
  }
});

t.test('observed carries the exact amount as a decimal string and the unlimited flag', async (t) => {
  const out = evaluateApproval({ type: 'approval_amount', amount: MAX160_HEX, spender: ROUTER });
  t.same(out.observed, {
    amount: ((1n << 160n) - 1n).toString(),
    unlimited: true,
    spender: ROUTER,
    spender_known_safe: false,
  });
  t.match(out.message, /2\^160-1 \(unlimited\)/);
  t.same(out.expected, { unlimited_threshold: '79228162514264337593543950335' });
});

t.test('a malformed amount from a direct caller is an error, not a throw', async (t) => {
  const out = evaluateApproval({ type: 'approval_amount', amount: '12abc' });
  t.equal(out.status, 'error');
  t.equal(out.reason, 'invalid_amount');
});

t.test('run evaluates without any upstream', async (t) => {
  const out = await approvalAmount.run(
    { type: 'approval_amount', amount: MAX256, spender: ROUTER },
    { config: loadConfig({}), signal: new AbortController().signal, timeoutMs: 100 },
  );
  t.equal(out.status, 'fail');
  t.equal(out.reason, 'unlimited_approval');
});
