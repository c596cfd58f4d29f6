/**
 * The service's keccak (hash-wasm's WebAssembly) and ethers' keccak once it is registered there
 * (src/crypto/ethers-keccak.ts) against viem's, an independent implementation, and the known digests of
 * Ethereum: every hash ethers makes in a thread that loaded the module goes through it.
 */
import { randomBytes } from 'node:crypto';
import { TypedDataEncoder, getAddress, id, keccak256 as ethersKeccak256 } from 'ethers';
import t from 'tap';
import { keccak256 as viemKeccak256 } from 'viem';
import '../../src/crypto/ethers-keccak.js';
import { keccak256, keccak256Into } from '../../src/crypto/keccak.js';
import { seeded } from '../helpers/seeded.js';

const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;

t.test('known digests', async (t) => {
  const empty = '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';
  t.equal(hex(keccak256(new Uint8Array(0))), empty, 'keccak256 of nothing');
  t.equal(ethersKeccak256(new Uint8Array(0)), empty, "ethers' keccak256 of nothing");
  t.equal(id('transfer(address,uint256)').slice(0, 10), '0xa9059cbb', "ethers' id gives ERC-20 transfer's selector");
  t.equal(
    getAddress('0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'),
    '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    'EIP-55: the checksum of its first example',
  );
  // EIP-712's example Mail: the digest the EIP gives.
  const digest = TypedDataEncoder.hash(
    {
      name: 'Ether Mail',
      version: '1',
      chainId: 1,
      verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC',
    },
    {
      Person: [
        { name: 'name', type: 'string' },
        { name: 'wallet', type: 'address' },
      ],
      Mail: [
        { name: 'from', type: 'Person' },
        { name: 'to', type: 'Person' },
        { name: 'contents', type: 'string' },
      ],
    },
    {
      from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' },
      to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' },
      contents: 'Hello, Bob!',
    },
  );
  t.equal(digest, '0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2', "EIP-712's example digest");
});

t.test('random inputs: the service, ethers and viem agree', async (t) => {
  const rand = seeded(256);
  let mismatches = 0;
  for (let i = 0; i < 2000; i++) {
    // Lengths around keccak's 136-byte rate, where padding changes shape.
    const data = new Uint8Array(randomBytes(rand(i < 300 ? 300 : 5000)));
    const want = viemKeccak256(data);
    const ours = hex(keccak256(data));
    const into = new Uint8Array(40);
    keccak256Into(data, into, 8);
    const theirs = ethersKeccak256(data);
    if ((ours !== want || theirs !== want || hex(into.subarray(8)) !== want) && mismatches++ < 3)
      t.fail(`length ${data.length}: ours ${ours}, ethers ${theirs}, viem ${want}`);
  }
  t.equal(mismatches, 0, '2,000 inputs of 0 to 5,000 bytes hashed alike');
});
