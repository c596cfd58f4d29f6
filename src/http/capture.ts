/** Reading back what a response wrote, to keep an answer and give it again to a retry. */
import type { ServerResponse } from 'node:http';

/**
 * Collects what the response writes. `onEnd`, when given, runs as the response is ended, with
 * the status and every byte written, whether or not the client is still there to read them.
 */
export function captureBody(res: ServerResponse, onEnd?: (status: number, body: string) => void): () => string {
  const chunks: Buffer[] = [];
  const take = (chunk: unknown, encoding: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    chunks.push(
      typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : Buffer.from(chunk as Uint8Array),
    );
  };
  const text = () => Buffer.concat(chunks).toString('utf8');
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  (res as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]) => {
    take(chunk, rest[0]);
    return write(chunk, ...rest);
  };
  (res as { end: unknown }).end = (chunk?: unknown, ...rest: unknown[]) => {
    take(chunk, rest[0]);
    onEnd?.(res.statusCode, text());
    return end(chunk, ...rest);
  };
  return text;
}
