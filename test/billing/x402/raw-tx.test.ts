/**
 * The settler's transaction encoder (src/billing/x402/raw-tx.ts) against two independent ones:
 * ethers' Transaction and viem's serializeTransaction, over random EIP-1559 and legacy
 * transactions, with the signature from the service's signer recovering to the settler's address.
 */
import { randomBytes, randomInt } from 'node:crypto';
import t from 'tap';
import { Transaction, Wallet, getBytes } from 'ethers';
import { keccak256 as viemKeccak, parseTransaction, recoverTransactionAddress, serializeTransaction } from 'viem';
import { type RawTxFields, signedRawTx, signingHash } from '../../../src/billing/x402/raw-tx.js';
import { signDigestBytes, useJsCurve } from '../../../src/billing/x402/secp.js';

const hex = (n: number): `0x${string}` => `0x${randomBytes(n).toString('hex')}`;
/** A random unsigned integer of up to `bytes` bytes, often small, sometimes zero. */
function uint(bytes: number): bigint {
  const k = randomInt(0, 4);
  if (k === 0) return 0n;
  if (k === 1) return BigInt(randomInt(1, 256));
  return BigInt(`0x${randomBytes(randomInt(1, bytes + 1)).toString('hex')}`);
}

function randomTx(typed: boolean): RawTxFields {
  const dataLen = [0, 1, 40, 55, 56, 292, 1000][randomInt(0, 7)];
  // A one-byte payload below 0x80 encodes as itself: make that case come up.
  const data = dataLen === 1 ? `0x0${randomInt(0, 8)}` : hex(dataLen);
  return {
    // viem takes a chain id that fits a JavaScript number.
    chainId: [1n, 8453n, 84532n, BigInt(randomInt(1, 2 ** 40))][randomInt(0, 4)],
    nonce: [0, 1, 127, 128, 255, 256, randomInt(0, 2 ** 40)][randomInt(0, 7)],
    gasLimit: uint(4),
    to: hex(20),
    value: uint(32),
    data,
    fees: typed ? eip1559Fees() : { gasPrice: uint(16) },
  };
}

/** A tip no higher than the max fee, as every encoder requires. */
function eip1559Fees(): { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } {
  const tip = uint(16);
  return { maxFeePerGas: tip + uint(16), maxPriorityFeePerGas: tip };
}

function ethersTx(tx: RawTxFields): Transaction {
  const common = {
    chainId: tx.chainId,
    nonce: tx.nonce,
    gasLimit: tx.gasLimit,
    to: tx.to,
    value: tx.value,
    data: tx.data,
  };
  return Transaction.from(
    'maxFeePerGas' in tx.fees ? { ...common, type: 2, ...tx.fees } : { ...common, type: 0, ...tx.fees },
  );
}

function viemTx(tx: RawTxFields) {
  const common = {
    chainId: Number(tx.chainId),
    nonce: tx.nonce,
    gas: tx.gasLimit,
    to: tx.to as `0x${string}`,
    value: tx.value,
    data: tx.data as `0x${string}`,
  };
  return 'maxFeePerGas' in tx.fees
    ? { ...common, type: 'eip1559' as const, accessList: [], ...tx.fees }
    : { ...common, type: 'legacy' as const, gasPrice: tx.fees.gasPrice };
}

t.test('encodings and hashes match ethers and viem over random transactions', async (t) => {
  const wallet = Wallet.createRandom();
  const key = getBytes(wallet.privateKey);
  let leadingZero = 0;
  let n = 0;
  for (let i = 0; i < 1500; i++) {
    const tx = randomTx(i % 2 === 0);
    const hash = signingHash(tx);
    const e = ethersTx(tx);
    if (hash.toString('hex') !== e.unsignedHash.slice(2)) {
      t.fail('signing hash differs from ethers', { tx: String(i) });
      continue;
    }
    const v = viemTx(tx);
    if (viemKeccak(serializeTransaction(v)) !== `0x${hash.toString('hex')}`) {
      t.fail('signing hash differs from viem', { tx: String(i) });
      continue;
    }
    const sig = signDigestBytes(hash, key);
    if (sig.r[0] === 0 || sig.s[0] === 0) leadingZero++;
    const raw = signedRawTx(tx, sig);
    e.signature = {
      r: `0x${Buffer.from(sig.r).toString('hex')}`,
      s: `0x${Buffer.from(sig.s).toString('hex')}`,
      v: 27 + sig.yParity,
    };
    if (raw !== e.serialized) {
      t.fail('signed encoding differs from ethers', { tx: String(i) });
      continue;
    }
    const viemRaw = serializeTransaction(v, {
      r: `0x${Buffer.from(sig.r).toString('hex')}`,
      s: `0x${Buffer.from(sig.s).toString('hex')}`,
      yParity: sig.yParity,
      ...('maxFeePerGas' in tx.fees ? {} : { v: BigInt(27 + sig.yParity) }),
    });
    if (raw !== viemRaw) {
      t.fail('signed encoding differs from viem', { tx: String(i), raw, viemRaw });
      continue;
    }
    if (viemKeccak(raw as `0x${string}`) !== e.hash || Transaction.from(raw).from !== wallet.address) {
      t.fail('hash or sender differs', { tx: String(i) });
      continue;
    }
    n++;
  }
  t.equal(n, 1500, 'every transaction matched both');
  t.ok(leadingZero > 0, `signatures with a leading zero byte in r or s were among them (${leadingZero})`);
});

t.test("viem reads back what the settler sends, and recovers the settler's address", async (t) => {
  const wallet = Wallet.createRandom();
  const key = getBytes(wallet.privateKey);
  for (const typed of [true, false]) {
    const tx: RawTxFields = {
      chainId: 8453n,
      nonce: 7,
      gasLimit: 120_000n,
      to: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      value: 0n,
      data: hex(292),
      fees: typed ? { maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n } : { gasPrice: 1_500_000_000n },
    };
    const raw = signedRawTx(tx, signDigestBytes(signingHash(tx), key)) as `0x${string}`;
    const parsed = parseTransaction(raw);
    t.match(parsed, {
      type: typed ? 'eip1559' : 'legacy',
      chainId: 8453,
      nonce: 7,
      gas: 120_000n,
      to: tx.to.toLowerCase(),
      data: tx.data,
    });
    t.equal(await recoverTransactionAddress({ serializedTransaction: raw as never }), wallet.address);
  }
});

t.test("the same bytes on ethers' curve, where the native binding is missing", async (t) => {
  t.teardown(() => useJsCurve(false));
  const key = getBytes(Wallet.createRandom().privateKey);
  for (let i = 0; i < 20; i++) {
    const tx = randomTx(i % 2 === 0);
    const hash = signingHash(tx);
    useJsCurve(false);
    const native = signedRawTx(tx, signDigestBytes(hash, key));
    useJsCurve(true);
    t.equal(signedRawTx(tx, signDigestBytes(hash, key)), native, 'RFC 6979: the same signature both ways');
  }
});

t.test('fields that cannot be a transaction are refused', async (t) => {
  const tx = randomTx(true);
  t.throws(() => signingHash({ ...tx, to: '0x1234' }), /to must be 20 bytes/);
  t.throws(() => signingHash({ ...tx, data: '0xabc' }), /data must be 0x-prefixed hex bytes/);
  t.throws(() => signingHash({ ...tx, value: -1n }), /never negative/);
  t.throws(() => signingHash({ ...tx, nonce: 1.5 }), /safe integer/);
  t.throws(() => signedRawTx(tx, { r: new Uint8Array(31), s: new Uint8Array(32), yParity: 0 }), /32 bytes each/);
});
