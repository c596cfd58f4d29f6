/**
 * The typed data a guard accepts is typed data ethers can hash: the request's last check keeps what
 * ethers made of a domain and of a set of types between requests. Over random messages drawn from
 * a few domains and type sets (some of which ethers refuses: cyclic or unused types, unknown domain
 * keys, addresses whose checksum is wrong), the check must refuse exactly what ethers' own
 * TypedDataEncoder.hash refuses, with its message, however often a domain or a type set comes back.
 */
import { TypedDataEncoder, type TypedDataDomain } from 'ethers';
import t from 'tap';
import { guardRequestProblems, type TypedDataInput } from '../../src/scan/typed-data-shape.js';
import { seeded } from '../helpers/seeded.js';

type Field = { name: string; type: string };

const CHECKSUMMED = '0x9008D19f58AAbD9eD0D60971565AA8510560ab41';
const LOWER = CHECKSUMMED.toLowerCase();
/** The checksummed address with one letter's case flipped: ethers refuses its checksum. */
const BAD_CHECKSUM = '0x9008d19f58AAbD9eD0D60971565AA8510560ab41';
const ADDRESSES = [CHECKSUMMED, LOWER, BAD_CHECKSUM, '0x0000000000000000000000000000000000000000'];

const DOMAINS: Array<Record<string, unknown>> = [
  { name: 'Gnosis Protocol', version: 'v2', chainId: 8453, verifyingContract: CHECKSUMMED },
  { name: 'USD Coin', version: '2', chainId: '8453', verifyingContract: LOWER },
  { name: 'Bad', chainId: 1, verifyingContract: BAD_CHECKSUM },
  { name: 'Salted', salt: `0x${'ab'.repeat(32)}` },
  { name: 'Unknown key', chainId: 1, color: 'red' },
  {},
];

const TYPE_SETS: Array<Record<string, Field[]>> = [
  {
    Order: [
      { name: 'sellToken', type: 'address' },
      { name: 'sellAmount', type: 'uint256' },
      { name: 'validTo', type: 'uint32' },
      { name: 'appData', type: 'bytes32' },
      { name: 'kind', type: 'string' },
      { name: 'partiallyFillable', type: 'bool' },
    ],
  },
  {
    Mail: [
      { name: 'from', type: 'Person' },
      { name: 'to', type: 'Person[]' },
      { name: 'contents', type: 'string' },
    ],
    Person: [
      { name: 'name', type: 'string' },
      { name: 'wallets', type: 'address[2]' },
    ],
  },
  // Two structs, neither named by the other: ethers finds no single primary type.
  { A: [{ name: 'x', type: 'uint8' }], B: [{ name: 'y', type: 'bool' }] },
  // A struct that contains itself through a list.
  { Node: [{ name: 'next', type: 'Node[]' }] },
  {
    EIP712Domain: [{ name: 'name', type: 'string' }],
    Vote: [
      { name: 'voter', type: 'address' },
      { name: 'weights', type: 'int16[]' },
      { name: 'data', type: 'bytes' },
    ],
  },
];

function randomValue(
  type: string,
  types: Record<string, Field[]>,
  rand: (n: number) => number,
  depth: number,
): unknown {
  const array = /^(.+)\[([0-9]*)\]$/.exec(type);
  if (array) {
    const n = array[2] === '' ? rand(3) : Number(array[2]);
    return Array.from({ length: depth > 2 ? 0 : n }, () => randomValue(array[1], types, rand, depth + 1));
  }
  if (Object.hasOwn(types, type)) {
    const out: Record<string, unknown> = {};
    for (const f of types[type]) out[f.name] = randomValue(f.type, types, rand, depth + 1);
    return out;
  }
  if (type === 'address') return ADDRESSES[rand(ADDRESSES.length)];
  if (type === 'bool') return rand(2) === 0;
  if (type === 'string') return ['sell', 'buy', 'erc20', ''][rand(4)];
  if (type === 'bytes') return ['0x', '0x00ff', `0x${'12'.repeat(40)}`][rand(3)];
  if (type === 'bytes32') return `0x${'00'.repeat(31)}${rand(256).toString(16).padStart(2, '0')}`;
  if (type.startsWith('int')) return [-3, '0x10', '-0x7fff', 12][rand(4)];
  return [0, '100000000', '0xff', 4294967295][rand(4)];
}

/** ethers' own answer for the same typed data: null, or its message as the check reports it. */
function ethersError(td: TypedDataInput): string | null {
  try {
    const types = { ...td.types };
    delete types.EIP712Domain;
    TypedDataEncoder.hash(td.domain as TypedDataDomain, types, td.message);
    return null;
  } catch (err) {
    return (err as Error).message.split(' (')[0];
  }
}

function hashDetail(td: TypedDataInput): { asked: boolean; error: string | null } {
  const problems = guardRequestProblems({ typed_data: td });
  const hash = problems.find((p) => p.msg.startsWith('Typed data cannot be hashed: '));
  // Only typed data that passes the shape's own rules reaches ethers.
  if (hash === undefined && problems.length > 0) return { asked: false, error: null };
  return { asked: true, error: hash === undefined ? null : hash.msg.slice('Typed data cannot be hashed: '.length) };
}

t.test('the kept domains and encoders refuse exactly what ethers refuses, with its message', async (t) => {
  const rand = seeded(712);
  let compared = 0;
  let refused = 0;
  const reasons = new Set<string>();
  let mismatches = 0;
  for (let i = 0; i < 3000; i++) {
    const types = TYPE_SETS[rand(TYPE_SETS.length)];
    const names = Object.keys(types).filter((n) => n !== 'EIP712Domain');
    const primaryType = names[0];
    const td: TypedDataInput = {
      domain: DOMAINS[rand(DOMAINS.length)],
      types,
      primaryType,
      message: randomValue(primaryType, types, rand, 0) as Record<string, unknown>,
    };
    const got = hashDetail(td);
    if (!got.asked) continue;
    compared++;
    const want = ethersError(td);
    if (want !== null) {
      refused++;
      reasons.add(want.replace(/".*$/, ''));
    }
    if (got.error !== want && mismatches++ < 5) t.equal(got.error, want, `case ${i}: ${JSON.stringify(td)}`);
  }
  t.equal(mismatches, 0, `${compared} typed messages compared with ethers, ${refused} refused by both`);
  t.ok(compared > 1500, `most cases reach the hash check (${compared})`);
  t.ok(refused > 200 && compared - refused > 200, `both answers are common (${refused} refused)`);
  t.ok(reasons.size >= 4, `several of ethers' reasons met: ${[...reasons].join(' | ')}`);
});
