/**
 * An x402 facilitator on loopback for X402_SETTLEMENT=facilitator tests: the official
 * @x402/core facilitator with the official exact EVM scheme, settling on the local USDC chain.
 * Only the HTTP framing (POST /verify, POST /settle) is written here.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWalletClient, defineChain, http as viemHttp, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { registerExactEvmScheme } from '@x402/evm/exact/facilitator';
import type { UsdcChain } from '../../helpers/usdc.js';

export interface Facilitator {
  url: string;
  calls: Array<{ path: string; body: any; answer: any }>;
  /** When set, every call answers 502 with a body that is not JSON. */
  down: boolean;
  /** Holds /settle calls until the returned function is called. */
  holdSettle(): () => void;
  close(): Promise<void>;
}

export async function startFacilitator(chain: UsdcChain): Promise<Facilitator> {
  const key = (await chain.wallet(0n, 10n ** 20n)).privateKey as `0x${string}`;
  const account = privateKeyToAccount(key);
  const base = defineChain({
    id: 8453,
    name: 'Base',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  const client = createWalletClient({ account, chain: base, transport: viemHttp(chain.rpcUrl) }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({ ...client, address: account.address } as never);
  const facilitator = registerExactEvmScheme(new x402Facilitator(), { signer, networks: 'eip155:8453' });

  let gate: Promise<void> = Promise.resolve();
  const state: Facilitator = {
    url: '',
    calls: [],
    down: false,
    close: async () => undefined,
    holdSettle() {
      let release: () => void = () => {};
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      return release;
    },
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      if (state.down) {
        res.writeHead(502).end('bad gateway');
        return;
      }
      const body = JSON.parse(raw);
      const path = req.url ?? '';
      let answer: unknown;
      if (path === '/verify') answer = await facilitator.verify(body.paymentPayload, body.paymentRequirements);
      else if (path === '/settle') {
        await gate;
        answer = await facilitator.settle(body.paymentPayload, body.paymentRequirements);
      } else {
        res.writeHead(404).end();
        return;
      }
      state.calls.push({ path, body, answer });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(answer, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}
