/**
 * The management handlers (docs/policies.md §1–§3): agent keys, policy documents and their
 * versions, a policy's usage and its dry run. Each answers for the account of the key the chain
 * checked (src/billing/management.ts); a store that does not answer is a 503 with Retry-After.
 */
import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import { generateApiKey, type KeyResolver } from '../../billing/keys.js';
import type {
  DecideResponse,
  GuardRequest,
  KeyCreateRequest,
  KeyCreated,
  KeyInfo,
  KeyUpdateRequest,
  PolicyUsage,
  PolicyVersion as PolicyVersionBody,
} from '../../generated/types.js';
import { judgeGuard, type GuardDeps } from '../../guard/handler.js';
import { resolveDeadline } from '../../engine/decide-response.js';
import {
  canonicalJson,
  documentProblems,
  normalizeDocument,
  policyHash,
  type PolicyDocument,
} from '../../policy/document.js';
import type { PolicyService } from '../../policy/service.js';
import { limitWindows, windowBounds } from '../../policy/windows.js';
import type { ApiKeyRecord, KeyRefusal, PolicyVersion, Store } from '../../store/types.js';
import type { ApiHandler, ApiResponse } from '../api.js';
import type { ManagementHandlerKey } from '../endpoints.js';
import { HttpError, sendJson } from '../errors.js';
import { fromStore, type ManagementRequest } from '../../billing/management.js';

export interface AccountDeps {
  config: Readonly<Config>;
  store: Store;
  /** The billing gate's key cache: a revocation or a new binding is dropped from it at once. */
  keys: KeyResolver;
  policies: PolicyService;
  /** What the dry run judges with: the guard's own dependencies. */
  guard: GuardDeps;
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export function keyInfo(k: ApiKeyRecord): KeyInfo {
  return {
    id: k.id,
    name: k.name,
    role: k.role,
    policy: k.policy,
    created_at: k.createdAt.toISOString(),
    last_used_at: iso(k.lastUsedAt),
    revoked_at: iso(k.revokedAt),
  };
}

export function versionBody(v: PolicyVersion): PolicyVersionBody {
  return {
    name: v.name,
    version: v.version,
    hash: v.hash,
    created_at: v.createdAt.toISOString(),
    document: JSON.parse(v.document) as PolicyDocument,
  };
}

const REFUSALS: Record<KeyRefusal, (ctx: { name?: string; policy?: string | null; max?: number }) => HttpError> = {
  not_found: () => new HttpError(404, 'No live key with this id in your account.'),
  name_taken: (c) => new HttpError(409, `A live key of this account is already named '${c.name ?? ''}'.`),
  too_many: (c) =>
    new HttpError(
      409,
      `This account holds ${c.max} live agent keys, the most it may (MAX_AGENT_KEYS); revoke one first.`,
    ),
  no_policy: (c) => new HttpError(404, `No policy named '${c.policy ?? ''}' in your account.`),
  owner_key: () =>
    new HttpError(
      409,
      "The owner key cannot be revoked with itself; ask the operator to revoke it (it ends the account's access).",
    ),
};

function account(res: ApiResponse): { accountId: string; keyId: string } {
  const b = res.locals.billing;
  if (!b?.accountId || !b.keyId) throw new Error('management handler without a checked key');
  return { accountId: b.accountId, keyId: b.keyId };
}

const noStore = (res: ApiResponse) => res.setHeader('Cache-Control', 'no-store');

function policyNotFound(name: string): HttpError {
  return new HttpError(404, `No policy named '${name}' in your account.`);
}

export function accountHandlers(deps: AccountDeps): Record<Exclude<ManagementHandlerKey, 'verdicts'>, ApiHandler> {
  const { store, keys, policies, config } = deps;

  const keysCreate: ApiHandler = async (req, res) => {
    const body = req.body as KeyCreateRequest;
    const { accountId } = account(res);
    const issued = generateApiKey();
    const made = await fromStore(
      store.createAgentKey({
        id: randomUUID(),
        keyHash: issued.hash,
        prefix: issued.prefix,
        accountId,
        name: body.name,
        policy: body.policy ?? null,
        maxAgentKeys: config.maxAgentKeys,
      }),
    );
    if (typeof made === 'string')
      throw REFUSALS[made]({ name: body.name, policy: body.policy, max: config.maxAgentKeys });
    noStore(res);
    const answer: KeyCreated = {
      id: made.id,
      name: made.name,
      role: 'agent',
      policy: made.policy,
      api_key: issued.key,
      created_at: made.createdAt.toISOString(),
    };
    sendJson(res, 201, answer);
  };

  const keysList: ApiHandler = async (_req, res) => {
    const { accountId } = account(res);
    const list = await fromStore(store.listAccountKeys(accountId));
    noStore(res);
    sendJson(res, 200, { keys: list.map(keyInfo) });
  };

  const keysUpdate: ApiHandler = async (req, res) => {
    const { accountId } = account(res);
    const id = (req as ManagementRequest).params.id;
    const body = req.body as KeyUpdateRequest;
    const out = await fromStore(store.setKeyPolicy(accountId, id, body.policy));
    if (typeof out === 'string') throw REFUSALS[out]({ policy: body.policy });
    keys.forget(id);
    noStore(res);
    sendJson(res, 200, keyInfo(out));
  };

  const keysDelete: ApiHandler = async (req, res) => {
    const { accountId } = account(res);
    const id = (req as ManagementRequest).params.id;
    const out = await fromStore(store.revokeAccountKey(accountId, id));
    if (typeof out === 'string') throw REFUSALS[out]({});
    keys.forget(id);
    res.statusCode = 204;
    res.end();
  };

  const policyPut: ApiHandler = async (req, res) => {
    const { accountId } = account(res);
    const name = (req as ManagementRequest).params.name;
    const given = req.body as PolicyDocument;
    const problems = documentProblems(given);
    if (problems.length > 0) throw new HttpError(422, problems);
    const doc = normalizeDocument(given);
    const hash = policyHash(doc);
    const { version, created } = await fromStore(store.putPolicy(accountId, name, hash, canonicalJson(doc)));
    policies.forget({ accountId, policy: name });
    noStore(res);
    sendJson(res, created ? 201 : 200, versionBody(version));
  };

  const policyList: ApiHandler = async (_req, res) => {
    const { accountId } = account(res);
    const list = await fromStore(store.listPolicies(accountId));
    noStore(res);
    sendJson(res, 200, {
      policies: list.map((v) => ({
        name: v.name,
        version: v.version,
        hash: v.hash,
        created_at: v.createdAt.toISOString(),
      })),
    });
  };

  const policyGet: ApiHandler = async (req, res) => {
    const { accountId } = account(res);
    const name = (req as ManagementRequest).params.name;
    const v = await fromStore(store.getPolicy(accountId, name));
    if (v === null) throw policyNotFound(name);
    noStore(res);
    sendJson(res, 200, versionBody(v));
  };

  const policyVersion: ApiHandler = async (req, res) => {
    const { accountId } = account(res);
    const { name, n } = (req as ManagementRequest).params;
    const v = await fromStore(store.getPolicyVersion(accountId, name, Number(n)));
    if (v === null) throw new HttpError(404, `Policy '${name}' of your account has no version ${n}.`);
    noStore(res);
    sendJson(res, 200, versionBody(v));
  };

  const policyDelete: ApiHandler = async (req, res) => {
    const { accountId } = account(res);
    const name = (req as ManagementRequest).params.name;
    const out = await fromStore(store.deletePolicy(accountId, name));
    if (out === 'not_found') throw policyNotFound(name);
    if (out === 'bound')
      throw new HttpError(409, `Policy '${name}' is bound to a live key; bind the key elsewhere or revoke it first.`);
    policies.forget({ accountId, policy: name });
    res.statusCode = 204;
    res.end();
  };

  const policyUsage: ApiHandler = async (req, res) => {
    const { accountId } = account(res);
    const name = (req as ManagementRequest).params.name;
    const v = await fromStore(store.getPolicy(accountId, name));
    if (v === null) throw policyNotFound(name);
    const compiled = policies.compile(v);
    const now = Date.now();
    const windows = limitWindows(compiled.limits, now);
    const usage = await fromStore(store.limitUsage(accountId, name, windows));
    const r2 = (x: number) => Math.round(x * 1e6) / 1e6;
    const answer: PolicyUsage = {
      name,
      version: v.version,
      limits: compiled.limits.map((l, i) => {
        const u = usage[i];
        const b = windowBounds(l.window, now);
        const used = u.committedUsd + u.reservedUsd;
        return {
          id: l.id,
          window: l.window,
          window_start: new Date(b.start).toISOString(),
          window_end: new Date(b.end).toISOString(),
          committed_usd: r2(u.committedUsd),
          reserved_usd: r2(u.reservedUsd),
          remaining_usd: l.max_usd === undefined ? null : r2(Math.max(0, l.max_usd - used)),
          max_usd: l.max_usd ?? null,
          count: u.count,
          max_count: l.max_count ?? null,
        };
      }),
    };
    noStore(res);
    sendJson(res, 200, answer);
  };

  const policyEvaluate: ApiHandler = async (req, res) => {
    const { accountId } = account(res);
    const name = (req as ManagementRequest).params.name;
    const body = req.body as GuardRequest;
    const v = await fromStore(store.getPolicy(accountId, name));
    if (v === null) throw policyNotFound(name);
    const started = performance.now();
    const out = await judgeGuard(
      { ...deps.guard, policies },
      res,
      {
        body,
        requestId: res.locals.requestId,
        deadlineMs: resolveDeadline(config, body.context),
        started,
      },
      { accountId, policy: name },
      true,
    );
    deps.guard.metrics?.verdict(res.locals.route ?? '', out.verdict);
    sendJson(res, 200, out satisfies DecideResponse);
  };

  return {
    keysCreate,
    keysList,
    keysUpdate,
    keysDelete,
    policyPut,
    policyList,
    policyGet,
    policyVersion,
    policyDelete,
    policyUsage,
    policyEvaluate,
  };
}
