/** The bench's console output: the scenario table, the targets, the pool comparison. */
import type { Row } from './session.js';
import type { TargetCheck } from './targets.js';
import type { PoolRow } from './pool-mode.js';
import type { FirstAnswers, Ramp } from './cold.js';
import type { BareSignature } from './signing.js';
import type { InstructionResult } from './instructions.js';
import { percentile } from './targets.js';

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const cells = (r: Row): string[] =>
  r.result === null
    ? [r.name, r.load, '-', '-', '-', 'not run', '-', '-']
    : [
        r.name,
        r.load,
        String(r.result.rps),
        String(r.result.p50),
        String(r.result.p99),
        String(r.result.errors),
        r.cpuMsPerRequest === null ? '-' : r.cpuMsPerRequest.toFixed(2),
        r.loopMsPerRequest == null ? '-' : r.loopMsPerRequest.toFixed(3),
      ];

export function printTable(rows: Row[], latencyMs: number): void {
  process.stdout.write(`\nScenarios (upstream latency ${latencyMs} ms; latencies in ms)\n`);
  process.stdout.write(
    table(['scenario', 'load', 'req/s', 'p50', 'p99', 'errors', 'cpu ms/req', 'loop ms/req'], rows.map(cells)) + '\n',
  );
  for (const r of rows) {
    if (r.note) process.stdout.write(`  ${r.name}: ${r.note}\n`);
    else if (r.result && r.result.errors > 0)
      process.stdout.write(
        `  ${r.name}: ${r.result.mismatches} answers without the expected body, statuses ${JSON.stringify(r.result.unexpectedStatus)}\n`,
      );
  }
}

export function printTargetChecks(checks: TargetCheck[]): void {
  process.stdout.write('\nTargets\n');
  for (const v of checks) process.stdout.write(`  ${v.ok ? 'ok  ' : 'MISS'}  ${v.target}: ${v.detail}\n`);
  const missed = checks.filter((v) => !v.ok).length;
  process.stdout.write(missed === 0 ? '  all targets met\n' : `  ${missed} target(s) missed\n`);
}

export function printPool(pool: PoolRow[]): void {
  process.stdout.write('\nWorker pool vs inline (latencies in ms)\n');
  const rows = pool.flatMap((p) => p.rows.map((r) => [p.setting.name, ...cells(r)]));
  process.stdout.write(
    table(['setting', 'scenario', 'load', 'req/s', 'p50', 'p99', 'errors', 'cpu ms/req', 'loop ms/req'], rows) + '\n',
  );
  for (const p of pool)
    for (const r of p.rows) if (r.note) process.stdout.write(`  ${p.setting.name} ${r.name}: ${r.note}\n`);
}

export function printSigning(
  ratios: Record<string, number>,
  bare: BareSignature | null,
  signingUs: number | null,
): void {
  const names = Object.keys(ratios);
  if (names.length === 0) return;
  process.stdout.write('\nSigned answers: decide-cached req/s as a ratio to\n');
  for (const n of names) process.stdout.write(`  ${n}: ${ratios[n].toFixed(2)}\n`);
  if (signingUs !== null) process.stdout.write(`  server CPU per answer, signed minus unsigned: ${signingUs} us\n`);
  if (bare !== null)
    process.stdout.write(
      `  a bare signature ${bare.signUs} us and its four hashes ${bare.hashesUs} us (this process)\n`,
    );
}

export function printCold(ramp: Ramp | null, first: FirstAnswers | null): void {
  if (ramp !== null) {
    process.stdout.write(
      `\nCold capacity: the highest rate answered in full (95 %) with p99 under ${ramp.p99Ms} ms and no errors: ${ramp.highestRate === 0 ? 'none of the ramp' : `${ramp.highestRate} req/s`}\n`,
    );
    for (const s of ramp.steps)
      process.stdout.write(
        `  ${s.rate} req/s (${s.connections} conn): ${s.rps} answered/s, p50 ${s.p50}, p99 ${s.p99} ms, ${s.errors} errors\n`,
      );
  }
  if (first !== null) {
    const ms = (xs: number[]): string => xs.map((x) => Math.round(x)).join(' ');
    process.stdout.write(
      `\nFirst answers of a fresh process (/health ${first.healthStates.join(' -> ')}, ok after ${first.healthOkMs} ms)\n`,
    );
    process.stdout.write(`  cold decides: ${ms(first.decideMs)} ms\n`);
    process.stdout.write(
      `  bridge-risk (another fresh process): first ${first.bridgeMs[0]} ms, p50 ${percentile(first.bridgeMs, 50)}, p99 ${percentile(first.bridgeMs, 99)}, max ${percentile(first.bridgeMs, 100)} ms\n`,
    );
    for (const g of first.guardMs) process.stdout.write(`  ${g.kind} guards (a third fresh process): ${ms(g.ms)} ms\n`);
  }
}

export function printInstructions(r: InstructionResult): void {
  const k = (n: number): string => `${(n / 1000).toFixed(1)}k`;
  process.stdout.write(
    `\nInstructions per cached answer (${r.valgrind}, callgrind; ${r.warmup} answers to warm up, then ${r.answers} counted)\n`,
  );
  process.stdout.write(
    table(
      ['variant', 'event loop', 'signing thread', 'other threads', 'all', 'not proceed'],
      r.counts.map((c) => [
        `${c.variant} (${c.about})`,
        k(c.eventLoop),
        k(c.signingThread),
        k(c.otherThreads),
        k(c.all),
        String(c.unexpected),
      ]),
    ) + '\n',
  );
  process.stdout.write(
    `  idle, per second under valgrind (taken off at that rate): ${r.counts
      .map(
        (c) =>
          `${c.variant} event loop ${k(c.idlePerSecond.eventLoop)}, other threads ${k(c.idlePerSecond.otherThreads)}`,
      )
      .join('; ')}\n`,
  );
  for (const c of r.counts) {
    const base = r.counts.find((b) => b.variant === c.against);
    if (base === undefined) continue;
    process.stdout.write(
      `  ${c.variant} against ${base.variant}: event loop ${(c.eventLoop / base.eventLoop).toFixed(3)}x (+${k(c.eventLoop - base.eventLoop)}), all threads ${(c.all / base.all).toFixed(3)}x (+${k(c.all - base.all)})\n`,
    );
  }
}
