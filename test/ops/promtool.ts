/**
 * Runs promtool (Debian package `prometheus`) for the ops and metrics tests. When it is missing the
 * gate says so: the tests fail under CI=true, where the set-up installs it, and skip elsewhere.
 */
import { spawnSync } from 'node:child_process';

export interface PromtoolResult {
  status: number | null;
  output: string;
}

export interface PromtoolGate {
  skip: string | false;
  fail: string | null;
}

export function promtoolGate(): PromtoolGate {
  const r = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  if (r.error === undefined && r.status === 0) return { skip: false, fail: null };
  const why =
    'promtool not found: install the Debian package "prometheus" (apt-get install -y --no-install-recommends prometheus)';
  return process.env.CI === 'true' ? { skip: false, fail: why } : { skip: why, fail: null };
}

export function promtool(args: string[], opts: { input?: string; cwd?: string } = {}): PromtoolResult {
  const r = spawnSync('promtool', args, { encoding: 'utf8', input: opts.input, cwd: opts.cwd, timeout: 30_000 });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}
