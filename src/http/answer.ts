/**
 * The one shape of an endpoint that answers a validated POST body with JSON (docs/endpoints.md §2).
 * `answer(deps, fn)` does what every such endpoint did on its own: read the request id and the
 * route the chain left in `res.locals`, resolve the deadline from `context.deadline_ms` within
 * the configured bounds (docs/rules.md §5), note the start, and after `fn` count the decision by
 * route and send the body with status 200. `fn` only computes the body.
 */
import { isoNow } from '../clock.js';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import { resolveDeadline } from '../engine/decide-response.js';
import type { Judgement } from '../engine/judge.js';
import type { Verdict } from '../wire.js';
import type { Metrics } from '../metrics.js';
import { type ApiHandler, type ApiRequest, type ApiResponse, requestPath } from './api.js';
import { sendJson } from './errors.js';
import { type VerdictLog, verdictRecord } from '../verdicts/log.js';

/** One call to an endpoint, as its handler sees it. */
export interface Call<B> {
  req: ApiRequest;
  res: ApiResponse;
  /** The body, already validated against the endpoint's request schema. */
  body: B;
  requestId: string;
  /** The endpoint's path in the table (the metric label). */
  route: string;
  /** performance.now() when the handler began. */
  started: number;
  /** How long the checks may run: the request's own bound within the configured range, else the default. */
  deadlineMs: number;
}

export interface AnswerDeps {
  config: Pick<Readonly<Config>, 'requestDeadlineMs' | 'maxDeadlineMs'>;
  metrics?: Pick<Metrics, 'verdict'>;
  /** Where answers to keyed calls are logged (docs/policies.md §10); absent: not logged. */
  verdicts?: Pick<VerdictLog, 'record'> | null;
}

export function answer<B>(deps: AnswerDeps, fn: (call: Call<B>) => Promise<object>): ApiHandler {
  const { config, metrics } = deps;
  const verdicts = deps.verdicts ?? null;
  return async (req, res) => {
    const body = req.body as B;
    const call: Call<B> = {
      req,
      res,
      body,
      requestId: res.locals.requestId ?? randomUUID(),
      route: res.locals.route ?? requestPath(req),
      started: performance.now(),
      deadlineMs: resolveDeadline(config, (body as { context?: { deadline_ms?: number } }).context),
    };
    const out = await fn(call);
    // An answer that carries a decision is counted by route (preflight_verdicts_total).
    const verdict = (out as { verdict?: Verdict }).verdict;
    if (metrics && verdict !== undefined) metrics.verdict(call.route, verdict);
    if (verdicts) {
      const row = verdictRecord(res.locals.billing, res.locals.answerId, call.route, out, Date.now());
      // A row with a reservation is durable before the answer goes out (written with the
      // reservation, or now); the others are batched.
      const logged = row !== null && row.reservedUsd !== null && res.locals.verdictLogged === row.id;
      const durable = row === null ? undefined : verdicts.record(row, logged);
      if (durable !== undefined) await durable;
    }
    sendJson(res, 200, out);
  };
}

/** The judged fields an agent's answer opens with, in the order of its schema. */
export function opening(
  v: Judgement,
): Pick<Judgement, 'verdict' | 'risk' | 'confidence' | 'expires_in' | 'retry_after_s'> {
  return {
    verdict: v.verdict,
    risk: v.risk,
    confidence: v.confidence,
    expires_in: v.expires_in,
    ...(v.retry_after_s !== undefined ? { retry_after_s: v.retry_after_s } : {}),
  };
}

/** The request id, time and latency fields that close every agent's answer. */
export function answerMeta(call: Call<unknown>): { request_id: string; evaluated_at: string; latency_ms: number } {
  return {
    request_id: call.requestId,
    evaluated_at: isoNow(),
    latency_ms: Math.max(0, Math.round(performance.now() - call.started)),
  };
}
