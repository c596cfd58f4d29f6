/**
 * The machine's servers a test file needs (PostgreSQL, Redis): reachable → null; not reachable →
 * under CI=true the file fails, elsewhere it is skipped with a message naming the server and URL.
 */
import t from 'tap';

export async function requireServer(name: string, url: string, probe: () => Promise<void>): Promise<string | null> {
  try {
    await probe();
    return null;
  } catch (err) {
    // The URL is a test server's; it may still carry a user name, never shown with a password.
    const shown = url.replace(/\/\/[^@/]*@/, '//');
    const problem = `${name} at ${shown} is unreachable (${(err as Error).message})`;
    if (process.env.CI === 'true') t.fail(`${name} is required in CI: ${problem}`);
    else t.plan(0, `skipped: ${problem}`);
    return problem;
  }
}
