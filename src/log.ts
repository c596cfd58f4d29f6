import { isoNow } from './clock.js';
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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'preflight' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      // pino's isoTime, made once per millisecond.
      timestamp: () => `,"time":"${isoNow()}"`,
    },
    destination ?? new TurnBatch(pino.destination({ sync: true })),
  );
}

export type { Logger };
