/**
 * The shared retry policy as this package applies it (`engine_settings.json` `retry`, read by `settings.ts`): the
 * backoff rule, the default limits of requests and bulk calls, and the request/answer types the connection retries.
 */
import { isRetryableStatus, JITTER, RETRY } from "./settings.js";

export interface RetryPolicy {
  retries: number;
  baseMs: number;
  capMs: number;
}

export { isRetryableStatus };

/** Delay before retry number `attempt` (0-based): min(cap, base × 2^attempt) × jitter in [low, high) (shared). */
export function backoffDelay(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const [low, high] = JITTER;
  return Math.min(policy.capMs, policy.baseMs * 2 ** attempt) * (low + random() * (high - low));
}


export interface Response {
  status: number;
  body: any;
  headers?: Record<string, unknown>;
}

export interface RequestParams {
  method: "GET" | "PUT" | "POST" | "DELETE" | "HEAD";
  path: string;
  body?: unknown;
  query?: Record<string, string | number | boolean>;
  /** Statuses that are an answer, not a failure (e.g. 404 on delete). */
  accept?: number[];
  /** What the request does, for error messages: "index memory m1". */
  what: string;
}

export interface BulkOp {
  action: "index" | "delete";
  id: string;
  doc?: unknown;
}

export interface BulkFailure {
  id: string;
  action: string;
  status: number;
  reason: string;
}

/** What the sender gets: the request, and how long this try may take (the per-try timeout, cut by the call's deadline). */
export type SendParams = RequestParams & { timeoutMs: number };
export type Sender = (params: SendParams) => Promise<Response>;

/** Time limits of the calls of one connection, in ms. */
export interface Limits {
  /** One try. */
  requestTimeoutMs: number;
  /** One call, its retries and backoff included. */
  callTimeoutMs: number;
}

export const DEFAULT_LIMITS: Limits = { requestTimeoutMs: RETRY.request.requestTimeoutMs, callTimeoutMs: RETRY.request.callTimeoutMs };
/** Bulk calls: their retries, deadline and the timeout of one bulk request (the shared `retry.bulk`). */
export interface BulkLimits {
  retry: RetryPolicy;
  callTimeoutMs: number;
  requestTimeoutMs: number;
}

export const DEFAULT_BULK: BulkLimits = {
  retry: { retries: RETRY.bulk.retries, baseMs: RETRY.bulk.baseMs, capMs: RETRY.bulk.capMs },
  callTimeoutMs: RETRY.bulk.callTimeoutMs,
  requestTimeoutMs: RETRY.bulk.requestTimeoutMs,
};

/** The outcome of one try: the node's answer, or what went wrong when nothing tells (no connection, a check that could not tell). */
export type Try = { response: Response } | { failure: string; aborted?: boolean };

/** The error body of a missing index (`index_not_found_exception`), or undefined for any other answer. */
export function missingIndexName(response: Response): string | undefined {
  const error = response.body?.error;
  if (response.status !== 404 || error?.type !== "index_not_found_exception") return undefined;
  return String(error.index ?? error["resource.id"] ?? "?");
}

export function describeFailure(exc: unknown): string {
  const e = exc as { name?: string; message?: string };
  return `${e?.name ?? "Error"}: ${e?.message ?? String(exc)}`;
}

