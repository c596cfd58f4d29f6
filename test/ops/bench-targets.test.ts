/** The bench's pass/fail rules (bench/targets.ts), table-driven over made-up measurements. */
import t from 'tap';
import {
  checkFirstAnswers,
  checkSigning,
  checkTargets,
  percentile,
  signingCpuUs,
  signingRatios,
  throughputRatio,
  type FirstAnswersFigures,
  type Measured,
} from '../../bench/targets.js';
import { medianRun, type Row } from '../../bench/session.js';
import { cpuSeconds } from '../../bench/child.js';
import { Worker } from 'node:worker_threads';

const m = (name: string, rps: number, p50: number, p99: number, errors = 0): Measured => ({
  name,
  requests: rps * 10,
  rps,
  p50,
  p99,
  errors,
});

function healthy(): Map<string, Measured | null> {
  return new Map([
    ['reference', m('reference', 4000, 10, 40)],
    ['floor', m('floor', 6000, 2, 8)],
    ['decide-cached', m('decide-cached', 3400, 12, 50)],
    ['decide-cached-unsigned', m('decide-cached-unsigned', 3400, 6, 20)],
    ['decide-cold', m('decide-cold', 150, 58, 90)],
    ['decide-keyed', m('decide-keyed', 100, 4, 12)],
    ['decide-paid', m('decide-paid', 100, 8, 25)],
    ['decide-keyed-pg', m('decide-keyed-pg', 50, 4, 11)],
    ['decide-paid-pg', m('decide-paid-pg', 50, 17, 30)],
    ['decide-paid-capacity', m('decide-paid-capacity', 199, 27, 64)],
    ['guard-simulation', m('guard-simulation', 50, 110, 130)],
    ['invalid-body', m('invalid-body', 5000, 8, 30)],
    ['mcp-foreign-origin', m('mcp-foreign-origin', 5200, 8, 30)],
    ['guard-order', m('guard-order', 50, 60, 80)],
  ]);
}

const missed = (v: ReturnType<typeof checkTargets>): string[] => v.filter((x) => !x.ok).map((x) => x.target);

t.test('a healthy run meets every target', async (t) => {
  t.same(missed(checkTargets(healthy(), 50)), []);
});

const cases: Array<{ name: string; change: (r: Map<string, Measured | null>) => void; miss: RegExp }> = [
  {
    name: 'p99 at 300 ms is a miss',
    change: (r) => r.set('decide-cached', m('decide-cached', 3400, 12, 300)),
    miss: /^decide-cached p99 < 300/,
  },
  {
    name: 'errors are a miss',
    change: (r) => r.set('decide-cold', m('decide-cold', 150, 58, 90, 3)),
    miss: /^decide-cold without errors/,
  },
  {
    name: 'cached below 0.8 x reference',
    change: (r) => r.set('decide-cached', m('decide-cached', 3100, 12, 50)),
    miss: /^decide-cached >= 0\.8 x reference/,
  },
  {
    name: 'cached, signing off, below 0.5 x the node:http floor',
    change: (r) => r.set('floor', m('floor', 6900, 2, 8)),
    miss: /^decide-cached-unsigned >= 0\.5 x floor/,
  },
  {
    name: 'cold p50 beyond upstream + 15 ms',
    change: (r) => r.set('decide-cold', m('decide-cold', 150, 66, 90)),
    miss: /^decide-cold p50 <= upstream 50 \+ 15/,
  },
  {
    name: 'paid p99 beyond keyed + 20 ms',
    change: (r) => r.set('decide-paid', m('decide-paid', 100, 8, 33)),
    miss: /^decide-paid p99 <= decide-keyed p99 \+ 20/,
  },
  {
    name: 'paid p99 on PostgreSQL beyond keyed on PostgreSQL + 20 ms',
    change: (r) => r.set('decide-paid-pg', m('decide-paid-pg', 50, 17, 32)),
    miss: /^decide-paid-pg p99 <= decide-keyed-pg p99 \+ 20/,
  },
  {
    name: 'paid calls carried below 0.95 x the 200 offered',
    change: (r) => r.set('decide-paid-capacity', m('decide-paid-capacity', 181, 32, 58)),
    miss: /^decide-paid-capacity >= 0\.95 x 200/,
  },
  {
    name: 'simulation p50 beyond node + price + 15 ms',
    change: (r) => r.set('guard-simulation', m('guard-simulation', 50, 116, 130)),
    miss: /^guard-simulation p50 <= node \+ price 100 \+ 15/,
  },
  {
    name: 'the /mcp Origin refusal below 0.9 x the invalid body',
    change: (r) => r.set('mcp-foreign-origin', m('mcp-foreign-origin', 4400, 8, 30)),
    miss: /^mcp-foreign-origin >= 0\.9 x invalid-body/,
  },
  {
    name: 'order p50 beyond one upstream round + 15 ms',
    change: (r) => r.set('guard-order', m('guard-order', 50, 66, 80)),
    miss: /^guard-order p50 <= one upstream round 50 \+ 15/,
  },
  { name: 'a scenario that could not run', change: (r) => r.set('decide-paid', null), miss: /^decide-paid ran/ },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const r = healthy();
    c.change(r);
    const out = missed(checkTargets(r, 50));
    t.equal(out.length, 1, out.join('; '));
    t.match(out[0], c.miss);
  });
}

t.test('signing ratios: the signed cached decide against each yardstick that ran', async (t) => {
  const r = healthy();
  r.set('decide-cached-unsigned', m('decide-cached-unsigned', 6800, 6, 20));
  r.delete('floor');
  t.same(signingRatios(r), { reference: 0.85, 'decide-cached-unsigned': 0.5 });
  r.set('floor', m('floor', 17000, 2, 8));
  t.same(signingRatios(r), { reference: 0.85, floor: 0.2, 'decide-cached-unsigned': 0.5 });
  r.delete('decide-cached');
  t.same(signingRatios(r), {}, 'nothing without the signed scenario');
});

t.test('interleaved rounds: each scenario reports its median run, and notes them all', async (t) => {
  const row = (rps: number | null, note?: string): Row => ({
    name: 'floor',
    about: '',
    load: '',
    result:
      rps === null
        ? null
        : {
            requests: rps * 10,
            warmupRequests: 0,
            rps,
            p50: 1,
            p90: 2,
            p99: 3,
            max: 4,
            errors: 0,
            mismatches: 0,
            unexpectedStatus: {},
          },
    upstreamCalls: {},
    cpuMsPerRequest: 0.05,
    loopMsPerRequest: 0.03,
    ...(note ? { note } : {}),
  });
  const med = medianRun([row(30000), row(9000), row(20000)]);
  t.equal(med.result?.rps, 20000);
  t.equal(med.note, 'median of 3 rounds: 30000, 9000, 20000 req/s');
  t.equal(medianRun([row(null), row(5000), row(6000)]).result?.rps, 5000, 'a failed run counts as the slowest');
  t.equal(medianRun([row(7000, 'probe ok')]).note, 'probe ok; median of 1 rounds: 7000 req/s');
  t.same(med.rounds, [30000, 9000, 20000], 'every round kept, in order');
  t.same(medianRun([row(null), row(5000)]).rounds, [0, 5000], 'a failed round as 0');
});

t.test("a ratio of interleaved scenarios is the median of the rounds' own ratios", async (t) => {
  // The host slows down over the run: each round's pair is even, the medians of each are not.
  const floor = { ...m('floor', 30000, 1, 3), rounds: [40000, 20000, 30000] };
  const unsigned = { ...m('decide-cached-unsigned', 14000, 2, 5), rounds: [20400, 10200, 14000] };
  const r = throughputRatio(unsigned, floor);
  t.equal(r.ratio, 0.51);
  t.match(r.detail, /^0\.51, the median of the rounds' ratios 0\.51, 0\.51, 0\.47 \(medians 14000 vs 30000 req\/s\)$/);
  const run = healthy();
  run.set('floor', floor);
  run.set('decide-cached-unsigned', unsigned);
  t.notOk(
    missed(checkTargets(run, 50)).some((x) => x.startsWith('decide-cached-unsigned')),
    'met, as two rounds of three were',
  );
  run.set('decide-cached-unsigned', { ...unsigned, rounds: [20400, 9000, 14000] });
  t.ok(
    missed(checkTargets(run, 50)).some((x) => x.startsWith('decide-cached-unsigned >= 0.5 x floor')),
    'missed, as two rounds of three were',
  );
  t.equal(throughputRatio(m('a', 900, 1, 1), m('b', 1000, 1, 1)).ratio, 0.9, 'without rounds: the ratio of req/s');
  t.match(
    throughputRatio({ ...m('a', 900, 1, 1), loopMsPerRequest: 0.17 }, { ...m('b', 1000, 1, 1), loopMsPerRequest: 0.13 })
      .detail,
    /; event loop 0\.17 vs 0\.13 ms per answer$/,
    "each side's event-loop CPU per answer beside the ratio",
  );
  t.equal(
    throughputRatio({ ...m('a', 900, 1, 1), rounds: [900, 900] }, m('b', 1000, 1, 1)).ratio,
    0.9,
    'rounds on one side only: the ratio of req/s',
  );
});

t.test('cold capacity: 300 fresh decides a second held to p99 < 150 ms and p50 < upstream + 15 ms', async (t) => {
  const r = healthy();
  r.set('decide-cold-capacity', m('decide-cold-capacity', 300, 58, 120));
  t.same(missed(checkTargets(r, 50)), []);
  r.set('decide-cold-capacity', m('decide-cold-capacity', 300, 58, 150));
  t.same(missed(checkTargets(r, 50)), ['decide-cold-capacity p99 < 150 ms and p50 < upstream 50 + 15 ms']);
  r.set('decide-cold-capacity', m('decide-cold-capacity', 300, 65, 90));
  t.same(missed(checkTargets(r, 50)), ['decide-cold-capacity p99 < 150 ms and p50 < upstream 50 + 15 ms']);
});

t.test(
  'first answers: the first within upstream + 15 ms, the first 20 at p99 within + 25, bridge calls all within 200 ms, first guards within 15 ms of the next',
  async (t) => {
    const ok = {
      healthOkMs: 900,
      decideMs: [64, ...Array.from({ length: 19 }, () => 58)],
      bridgeMs: Array.from({ length: 200 }, (_, i): number => (i === 0 ? 199 : 130)),
      guardMs: [
        { kind: 'simulation', ms: [129, 112, 114, 300, 113, 116, 115, 111, 114, 118] },
        { kind: 'order', ms: [78, 62, 64, 63, 65, 61, 64, 66, 63, 62] },
      ],
      failures: 0,
      firstFailure: null,
    };
    const miss = (fa: FirstAnswersFigures) =>
      checkFirstAnswers(fa, 50, 120)
        .filter((c) => !c.ok)
        .map((c) => c.target.split(':')[1].trim().split(' ').slice(0, 3).join(' '));
    t.same(miss(ok), []);
    t.same(miss({ ...ok, decideMs: [66, ...ok.decideMs.slice(1)] }), ['the first cold']);
    t.same(miss({ ...ok, decideMs: [60, 76, ...ok.decideMs.slice(2)] }), ['the first 20']);
    t.same(
      miss({ ...ok, decideMs: [Number.NaN, ...ok.decideMs.slice(1)] }),
      ['the first cold', 'the first 20'],
      'a failed call ranks last',
    );
    t.same(
      miss({ ...ok, bridgeMs: [201, ...ok.bridgeMs.slice(1)] }),
      ['200 bridge-risk calls'],
      'the first call counts',
    );
    t.same(
      miss({ ...ok, guardMs: [ok.guardMs[0], { kind: 'order', ms: [79, ...ok.guardMs[1].ms.slice(1)] }] }),
      ['the first order'],
      'the median of the next nine (63) + 15',
    );
    t.same(
      miss({ ...ok, guardMs: [{ kind: 'simulation', ms: [Number.NaN, ...ok.guardMs[0].ms.slice(1)] }] }),
      ['the first simulation'],
      'a failed first guard misses',
    );
    t.same(miss({ ...ok, guardMs: [{ kind: 'order', ms: [60] }] }), ['the first order'], 'one guard alone cannot pass');
    t.same(miss({ ...ok, failures: 1, firstFailure: '200: wait' }), ['every answer a']);
    t.equal(percentile([3, 1, 2, 4], 50), 2);
    t.equal(percentile([3, 1, 2, 4], 99), 4);
  },
);

t.test('signing: >= 0.8 x unsigned, and its CPU within a bare signature and hashes + 30 us', async (t) => {
  const r = healthy();
  const withCpu = (x: Measured, cpuRounds: number[]): Measured => ({ ...x, rounds: [x.rps, x.rps, x.rps], cpuRounds });
  r.set('decide-cached', withCpu(m('decide-cached', 3400, 12, 50), [0.15, 0.16, 0.2]));
  r.set('decide-cached-unsigned', withCpu(m('decide-cached-unsigned', 4000, 6, 20), [0.07, 0.07, 0.07]));
  t.equal(signingCpuUs(r), 90, 'the median of the rounds: 80, 90, 130 us');
  const bare = { signUs: 47, hashesUs: 12 };
  t.same(
    checkSigning(r, bare).map((c) => c.ok),
    [true, false],
    '0.85 of the unsigned passes; 90 us is over 47 + 12 + 30',
  );
  r.set('decide-cached', withCpu(m('decide-cached', 3000, 12, 50), [0.15, 0.15, 0.15]));
  t.same(
    checkSigning(r, bare).map((c) => c.ok),
    [false, true],
    '0.75 of the unsigned misses; 80 us passes',
  );
  t.same(checkSigning(r, null).length, 1, 'without a bare signature only the ratio is judged');
  r.delete('decide-cached-unsigned');
  t.same(checkSigning(r, bare), []);
});

t.test(
  "the event loop's CPU is its own thread's, not the process's",
  { skip: process.platform !== 'linux' },
  async (t) => {
    const loop0 = cpuSeconds(process.pid, true);
    const all0 = cpuSeconds(process.pid);
    // Another thread spins for 400 ms while this one waits.
    const w = new Worker('const end = Date.now() + 400; while (Date.now() < end);', { eval: true });
    await new Promise((r) => w.once('exit', r));
    const loop = (cpuSeconds(process.pid, true) ?? Number.NaN) - (loop0 ?? Number.NaN);
    const all = (cpuSeconds(process.pid) ?? Number.NaN) - (all0 ?? Number.NaN);
    t.ok(all >= 0.3, `the process used ${all.toFixed(2)} s`);
    t.ok(loop < 0.15, `the event loop used ${loop.toFixed(2)} s of it`);
  },
);
