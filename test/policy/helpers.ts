/** HTTP helpers for the policy tests: any method, a key, JSON both ways. */
import { post } from '../helpers/app.js';

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

export async function call(
  base: string,
  method: string,
  path: string,
  key: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(key === null ? {} : { 'x-api-key': key }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** A fresh owner key from the signup endpoint. */
export async function signup(
  base: string,
  email = `${Math.random().toString(36).slice(2)}@example.com`,
): Promise<string> {
  const r = await post(`${base}/v1/api-keys/signup`, { email });
  if (r.status !== 200 || !r.body.api_key) throw new Error(`signup answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.api_key as string;
}

/** A new agent key of the owner's account, bound to `policy`. */
export async function agentKey(
  base: string,
  owner: string,
  name: string,
  policy: string | null,
): Promise<{ id: string; key: string }> {
  const r = await call(base, 'POST', '/v1/keys', owner, { name, policy });
  if (r.status !== 201) throw new Error(`POST /v1/keys answered ${r.status}: ${JSON.stringify(r.body)}`);
  return { id: r.body.id, key: r.body.api_key };
}
