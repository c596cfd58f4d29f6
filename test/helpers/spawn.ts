/** Runs the real service entry (dist/src/server.js) as a child process on an ephemeral port, and the stdio MCP bin. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { OFFLINE_UPSTREAMS } from './offline.js';

export const SERVER_ENTRY = fileURLToPath(new URL('../../src/server.js', import.meta.url));
/** The `preflight-mcp` bin (dist/src/mcp/stdio.js). */
export const MCP_BIN = fileURLToPath(new URL('../../src/mcp/stdio.js', import.meta.url));

/** Runs the stdio MCP bin with only PATH and `env` until it exits: its exit code and what it wrote. */
export async function runMcpBin(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MCP_BIN], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  child.stdout.on('data', (d) => (stdout += String(d)));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  /** Parsed log lines so far. */
  logs: Array<Record<string, unknown>>;
  /** Milliseconds from spawn to the `listening` line. */
  startMs: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function spawnService(env: Record<string, string>, timeoutMs = 15000): Promise<ServiceProcess> {
  const started = performance.now();
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      ...OFFLINE_UPSTREAMS,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`service did not start within ${timeoutMs} ms: ${stderr}`)),
      timeoutMs,
    );
    let buf = '';
    child.stdout!.on('data', (d) => {
      buf += String(d);
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === 'listening') {
            clearTimeout(timer);
            resolve(`http://127.0.0.1:${entry.port as number}`);
          }
        } catch {
          /* not a log line */
        }
      }
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening: ${stderr}`));
    });
  });
  return { child, url, logs, startMs: performance.now() - started, exited };
}

/** Polls `/health` until the service says it is ready (`ok` or `degraded`, a 200; docs/api-reference.md). */
export async function untilReady(url: string, timeoutMs = 30_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${url}/health`).catch(() => null);
    if (res?.status === 200) return;
    await res?.body?.cancel();
    if (performance.now() > end) throw new Error(`${url} did not become ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
