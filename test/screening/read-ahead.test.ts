/**
 * The screen's recipient reads start with the guard's checks (src/guard/screen.ts,
 * readRecipientsAhead): on a real anvil (chain id 8453, Circle's USDC), behind a loopback relay
 * that holds every simulation until the node has been asked for the recipient's code. A guard that
 * read the code only after the simulation would wait out the hold and miss its deadline; one that
 * reads it beside the simulation proceeds. A read that fails is still the screen's error.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Interface, parseEther, type Wallet } from 'ethers';
import t from 'tap';
import { calldataRecipient } from '../../src/guard/screen.js';
import { forgetSweeps } from '../../src/checks/counterparty_screen.js';
import { startCoinGecko, type CoinGeckoEmulator } from '../emulators/coingecko.js';
import { post, startTestApp, type TestApp } from '../helpers/app.js';
import { startUsdcChain, type UsdcChain } from '../helpers/usdc.js';

const erc20 = new Interface([
  'function transfer(address to, uint256 amount) returns (bool)',
  'function transferFrom(address from, address to, uint256 amount) returns (bool)',
]);
/** How long the relay holds a simulation waiting for the recipient's code read. */
const HOLD_MS = 4000;

interface Call {
  method: string;
  params: unknown[];
}

/**
 * A JSON-RPC relay to the node: a request holding a simulation is forwarded once a code read of
 * `awaited` has come in (or after HOLD_MS); code reads of `failing` answer a JSON-RPC error.
 */
class Relay {
  awaited: string | null = null;
  failing: string | null = null;
  /** Per held simulation: whether the code read came while it was held. */
  held: boolean[] = [];
  private codeSeen = new Set<string>();
  private waiters: Array<() => void> = [];
  private server!: http.Server;
  url = '';

  constructor(private readonly target: string) {}

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => void this.handle(body, res));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(body: string, res: http.ServerResponse): Promise<void> {
    const parsed = JSON.parse(body) as Call | Call[];
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    for (const c of calls)
      if (c.method === 'eth_getCode') {
        const a = String(c.params[0]).toLowerCase();
        this.codeSeen.add(a);
        if (a === this.failing) {
          const id = (c as Call & { id?: unknown }).id ?? null;
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message: 'header not found' } }));
          return;
        }
        for (const w of this.waiters.splice(0)) w();
      }
    if (calls.some((c) => c.method === 'eth_simulateV1' || c.method === 'debug_traceCall') && this.awaited) {
      const want = this.awaited;
      const came = await new Promise<boolean>((resolve) => {
        if (this.codeSeen.has(want)) return resolve(true);
        const timer = setTimeout(() => resolve(false), HOLD_MS);
        const check = () => {
          if (this.codeSeen.has(want)) {
            clearTimeout(timer);
            resolve(true);
          } else this.waiters.push(check);
        };
        this.waiters.push(check);
      });
      this.held.push(came);
    }
    const up = await fetch(this.target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    res.setHeader('content-type', 'application/json');
    res.end(await up.text());
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

let chain: UsdcChain;
let cg: CoinGeckoEmulator;
let relay: Relay;
let app: TestApp;
let alice: Wallet;
let usdc: string;
let key: string;

t.before(async () => {
  [chain, cg] = await Promise.all([startUsdcChain(), startCoinGecko()]);
  usdc = (await chain.usdc.getAddress()).toLowerCase();
  cg.setPrice('usd-coin', 'usd', 1).setPrice('ethereum', 'usd', 3000).setTokenPrice('base', usdc, 1);
  alice = await chain.wallet(1_000_000_000n, parseEther('10'));
  relay = new Relay(chain.rpcUrl);
  await relay.start();
  app = await startTestApp({
    BILLING: 'on',
    PRICE_API_URL: cg.url,
    RPC_URLS: `base=${relay.url}`,
    REQUEST_DEADLINE_MS: '2500',
  });
  key = (await post(`${app.url}/v1/api-keys/signup`, { email: 'ahead@example.com' })).body.api_key;
});
t.teardown(async () => {
  await app?.close();
  await relay?.close();
  await Promise.all([chain?.close(), cg?.close()]);
});

type Item = { name: string; status: string; reason: string | null; observed: any };
const guard = async (to: string, strict = false) => {
  const res = await post(
    `${app.url}/v1/guard`,
    {
      action: 'transfer',
      chain: 'base',
      amount_usd: 25,
      strict_mode: strict,
      transaction: {
        from: alice.address,
        to: usdc,
        value: '0',
        data: erc20.encodeFunctionData('transfer', [to, 25n * 10n ** 6n]),
      },
    },
    { 'x-api-key': key },
  );
  t.equal(res.status, 200);
  const b = res.body as { verdict: string; evidence: Item[] };
  return {
    verdict: b.verdict,
    evidence: b.evidence,
    screen: b.evidence.find((x) => x.name === 'counterparty_screen')!,
  };
};

t.test("a fresh recipient's code is read beside the simulation, not after it", async (t) => {
  forgetSweeps();
  const fresh = '0x00000000000000000000000000000000000b0b01';
  relay.awaited = fresh;
  relay.held = [];
  const r = await guard(fresh);
  t.same(relay.held, [true], "the simulation was held until the recipient's code was asked for");
  t.equal(r.verdict, 'proceed', 'within the deadline');
  t.equal(r.screen.status, 'pass');
  const a = r.screen.observed.addresses.find((x: any) => x.address === fresh);
  t.same(a.roles, ['recipient'], 'the simulation still names the recipient');
  t.equal(a.delegate, null, 'its code was read: no delegate');
});

t.test('a recipient whose code read fails: the screen is an error and a strict answer waits', async (t) => {
  forgetSweeps();
  const broken = '0x00000000000000000000000000000000000b0b02';
  relay.awaited = null;
  relay.failing = broken;
  const r = await guard(broken, true);
  relay.failing = null;
  t.equal(r.verdict, 'wait', 'strict mode waits on a screen that could not read the recipient (docs/screening.md §4)');
  t.equal(r.screen.status, 'error');
  t.match(
    r.screen.observed.addresses.find((x: any) => x.address === broken),
    { status: 'error' },
  );
});

t.test("calldataRecipient reads an ERC-20 transfer's and transferFrom's `to`, and nothing else", async (t) => {
  const to = '0x00000000000000000000000000000000000b0b03';
  t.equal(calldataRecipient(erc20.encodeFunctionData('transfer', [to, 1n])), to);
  t.equal(calldataRecipient(erc20.encodeFunctionData('transferFrom', [alice.address, to, 1n])), to);
  t.equal(calldataRecipient(erc20.encodeFunctionData('transfer', [to, 1n]).toUpperCase().replace('0X', '0x')), to);
  const approve = new Interface(['function approve(address, uint256)']).encodeFunctionData('approve', [to, 1n]);
  t.equal(calldataRecipient(approve), null, 'another selector');
  t.equal(calldataRecipient(`0xa9059cbb${'ff'.repeat(12)}${to.slice(2)}${'00'.repeat(32)}`), null, 'dirty padding');
  t.equal(calldataRecipient('0xa9059cbb1234'), null, 'too short');
  t.equal(calldataRecipient(undefined), null);
  t.equal(calldataRecipient('0x'), null);
});
