/**
 * Requests to a node with retries, a deadline per call, bulk with per-item retries, the cluster check, and errors
 * mapped to the store's error class without secrets. The sender (one of the official clients, see
 * `connection.ts`) is given; the unit tests give a scripted one.
 */
import { engineRequest } from "./tracing.js";
import { checkAnswer, type ClusterGuard, clusterUuidOf } from "./cluster.js";
import { type ErrorClass, redact, serverReason, type StoreError } from "./errors.js";
import {
  type BulkFailure,
  type BulkLimits,
  type BulkOp,
  DEFAULT_BULK,
  DEFAULT_LIMITS,
  backoffDelay,
  describeFailure,
  isRetryableStatus,
  type Limits,
  missingIndexName,
  type RequestParams,
  type Response,
  type RetryPolicy,
  type Sender,
  type Try,
} from "./retry.js";
import { isRefusal, isRetriedAnswer, refusalReason, SETTINGS, UNANSWERED_ITEM_STATUS } from "./settings.js";
import type { Engine, RefreshPolicy } from "./types.js";
import {
  bulkFailuresError,
  missingIndexError,
  otherClusterError,
  outOfTimeError,
  type Teller,
  unreachableError,
} from "./transport-errors.js";
import { DeferredRefresh } from "./visibility.js";

export {
  backoffDelay,
  type BulkFailure,
  type BulkLimits,
  type BulkOp,
  DEFAULT_BULK,
  DEFAULT_LIMITS,
  isRetryableStatus,
  type Limits,
  type RequestParams,
  type Response,
  type RetryPolicy,
  type SendParams,
} from "./retry.js";

/** The deferred refresh's delay after the last write, by default (`engine_settings.json` `refresh.after_ms`). */
export const DEFAULT_REFRESH_AFTER_MS: number = SETTINGS.refresh.after_ms;

/** What a connection is made of (built by `connect`, or by a test with a scripted sender). */
export interface ConnectionParts {
  engine: Engine;
  version: string;
  refresh: RefreshPolicy;
  send: Sender;
  errorClass: ErrorClass;
  secrets: readonly string[];
  retry: RetryPolicy;
  limits?: Limits;
  /** Bulk calls: their retries, deadline and the timeout of one bulk request (default: the shared `retry.bulk`). */
  bulk?: BulkLimits;
  /** The node URLs, for messages (redacted there). */
  urls?: readonly string[];
  /** The cluster this connection opened and the request that reads its UUID (none: no check). */
  cluster?: { guard: ClusterGuard; identity: { path: string; query: Record<string, string> } };
  close?: () => Promise<void>;
  /** Under the `deferred` policy: the background refresh, this long after the last write (default 1000 ms). */
  refreshAfterMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /** Uniform in [0, 1): the backoff's jitter. */
  random?: () => number;
}

/** A node connection bound to one store's error class. */
export class Connection {
  readonly engine: Engine;
  readonly version: string;
  readonly refresh: RefreshPolicy;
  readonly limits: Limits;
  private readonly send: Sender;
  private readonly errorClass: ErrorClass;
  private readonly secrets: readonly string[];
  private readonly retryPolicy: RetryPolicy;
  private readonly bulkPolicy: BulkLimits;
  private readonly random: () => number;
  private readonly urls: readonly string[];
  private readonly cluster: ConnectionParts["cluster"];
  private readonly closeClient: () => Promise<void>;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly now: () => number;

  constructor(parts: ConnectionParts) {
    this.engine = parts.engine;
    this.version = parts.version;
    this.refresh = parts.refresh;
    this.limits = parts.limits ?? DEFAULT_LIMITS;
    this.send = parts.send;
    this.errorClass = parts.errorClass;
    this.secrets = parts.secrets;
    this.retryPolicy = parts.retry;
    this.bulkPolicy = parts.bulk ?? DEFAULT_BULK;
    this.random = parts.random ?? Math.random;
    this.urls = parts.urls ?? [];
    this.cluster = parts.cluster;
    this.closeClient = parts.close ?? (async () => {});
    this.sleep = parts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.now = parts.now ?? Date.now;
    this.visibility =
      parts.refresh === "deferred"
        ? new DeferredRefresh((index) => this.refreshIndex(index), parts.refreshAfterMs ?? DEFAULT_REFRESH_AFTER_MS)
        : null;
  }

  /** The deferred-refresh scheduler (policy `deferred`), else null. */
  readonly visibility: DeferredRefresh | null;

  /** The UUID of the cluster this connection opened, when it checks one. */
  get clusterUuid(): string | undefined {
    return this.cluster?.guard.uuid;
  }

  /** Build an error of this store's class; the message is redacted. */
  error(message: string, extra: { status?: number; reason?: string; details?: Record<string, unknown> } = {}): StoreError {
    const reason = extra.reason === undefined ? undefined : redact(extra.reason, this.secrets);
    return new this.errorClass(redact(message, this.secrets), { ...extra, reason });
  }

  /**
   * Send one request; a retried status (the shared list) or a connection failure is tried again with backoff until
   * the tries run out or `callTimeoutMs` (or `deadline`) has passed; other errors throw this store's error. A missing
   * index is an error even where 404 is accepted, unless `missingIndexOk`. When the cluster check is due, it comes
   * first, and the request is sent only to the cluster this connection opened.
   */
  async request(params: RequestParams & { missingIndexOk?: boolean }, deadline?: number): Promise<Response> {
    const started = this.now();
    const until = deadline ?? started + this.limits.callTimeoutMs;
    let last = "";
    let lastStatus: number | undefined;
    for (let attempt = 0; ; attempt++) {
      const remaining = until - this.now();
      if (remaining <= 0) throw this.outOfTime(params, attempt, last, lastStatus, this.limits.callTimeoutMs);
      const tried = await this.tryOnce(params, until, Math.min(this.limits.requestTimeoutMs, remaining));
      if ("failure" in tried) {
        [last, lastStatus] = [tried.failure, undefined];
        if (tried.aborted || attempt >= this.retryPolicy.retries) throw this.unreachable(params, attempt + 1, last, started);
        if (await this.backoff(attempt, until)) continue;
        // Tries that timed out spent the call's time; refused or reset connections fail at once, so the tries did.
        if (/^TimeoutError\b/.test(last)) throw this.outOfTime(params, attempt + 1, last, lastStatus, this.limits.callTimeoutMs);
        throw this.unreachable(params, attempt + 1, last, started, true);
      }
      const response = tried.response;
      const missing = params.missingIndexOk ? undefined : missingIndexName(response);
      if (missing !== undefined) {
        await this.checkCluster(until, true);
        throw this.missingIndex(params, missing, response);
      }
      if (response.status < 400 || params.accept?.includes(response.status)) {
        this.cluster?.guard.seen();
        return response;
      }
      const reason = serverReason(response.body);
      if (isRetriedAnswer(response.status, response.body) && attempt < this.retryPolicy.retries) {
        [last, lastStatus] = [`HTTP ${response.status}${reason ? ` ${reason}` : ""}`, response.status];
        if (await this.backoff(attempt, until)) continue;
        throw this.outOfTime(params, attempt + 1, last, lastStatus, this.limits.callTimeoutMs);
      }
      const said = isRefusal(response.status, response.body)
        ? refusalReason(reason ?? `HTTP ${response.status}`, "do this here")
        : (reason ?? "(no error body)");
      throw this.error(`${params.what} failed: HTTP ${response.status} ${said}`, {
        status: response.status,
        reason: reason ?? `HTTP ${response.status}`,
        details: { method: params.method, path: params.path, attempts: attempt + 1 },
      });
    }
  }

  /** One try: the cluster check where it is due, then the request (a connection failure makes the check due). */
  private async tryOnce(params: RequestParams, until: number, timeoutMs: number): Promise<Try> {
    const unsure = this.cluster?.guard.due() ? await this.checkCluster(until) : undefined;
    if (unsure !== undefined) return { failure: unsure };
    const span = engineRequest(this.engine, params.method, params.path, this.urls);
    try {
      const response = await this.send({ ...params, timeoutMs });
      span.end(response.status, undefined, response.body);
      return { response };
    } catch (exc) {
      span.end(undefined, (exc as { name?: string })?.name ?? "Error");
      this.cluster?.guard.suspectChange();
      return { failure: describeFailure(exc), aborted: (exc as { name?: string })?.name === "RequestAbortedError" };
    }
  }

  /** What the errors of transport-errors.ts are told of this connection. */
  private get teller(): Teller {
    return { error: (message, extra) => this.error(message, extra), urls: this.urls, callTimeoutMs: this.limits.callTimeoutMs };
  }

  /** Connections failed on every try (see `unreachableError`). */
  private unreachable(params: RequestParams, attempts: number, last: string, started: number, cut = false): StoreError {
    return unreachableError(this.teller, params, attempts, last, this.now() - started, cut);
  }

  /** Sleep before retry `attempt`; false (no sleep) when the deadline would pass first. */
  private async backoff(attempt: number, until: number, policy: RetryPolicy = this.retryPolicy): Promise<boolean> {
    const delay = backoffDelay(attempt, policy, this.random);
    if (this.now() + delay >= until) return false;
    await this.sleep(delay);
    return true;
  }

  private outOfTime(params: RequestParams, attempts: number, last: string, status: number | undefined, ms: number): StoreError {
    return outOfTimeError(this.teller, params, attempts, last, status, ms);
  }

  private missingIndex(params: RequestParams, index: string, response: Response): StoreError {
    return missingIndexError(this.teller, params, index, response);
  }

  /**
   * Read the cluster UUID and throw when the URL reaches another cluster, or a server that is no cluster node.
   * Returns undefined when it is the opened cluster (or the role may not read the cluster state: the shared
   * `cannot_check` statuses, carry on), or what went wrong when the answer tells nothing (no connection, 429/5xx):
   * the caller then treats the attempt as failed, and the check stays due.
   */
  private async checkCluster(until: number, force = false): Promise<string | undefined> {
    const cluster = this.cluster;
    if (!cluster || !(force || cluster.guard.due())) return undefined;
    const what = "read the cluster UUID";
    let answer: Response;
    try {
      const timeoutMs = Math.max(1, Math.min(this.limits.requestTimeoutMs, until - this.now()));
      answer = await this.send({ method: "GET", ...cluster.identity, what, timeoutMs });
    } catch (exc) {
      cluster.guard.suspectChange();
      return describeFailure(exc);
    }
    const uuid = clusterUuidOf(answer.body);
    if (uuid !== undefined && cluster.guard.confirm(uuid)) return undefined;
    const meaning = uuid === undefined && answer.status >= 400 ? checkAnswer(answer.status) : "fail";
    if (meaning === "carry_on") {
      cluster.guard.passed(); // the store cannot tell its cluster; a wrong password fails the call itself
      return undefined;
    }
    cluster.guard.suspectChange();
    if (meaning === "retry") return `${what}: HTTP ${answer.status}`;
    throw otherClusterError(this.teller, cluster.guard.uuid, uuid, answer.status);
  }

  /**
   * Index/delete documents, one bulk request per round; every write requires the alias. Items that fail with a
   * retried status (not a refusal by the cluster's security: `retry.not_retried_types`) are sent again with backoff in later rounds (the shared `retry.bulk`: tries, and a deadline from
   * the call's start); a whole request that fails with a retried status or a lost connection fails each item with
   * the unanswered-item status, in the same rounds. A delete of a missing id counts as done. Returns the items that
   * still failed, with their last status.
   */
  async bulk(index: string, ops: BulkOp[], what: string): Promise<BulkFailure[]> {
    const { retry: policy, callTimeoutMs } = this.bulkPolicy;
    const until = this.now() + callTimeoutMs;
    let pending = ops;
    const failures: BulkFailure[] = [];
    for (let attempt = 0; pending.length > 0; attempt++) {
      const answers = await this.bulkRound(index, pending, what, until);
      const retry: BulkFailure[] = [];
      let missing: string | undefined;
      pending.forEach((op, i) => {
        const { status, result } = answers[i] as { status: number; result: unknown };
        if (status < 300 || (op.action === "delete" && status === 404 && !missingIndexName({ status, body: result }))) {
          return;
        }
        missing ??= missingIndexName({ status, body: result });
        const reason = serverReason(result) ?? `HTTP ${status}`;
        const refused = isRefusal(status, result);
        const failure = { id: op.id, action: op.action, status, reason: refused ? refusalReason(reason, "write here") : reason };
        (isRetriedAnswer(status, result) ? retry : failures).push(failure);
      });
      if (missing !== undefined) {
        await this.checkCluster(until, true);
        throw this.missingIndex({ method: "POST", path: "/_bulk", what }, missing, { status: 404, body: {} });
      }
      const goOn = retry.length > 0 && attempt < policy.retries;
      if (goOn && (await this.backoff(attempt, until, policy))) {
        const again = new Set(retry.map((f) => f.id));
        pending = pending.filter((op) => again.has(op.id));
        continue;
      }
      const late = goOn ? ` (retries stopped at the ${callTimeoutMs / 1000} s deadline)` : "";
      failures.push(...retry.map((f) => ({ ...f, reason: f.reason + late })));
      pending = [];
    }
    return failures;
  }

  /** One bulk round of `ops` (one try): each op's status and item answer; without an answer, the unanswered status. */
  private async bulkRound(index: string, ops: BulkOp[], what: string, until: number): Promise<{ status: number; result: unknown }[]> {
    const lines: string[] = [];
    for (const op of ops) {
      lines.push(JSON.stringify({ [op.action]: { _index: index, _id: op.id } }));
      if (op.action === "index") lines.push(JSON.stringify(op.doc));
    }
    const params = { method: "POST" as const, path: "/_bulk", query: { require_alias: "true" }, body: lines.join("\n") + "\n", what };
    const sent = this.now();
    const tried = await this.tryOnce(params, until, this.bulkPolicy.requestTimeoutMs); // a round keeps its full try
    if ("failure" in tried) {
      if (tried.aborted) throw this.unreachable(params, 1, tried.failure, sent);
      const result = { error: { type: "no_answer", reason: tried.failure } };
      return ops.map(() => ({ status: UNANSWERED_ITEM_STATUS, result }));
    }
    const response = tried.response;
    if (isRetryableStatus(response.status)) return ops.map(() => ({ status: response.status, result: response.body }));
    if (response.status >= 400) {
      const said = serverReason(response.body) ?? `HTTP ${response.status}`;
      const reason = isRefusal(response.status, response.body) ? refusalReason(said, "write here") : said;
      throw this.error(`${what} failed: HTTP ${response.status} ${reason}`, { status: response.status, reason });
    }
    this.cluster?.guard.seen();
    const items: any[] = response.body?.items ?? [];
    return ops.map((op, i) => {
      const result = items[i]?.[op.action];
      return { status: result?.status ?? UNANSWERED_ITEM_STATUS, result };
    });
  }

  /** Throw one error listing every failed bulk item (no-op when none failed). */
  throwBulkFailures(what: string, failures: BulkFailure[], total: number): void {
    if (failures.length > 0) throw bulkFailuresError(this.teller, what, failures, total);
  }

  /** The `refresh` query parameter of single-document writes under this store's policy. */
  writeQuery(): Record<string, string> {
    return { refresh: this.refresh === "deferred" ? "false" : this.refresh };
  }

  /** A single-document write to `index` under this store's policy; deferred: the next read refreshes first. */
  async write(index: string, params: RequestParams): Promise<Response> {
    try {
      return await this.request({ ...params, query: { ...params.query, ...this.writeQuery() } });
    } finally {
      this.visibility?.written(index);
    }
  }

  /**
   * A bulk load into `index` finished (or failed). Under `deferred` the next read refreshes first, as after any
   * write; a `true`/`wait_for` policy (the store's or the call's) refreshes now; `false` leaves it to `refresh()`.
   */
  async afterBulk(index: string, policy: RefreshPolicy = this.refresh): Promise<void> {
    this.visibility?.written(index, false); // no background refresh: the scheduled one, once a load is over (bulk-load.ts)
    if (policy === "true" || policy === "wait_for") await this.refreshNow(index);
    else if (policy === "deferred" && !this.visibility) await this.refreshIndex(index);
  }

  /** Make everything written to `index` so far searchable (a store's `refresh()`). */
  async refreshNow(index: string): Promise<void> {
    if (this.visibility) await this.visibility.refreshAll(index);
    else await this.refreshIndex(index);
  }

  /** Before a read of `index`: make this store's own earlier writes searchable (deferred policy; else nothing). */
  async beforeRead(index: string): Promise<void> {
    try {
      await this.visibility?.beforeRead(index);
    } catch (exc) {
      // A missing index has nothing to refresh: the read itself reports it, with its own words.
      if ((exc as StoreError).status !== 404) throw exc;
    }
  }

  /** The query of a single-document index request: the refresh policy, and the target must be an alias. */
  indexQuery(): Record<string, string> {
    return { ...this.writeQuery(), require_alias: "true" };
  }

  /** Make everything written so far searchable. */
  async refreshIndex(index: string): Promise<void> {
    await this.request({ method: "POST", path: `/${encodeURIComponent(index)}/_refresh`, what: `refresh ${index}` });
  }

  /** Refresh what is still pending (deferred policy), then close the client's sockets. */
  async close(): Promise<void> {
    try {
      await this.visibility?.flush();
    } catch {
      /* the writes are durable; the node's scheduled refresh or the next reader's shows them */
    } finally {
      await this.closeClient();
    }
  }
}
