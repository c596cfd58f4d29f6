/**
 * The guard's share of the warm-up (docs/api-reference.md, "Health and readiness"). A fresh
 * process's first guard of each kind that reads the node paid 10 to 30 ms more than its next
 * ones: the request's typed-data rules, the plan, the order reader and EIP-712 hashing, the
 * screen, the answer's shape on the event loop, and the simulation's, delegation's and order's
 * checks on the check threads. Before the service says it is ready:
 * - each check thread runs the checks these guards plan (`guardWarmChecks`, handed to the pool),
 *   against the stand-in node of src/engine/warm-up.ts;
 * - this thread validates each guard body and judges it whole (`warmGuards`): plan, checks on an
 *   engine of its own run inline against the same stand-in, the screen against the service's own
 *   lists, and the answer. It is a dry run with no key: nothing is reserved, logged, learned or
 *   counted, and no request leaves the machine.
 */
import type { Config } from '../config.js';
import { createEngine } from '../engine/runner.js';
import { UNCOUNTED, WARM_ROUNDS, WARM_TIMEOUT_MS, withStandIn } from '../engine/warm-up.js';
import { createExecutor } from '../engine/worker-pool.js';
import type { GuardRequest } from '../generated/types.js';
import type { ApiResponse } from '../http/api.js';
import { bodyProblems } from '../http/validation.js';
import { pino } from 'pino';
import type { Screening } from '../screening/service.js';
import type { ScreeningView } from '../screening/view.js';
import { COW_ORDER, ORDER_VENUES } from '../scan/orders.js';
import { judgeGuard } from './handler.js';
import { planGuard } from './plan.js';

// Addresses no real account, token or delegate has: the threads keep what they learn of a token
// (its price, decimals and symbol) by its address, and the stand-in's answers must not stand in
// for a real one's.
const SENDER = `0x${'00'.repeat(18)}a11c`;
const TOKEN = `0x${'00'.repeat(18)}70c1`;
const BUY_TOKEN = `0x${'00'.repeat(18)}70c2`;
const DELEGATE = `0x${'00'.repeat(18)}de1e`;

/** A guard of each kind that reads the node: a token transfer's simulation, an authorization, a signed order. */
export function warmGuardBodies(nowS: number): GuardRequest[] {
  const word = (hex: string): string => hex.replace(/^0x/, '').padStart(64, '0');
  // The CoW Protocol venue and order type the order scan knows (src/scan/orders.ts).
  const cow = ORDER_VENUES.find((v) => v.protocol === 'cow');
  const order = {
    action: 'contract_call',
    chain: 'base',
    signer: SENDER,
    typed_data: {
      domain: { name: cow?.name, version: cow?.version, chainId: 8453, verifyingContract: cow?.address },
      types: { Order: Object.entries(COW_ORDER).map(([name, type]) => ({ name, type })) },
      primaryType: 'Order',
      message: {
        sellToken: TOKEN,
        buyToken: BUY_TOKEN,
        receiver: `0x${'00'.repeat(20)}`,
        sellAmount: '100000000',
        buyAmount: '100000000',
        // A week: inside the 30 days after which an order counts as long-lived, and long enough
        // that a check thread replacing one that died days later still warms the passing path.
        validTo: nowS + 7 * 86_400,
        appData: `0x${'00'.repeat(32)}`,
        feeAmount: '0',
        kind: 'sell',
        partiallyFillable: false,
        sellTokenBalance: 'erc20',
        buyTokenBalance: 'erc20',
      },
    },
  };
  return [
    {
      action: 'contract_call',
      chain: 'base',
      amount_usd: 100,
      transaction: { from: SENDER, to: TOKEN, data: `0xa9059cbb${word('b0b0')}${word((100e6).toString(16))}` },
    },
    {
      action: 'contract_call',
      chain: 'base',
      authorization: { authority: SENDER, address: DELEGATE, chain_id: 8453, nonce: 0 },
      known_safe_addresses: [DELEGATE],
    },
    order,
  ] as unknown as GuardRequest[];
}

/** The checks those guards plan for the check threads (the screen runs on this thread). */
export function guardWarmChecks(config: Readonly<Config>): Array<Record<string, unknown>> {
  return warmGuardBodies(Math.floor(Date.now() / 1000)).flatMap((body) =>
    planGuard(body, config)
      .planned.filter((p) => p.entry !== 'counterparty_screen')
      .map((p) => p.check as unknown as Record<string, unknown>),
  );
}

/** The warm-up's guards log nothing. */
const QUIET = pino({ level: 'silent' });

/**
 * WARM_ROUNDS rounds of the warm guards, validated and judged whole on this thread against the
 * stand-in; returns what did not pass (a body its rules refuse, an answer other than proceed).
 */
export async function warmGuards(
  config: Readonly<Config>,
  screening: (ScreeningView & Pick<Screening, 'learn'>) | null,
): Promise<string[]> {
  const problems: string[] = [];
  await withStandIn(config, async (local) => {
    const engine = createEngine({
      config: local,
      metrics: UNCOUNTED,
      executor: createExecutor({ ...local, poolThreads: 0 }),
    });
    try {
      for (let round = 0; round < WARM_ROUNDS; round++)
        for (const body of warmGuardBodies(Math.floor(Date.now() / 1000))) {
          const kind = body.transaction ? 'simulation' : body.authorization ? 'delegation' : 'order';
          for (const p of bodyProblems('GuardRequest', body)) problems.push(`${kind} ${p.loc.join('.')}: ${p.msg}`);
          const res = { locals: {} } as unknown as ApiResponse;
          const run = { body, requestId: 'warm-up', deadlineMs: WARM_TIMEOUT_MS, started: performance.now() };
          const deps = { config: local, engine, logger: QUIET, screening };
          const answer = JSON.parse(JSON.stringify(await judgeGuard(deps, res, run, null, true)));
          if (round === WARM_ROUNDS - 1 && answer.verdict !== 'proceed')
            problems.push(`the warm-up ${kind} guard answered ${answer.verdict}: ${answer.reasoning}`);
        }
    } finally {
      await engine.close();
    }
  });
  return problems;
}
