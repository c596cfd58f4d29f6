/** A store that cannot start or cannot be reached. The message names the database, never a password. */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/** `postgres://user:secret@host/db` → `postgres://user@host/db`, for messages and logs. */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    u.password = '';
    return u.toString();
  } catch {
    return raw.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1@');
  }
}
