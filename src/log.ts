import { isoNow } from './clock.js';
import { jsonString } from './wire.js';
import { pino, type Logger, type DestinationStream } from 'pino';

/** Header and body paths that must never reach a log line. */
export const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-payment"]',
  'req.headers["payment-signature"]',
  'headers["x-api-key"]',
  'headers.authorization',
  'headers["x-payment"]',
  'headers["payment-signature"]',
  'api_key',
  '*.api_key',
];

/** What TurnBatch needs of pino's stdout stream (sonic-boom). */
interface Sink {
  write(chunk: string): boolean;
  flush(cb?: (err?: Error) => void): void;
  flushSync(): void;
}

/** Every TurnBatch, drained synchronously when the process exits. */
const batches = new Set<TurnBatch>();
const drainAll = (): void => {
  for (const b of batches) b.drainSync();
};

/**
 * Log lines made in one turn of the event loop go to stdout as one write, at the end of that turn.
 * A busy service logs a line per request, and one write per line cost a cached answer a tenth of
 * its time; a line still reaches stdout as soon as the turn that made it ends. The write is
 * synchronous, as Node's own stdout is on Linux for files and pipes: one system call per turn,
 * no hand-off to the thread pool, and nothing left waiting when the process exits.
 */
export class TurnBatch implements DestinationStream {
  #pending = '';
  #scheduled = false;

  constructor(private readonly sink: Sink) {
    if (batches.size === 0) process.once('exit', drainAll);
    batches.add(this);
  }

  /** Writes what waits, synchronously (at exit). */
  drainSync(): void {
    this.#drain();
    try {
      this.sink.flushSync();
    } catch {
      // stdout already gone: nothing left to tell
    }
  }

  write(line: string): void {
    this.#pending += line;
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#drain());
    }
  }

  /** pino's logger.flush(): the lines waiting now, then the stream's own flush. */
  flush(cb?: (err?: Error) => void): void {
    this.#drain();
    this.sink.flush(cb);
  }

  #drain(): void {
    this.#scheduled = false;
    if (this.#pending === '') return;
    const text = this.#pending;
    this.#pending = '';
    this.sink.write(text);
  }
}

/** The loggers createLogger made, whose line shape accessLog writes itself. */
const ours = new WeakSet<Logger>();

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const logger = pino(
    {
      level,
      base: { service: 'preflight' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      // pino's isoTime, made once per millisecond.
      timestamp: () => `,"time":"${isoNow()}"`,
    },
    destination ?? new TurnBatch(pino.destination({ sync: true })),
  );
  ours.add(logger);
  return logger;
}

/** One answered request's access line (src/app.ts). */
export type AccessLog = (
  reqId: string,
  method: string,
  route: string,
  status: number,
  ms: number,
  auth: string | undefined,
) => void;

/**
 * The access line, one per answered request: `{"level":30,"time":...,"service":"preflight",
 * "reqId":...,"method":...,"route":...,"status":...,"ms":...,"auth":...,"msg":"request"}`.
 * On a logger createLogger made, the line is written straight to its destination in exactly the
 * shape pino gives it: pino's general path (its level and bindings lookup, its serializer walk of
 * the object) costs about five times this fixed line, and the line is a measurable share of a
 * cached answer. It still honours the logger's level, its bindings and its timestamp, and none of
 * its fields can hold a secret, so no redaction applies. Any other logger gets `info` as usual.
 */
export function accessLog(logger: Logger): AccessLog {
  const child = logger.child({}, { redact: { paths: [] } });
  if (!ours.has(logger)) {
    return (reqId, method, route, status, ms, auth) =>
      child.info({ reqId, method, route, status, ms, auth }, 'request');
  }
  const stream = (child as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
  const bindings = (child as unknown as Record<symbol, string>)[pino.symbols.chindingsSym];
  const time = (child as unknown as Record<symbol, () => string>)[pino.symbols.timeSym];
  return (reqId, method, route, status, ms, auth) => {
    if (child.levelVal > 30) return;
    stream.write(
      `{"level":30${time()}${bindings},"reqId":${jsonString(reqId)},"method":${jsonString(method)},"route":${jsonString(route)},"status":${status},"ms":${ms}${auth === undefined ? '' : `,"auth":${jsonString(auth)}`},"msg":"request"}\n`,
    );
  };
}

export type { Logger };
