/**
 * The action-scan rules as tables: each row of the simulation and signature tables, its order
 * (the first match decides, every match is a signal), the typed-data kinds by shape, and the
 * reading of logs into asset and approval changes.
 */
import { AbiCoder, MaxUint256, zeroPadValue } from 'ethers';
import t from 'tap';
import { type AssetChange, PERMIT2, TOPICS, approvalChanges, assetChanges } from '../../src/scan/changes.js';
import {
  type SignatureFacts,
  type SimulationFacts,
  exceedsDeclared,
  fmtUnits,
  matchSignatureRules,
  matchSimulationRules,
} from '../../src/scan/rules.js';
import { decodeRevert, methodUnsupported, parseCallTrace } from '../../src/scan/simulate.js';
import { kindOf } from '../../src/scan/typed-data.js';
import { decodeSymbol, usdValue } from '../../src/scan/value.js';

const ME = '0x00000000000000000000000000000000000000aa';
const SPENDER = '0x00000000000000000000000000000000000000bb';
const TOKEN = '0x00000000000000000000000000000000000000cc';

const out = (usd: number | null, asset = TOKEN): AssetChange => ({
  asset,
  standard: 'erc20',
  direction: 'out',
  counterparty: SPENDER,
  amount: '1',
  usd,
});
const inn = (usd: number | null): AssetChange => ({ ...out(usd), direction: 'in' });
const sim = (over: Partial<SimulationFacts>): SimulationFacts => ({
  action: 'transfer',
  amountUsd: null,
  knownSafe: new Set(),
  reverted: false,
  effectsKnown: true,
  assetChanges: [],
  approvalChanges: [],
  netUsdOut: 0,
  ...over,
});
const unlimited = {
  token: TOKEN,
  spender: SPENDER,
  amount: MaxUint256.toString(),
  unlimited: true,
  kind: 'erc20' as const,
};
const forAll = { token: TOKEN, spender: SPENDER, amount: '1', unlimited: true, kind: 'erc721_all' as const };

t.test('simulation rules, one row each and their order', async (t) => {
  const rows: Array<[string, SimulationFacts, string, string | null, string[]]> = [
    ['nothing happens', sim({}), 'pass', null, []],
    ['a revert', sim({ reverted: true }), 'fail', 'simulation_reverted', ['simulation_reverted']],
    ['eth_call only', sim({ effectsKnown: false }), 'warn', 'effects_unknown', ['effects_unknown']],
    ['unlimited approval', sim({ approvalChanges: [unlimited] }), 'fail', 'unlimited_approval', ['unlimited_approval']],
    [
      'unlimited approval to a listed spender',
      sim({ approvalChanges: [unlimited], knownSafe: new Set([SPENDER]) }),
      'warn',
      'unlimited_approval',
      ['unlimited_approval'],
    ],
    ['approval for all', sim({ approvalChanges: [forAll] }), 'fail', 'approval_for_all', ['approval_for_all']],
    [
      'approval for all to a listed operator',
      sim({ approvalChanges: [forAll], knownSafe: new Set([SPENDER]) }),
      'warn',
      'approval_for_all',
      ['approval_for_all'],
    ],
    [
      'a revoked approval for all',
      sim({ approvalChanges: [{ ...forAll, amount: '0', unlimited: false }] }),
      'pass',
      null,
      [],
    ],
    ['outflow at the tolerance', sim({ amountUsd: 100, netUsdOut: 106, assetChanges: [out(106)] }), 'pass', null, []],
    [
      'outflow over the tolerance',
      sim({ amountUsd: 100, netUsdOut: 106.01, assetChanges: [out(106.01)] }),
      'fail',
      'outflow_exceeds_declared',
      ['outflow_exceeds_declared'],
    ],
    [
      'a swap receiving nothing',
      sim({ action: 'swap', assetChanges: [out(5)], netUsdOut: 5 }),
      'fail',
      'swap_receives_nothing',
      ['swap_receives_nothing'],
    ],
    [
      'a swap receiving something',
      sim({ action: 'swap', assetChanges: [out(5), inn(5)], netUsdOut: 5 }),
      'pass',
      null,
      [],
    ],
    ['a transfer receives nothing, rightly', sim({ assetChanges: [out(5)], netUsdOut: 5 }), 'pass', null, []],
    [
      'an unpriced outflow with a declared amount',
      sim({ amountUsd: 10, assetChanges: [out(null)] }),
      'warn',
      'outflow_unpriced',
      ['outflow_unpriced'],
    ],
    ['an unpriced outflow without one', sim({ assetChanges: [out(null)] }), 'pass', null, []],
    [
      'every match is a signal, the first decides',
      sim({
        action: 'swap',
        amountUsd: 1,
        approvalChanges: [unlimited],
        assetChanges: [out(50), out(null, SPENDER)],
        netUsdOut: 50,
      }),
      'fail',
      'unlimited_approval',
      ['unlimited_approval', 'outflow_exceeds_declared', 'swap_receives_nothing', 'outflow_unpriced'],
    ],
  ];
  for (const [name, facts, status, reason, signals] of rows) {
    const v = matchSimulationRules(facts);
    t.equal(v.status, status, `${name}: status`);
    t.equal(v.reason, reason, `${name}: reason`);
    t.same(
      v.signals.map((s) => s.reason),
      signals,
      `${name}: signals`,
    );
  }
  t.equal(exceedsDeclared(106, 100), false);
  t.equal(exceedsDeclared(0, 0), false, 'a dollar of slack at zero');
  t.equal(exceedsDeclared(1.01, 0), true);
});

const sig = (over: Partial<SignatureFacts>): SignatureFacts => ({
  kind: 'eip2612_permit',
  domainChainId: 8453n,
  chainId: 8453,
  spender: SPENDER,
  knownSafe: new Set(),
  grants: [{ token: TOKEN, amount: '1000000', unlimited: false, usd: 1 }],
  amountUsd: null,
  validUntil: [1_000_600n],
  nowS: 1_000_000,
  ...over,
});
const unlimitedGrant = { token: TOKEN, amount: MaxUint256.toString(), unlimited: true, usd: null };

t.test('signature rules, one row each and their order', async (t) => {
  const rows: Array<[string, SignatureFacts, string, string | null]> = [
    ['an exact short permit', sig({}), 'pass', null],
    ['another chain', sig({ domainChainId: 1n }), 'fail', 'chain_mismatch'],
    ['no chain id in the domain', sig({ domainChainId: null }), 'pass', null],
    ['a request chain without id', sig({ domainChainId: 1n, chainId: null }), 'pass', null],
    ['unlimited', sig({ grants: [unlimitedGrant] }), 'fail', 'unlimited_permit'],
    [
      'unlimited to a listed spender',
      sig({ grants: [unlimitedGrant], knownSafe: new Set([SPENDER]) }),
      'warn',
      'unlimited_permit',
    ],
    [
      'beyond the declared amount',
      sig({ amountUsd: 100, grants: [{ ...sig({}).grants[0], usd: 500 }] }),
      'fail',
      'outflow_exceeds_declared',
    ],
    ['within it', sig({ amountUsd: 100, grants: [{ ...sig({}).grants[0], usd: 105 }] }), 'pass', null],
    [
      'unpriced with a declared amount',
      sig({ amountUsd: 100, grants: [{ ...sig({}).grants[0], usd: null }] }),
      'warn',
      'outflow_unpriced',
    ],
    ['31 days', sig({ validUntil: [BigInt(1_000_000 + 31 * 86_400)] }), 'warn', 'long_lived_permit'],
    ['29 days', sig({ validUntil: [BigInt(1_000_000 + 29 * 86_400)] }), 'pass', null],
    ['an unknown type', sig({ kind: null, grants: [], validUntil: [] }), 'warn', 'unrecognised_typed_data'],
    ['an unknown type on another chain', sig({ kind: null, grants: [], domainChainId: 10n }), 'fail', 'chain_mismatch'],
  ];
  for (const [name, facts, status, reason] of rows) {
    const v = matchSignatureRules(facts);
    t.equal(v.status, status, `${name}: status`);
    t.equal(v.reason, reason, `${name}: reason`);
  }
});

t.test('typed-data kinds by the shape of types, not the name', async (t) => {
  const permit = [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ];
  const details = [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint160' },
    { name: 'expiration', type: 'uint48' },
    { name: 'nonce', type: 'uint48' },
  ];
  const perms = [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ];
  const auth = [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ];
  const single = (detailsType: string) => [
    { name: 'details', type: detailsType },
    { name: 'spender', type: 'address' },
    { name: 'sigDeadline', type: 'uint256' },
  ];
  const transfer = (permittedType: string, witness = false) => [
    { name: 'permitted', type: permittedType },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    ...(witness ? [{ name: 'witness', type: 'Order' }] : []),
  ];
  const rows: Array<[string, Record<string, Array<{ name: string; type: string }>>, string, string | null]> = [
    ['Permit', { Permit: permit }, 'Permit', 'eip2612_permit'],
    ['a permit under another name', { Allow: [...permit].reverse() }, 'Allow', 'eip2612_permit'],
    ['Permit with an extra field', { Permit: [...permit, { name: 'memo', type: 'string' }] }, 'Permit', null],
    [
      'Permit with value as uint128',
      { Permit: permit.map((f) => (f.name === 'value' ? { ...f, type: 'uint128' } : f)) },
      'Permit',
      null,
    ],
    [
      'DAI permit',
      {
        Permit: [
          { name: 'holder', type: 'address' },
          { name: 'spender', type: 'address' },
          { name: 'nonce', type: 'uint256' },
          { name: 'expiry', type: 'uint256' },
          { name: 'allowed', type: 'bool' },
        ],
      },
      'Permit',
      'dai_permit',
    ],
    [
      'PermitSingle',
      { PermitSingle: single('PermitDetails'), PermitDetails: details },
      'PermitSingle',
      'permit2_single',
    ],
    ['PermitBatch', { PermitBatch: single('PermitDetails[]'), PermitDetails: details }, 'PermitBatch', 'permit2_batch'],
    ['PermitSingle with wrong details', { PermitSingle: single('D'), D: perms }, 'PermitSingle', null],
    [
      'PermitTransferFrom',
      { PermitTransferFrom: transfer('TokenPermissions'), TokenPermissions: perms },
      'PermitTransferFrom',
      'permit2_transfer',
    ],
    [
      'PermitBatchTransferFrom',
      { PermitBatchTransferFrom: transfer('TokenPermissions[]'), TokenPermissions: perms },
      'PermitBatchTransferFrom',
      'permit2_batch_transfer',
    ],
    [
      'PermitWitnessTransferFrom',
      {
        PermitWitnessTransferFrom: transfer('TokenPermissions', true),
        TokenPermissions: perms,
        Order: [{ name: 'id', type: 'uint256' }],
      },
      'PermitWitnessTransferFrom',
      'permit2_transfer',
    ],
    ['TransferWithAuthorization', { TransferWithAuthorization: auth }, 'TransferWithAuthorization', 'eip3009_transfer'],
    ['ReceiveWithAuthorization', { ReceiveWithAuthorization: auth }, 'ReceiveWithAuthorization', 'eip3009_receive'],
    ['an authorization under another name', { Pay: auth }, 'Pay', null],
    ['Mail', { Mail: [{ name: 'contents', type: 'string' }] }, 'Mail', null],
    ['a Permit named Permit with other fields', { Permit: [{ name: 'owner', type: 'address' }] }, 'Permit', null],
  ];
  for (const [name, types, primaryType, kind] of rows) t.equal(kindOf({ types, primaryType }), kind, name);
});

const topic = (a: string) => zeroPadValue(a, 32).toLowerCase();
const word = (n: bigint) => AbiCoder.defaultAbiCoder().encode(['uint256'], [n]);

t.test('logs into asset and approval changes', async (t) => {
  const logs = [
    { address: TOKEN, topics: [TOPICS.transfer, topic(ME), topic(SPENDER)], data: word(5n) },
    { address: TOKEN, topics: [TOPICS.transfer, topic(ME), topic(SPENDER)], data: word(7n) },
    { address: TOKEN, topics: [TOPICS.transfer, topic(SPENDER), topic(ME)], data: word(1n) },
    { address: TOKEN, topics: [TOPICS.transfer, topic(SPENDER), topic(TOKEN)], data: word(9n) },
    { address: TOKEN, topics: [TOPICS.transfer, topic(ME), topic(ME)], data: word(9n) },
    { address: TOKEN, topics: [TOPICS.wethDeposit, topic(ME)], data: word(3n) },
    { address: TOKEN, topics: [TOPICS.approval, topic(ME), topic(SPENDER)], data: word(MaxUint256) },
    { address: TOKEN, topics: [TOPICS.approval, topic(ME), topic(SPENDER)], data: word(10n) },
    { address: TOKEN, topics: [TOPICS.approval, topic(SPENDER), topic(ME)], data: word(MaxUint256) },
    {
      address: PERMIT2,
      topics: [TOPICS.permit2Approval, topic(ME), topic(TOKEN), topic(SPENDER)],
      data: word(1n << 96n) + word(5n).slice(2),
    },
    {
      address: TOKEN,
      topics: [TOPICS.permit2Approval, topic(ME), topic(TOKEN), topic(SPENDER)],
      data: word(1n) + word(5n).slice(2),
    },
  ];
  t.same(
    assetChanges(ME, logs, [{ from: ME, to: SPENDER, value: 2n }]).map((c) => [
      c.asset,
      c.direction,
      c.counterparty,
      c.amount,
    ]),
    [
      ['native', 'out', SPENDER, '2'],
      [TOKEN, 'out', SPENDER, '12'],
      [TOKEN, 'in', SPENDER, '1'],
      [TOKEN, 'in', TOKEN, '3'],
    ],
    'summed per counterparty and direction; others and self-transfers left out; a wrap is an inflow',
  );
  t.same(
    approvalChanges(ME, logs),
    [
      { token: TOKEN, spender: SPENDER, amount: '10', unlimited: false, kind: 'erc20' },
      { token: TOKEN, spender: SPENDER, amount: String(1n << 96n), unlimited: true, kind: 'permit2', expiration: 5 },
    ],
    'the last approval per spender wins; Permit2 events only from Permit2',
  );
});

t.test('the call trace: reverted frames drop their effects, logs keep their order', async (t) => {
  const trace = {
    type: 'CALL',
    from: ME,
    to: TOKEN,
    value: '0x1',
    calls: [
      {
        type: 'CALL',
        from: TOKEN,
        to: SPENDER,
        value: '0x5',
        error: 'execution reverted',
        logs: [{ address: SPENDER, topics: [TOPICS.transfer], data: '0x' }],
      },
      { type: 'DELEGATECALL', from: TOKEN, to: SPENDER, value: '0x9' },
      {
        type: 'CALL',
        from: TOKEN,
        to: ME,
        value: '0x3',
        logs: [{ address: TOKEN, topics: ['0x02'], data: '0x', position: '0x0' }],
      },
    ],
    logs: [
      { address: TOKEN, topics: ['0x01'], data: '0x', position: '0x0' },
      { address: TOKEN, topics: ['0x03'], data: '0x', position: '0x3' },
    ],
  };
  const r = parseCallTrace(trace);
  if (!r.ok) throw new Error(r.message);
  t.same(
    r.sim.nativeTransfers.map((n) => [n.from, n.to, n.value]),
    [
      [ME, TOKEN, 1n],
      [TOKEN, ME, 3n],
    ],
  );
  t.same(
    r.sim.logs.map((l) => l.topics[0]),
    ['0x01', '0x02', '0x03'],
  );
});

t.test('small readers', async (t) => {
  t.equal(decodeRevert(`0x4e487b71${word(0x11n).slice(2)}`), 'Panic(0x11): arithmetic overflow or underflow');
  t.equal(decodeRevert('0xdeadbeef'), 'custom error 0xdeadbeef');
  t.equal(decodeRevert('0x08c379a0zz'), null, 'not hex');
  t.ok(methodUnsupported({ code: -32601, message: 'x' }));
  t.ok(methodUnsupported({ code: -32000, message: 'eth_simulateV1 is not supported' }));
  t.notOk(methodUnsupported({ code: -32000, message: 'execution reverted' }));
  t.equal(fmtUnits('1500000', 6), '1.5');
  t.equal(fmtUnits('10000000000', 6), '10,000');
  t.equal(fmtUnits('7', 0), '7');
  t.equal(usdValue('100000000', 6, 1), 100);
  t.equal(usdValue('1', 6, null), null, 'an unknown price is null, never 0');
  t.equal(usdValue('1', undefined, 1), null, 'unknown decimals too');
  t.equal(decodeSymbol(`0x${Buffer.from('MKR').toString('hex').padEnd(64, '0')}`), 'MKR', 'bytes32 symbols');
  t.equal(decodeSymbol(AbiCoder.defaultAbiCoder().encode(['string'], ['USDC'])), 'USDC');
});
