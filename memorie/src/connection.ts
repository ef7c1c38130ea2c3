/**
 * One node connection per store: the official client of the detected engine, requests with retries, bulk
 * with per-item retries, and errors mapped to the store's error class without secrets.
 *
 * Both clients are driven through `transport.request` with raw REST paths, so that request bodies come from
 * the pure builders in `dialect.ts` and every engine difference stays in one place. The clients' own retries
 * are off (`maxRetries: 0`): this module retries 429, 5xx and connection failures with exponential backoff.
 */
import { type ErrorClass, redact, serverReason, type StoreError } from "./errors.js";

export type Engine = "opensearch" | "elasticsearch";
export type RefreshPolicy = "wait_for" | "true" | "false";
export type Auth = { username: string; password: string } | { apiKey: string } | { bearer: string };

/** Options every factory takes. */
export interface ConnectionOptions {
  /** One node URL or several of one cluster, e.g. the `url` that `reme-es server start --json` prints. */
  url: string | string[];
  /** Prefix of this store's indices (lowercase letters, digits, `.`, `_`, `-`); aliases are `<prefix>-memorie-*`. */
  indexPrefix: string;
  /** `auto` (default) asks the node which engine it runs. */
  engine?: "auto" | Engine;
  auth?: Auth;
  /**
   * When a write becomes searchable. `true` (default): each write refreshes the shard, so the next call sees it
   * (read-your-writes, what Memorie's engine assumes). `wait_for`: each write waits for the next scheduled
   * refresh (at most the index's 1 s refresh interval). `false`: no wait; call `refresh()` after a bulk load.
   */
  refresh?: RefreshPolicy;
  /** TLS for https nodes: a CA bundle (PEM) and whether to verify the certificate (default true). */
  tls?: { ca?: string | Buffer; rejectUnauthorized?: boolean };
  /** Retries of 429/5xx/connection failures: attempts after the first (default 6), backoff base and cap in ms. */
  retry?: { retries?: number; baseMs?: number; capMs?: number };
  /** Per-request timeout in ms (default 30000). */
  requestTimeoutMs?: number;
}

export interface RetryPolicy {
  retries: number;
  baseMs: number;
  capMs: number;
}

/** Statuses worth sending again: the node was busy or failing, not the request wrong. */
export function isRetryableStatus(status: number | undefined): boolean {
  return status === 429 || (status !== undefined && status >= 500 && status <= 599);
}

/** Delay before retry number `attempt` (0-based): min(cap, base × 2^attempt) × jitter in [0.5, 1.5). */
export function backoffDelay(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  return Math.min(policy.capMs, policy.baseMs * 2 ** attempt) * (0.5 + random());
}

const ALL_ERROR_STATUSES = Array.from({ length: 200 }, (_, i) => 400 + i);
const INDEX_PREFIX = /^[a-z0-9][a-z0-9._-]*$/;

export interface Response {
  status: number;
  body: any;
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

type Sender = (params: RequestParams) => Promise<Response>;

/** A node connection bound to one store's error class. */
export class Connection {
  constructor(
    readonly engine: Engine,
    readonly version: string,
    readonly refresh: RefreshPolicy,
    private readonly send: Sender,
    private readonly errorClass: ErrorClass,
    private readonly secrets: readonly string[],
    private readonly retryPolicy: RetryPolicy,
    private readonly closeClient: () => Promise<void>,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  /** Build an error of this store's class; the message is redacted. */
  error(message: string, extra: { status?: number; reason?: string; details?: Record<string, unknown> } = {}): StoreError {
    const reason = extra.reason === undefined ? undefined : redact(extra.reason, this.secrets);
    return new this.errorClass(redact(message, this.secrets), { ...extra, reason });
  }

  /** Send one request; 429/5xx/connection failures are retried; other errors throw this store's error. */
  async request(params: RequestParams): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.send(params);
      } catch (exc) {
        const e = exc as { name?: string; message?: string };
        if (attempt < this.retryPolicy.retries && e.name !== "RequestAbortedError") {
          await this.sleep(backoffDelay(attempt, this.retryPolicy));
          continue;
        }
        const summary = `${e.name ?? "Error"}: ${e.message ?? String(exc)}`;
        throw this.error(`${params.what} failed: the node could not be reached (${summary}); is it running?`, {
          reason: summary,
          details: { method: params.method, path: params.path, attempts: attempt + 1 },
        });
      }
      if (response.status < 400 || params.accept?.includes(response.status)) return response;
      if (isRetryableStatus(response.status) && attempt < this.retryPolicy.retries) {
        await this.sleep(backoffDelay(attempt, this.retryPolicy));
        continue;
      }
      const reason = serverReason(response.body) ?? `HTTP ${response.status}`;
      throw this.error(`${params.what} failed: HTTP ${response.status} ${reason}`, {
        status: response.status,
        reason,
        details: { method: params.method, path: params.path, attempts: attempt + 1 },
      });
    }
  }

  /**
   * Index/delete documents in one bulk request per round. Items that fail with 429/5xx are sent again with
   * backoff; a delete of a missing id counts as done. Returns the items that still failed.
   */
  async bulk(index: string, ops: BulkOp[], what: string): Promise<BulkFailure[]> {
    let pending = ops;
    const failures: BulkFailure[] = [];
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await this.sleep(backoffDelay(attempt - 1, this.retryPolicy));
      const lines: string[] = [];
      for (const op of pending) {
        lines.push(JSON.stringify({ [op.action]: { _index: index, _id: op.id } }));
        if (op.action === "index") lines.push(JSON.stringify(op.doc));
      }
      const response = await this.request({ method: "POST", path: "/_bulk", body: lines.join("\n") + "\n", what });
      const items: any[] = response.body?.items ?? [];
      const retry: BulkOp[] = [];
      pending.forEach((op, i) => {
        const result = items[i]?.[op.action];
        const status: number = result?.status ?? 500;
        if (status < 300 || (op.action === "delete" && status === 404)) return;
        if (isRetryableStatus(status) && attempt < this.retryPolicy.retries) retry.push(op);
        else failures.push({ id: op.id, action: op.action, status, reason: serverReason(result) ?? `HTTP ${status}` });
      });
      pending = retry;
    }
    return failures;
  }

  /** Throw one error listing every failed bulk item (no-op when none failed). */
  throwBulkFailures(what: string, failures: BulkFailure[], total: number): void {
    if (failures.length === 0) return;
    const first = failures[0] as BulkFailure;
    throw this.error(
      `${what}: ${failures.length} of ${total} items failed (first: ${first.id}: HTTP ${first.status} ${first.reason}); ` +
        "the other items are stored",
      { status: first.status, reason: first.reason, details: { failures } },
    );
  }

  /** The `refresh` query parameter of single-document writes under this store's policy. */
  writeQuery(): Record<string, string> {
    return { refresh: this.refresh };
  }

  /** Make everything written so far searchable. */
  async refreshIndex(index: string): Promise<void> {
    await this.request({ method: "POST", path: `/${encodeURIComponent(index)}/_refresh`, what: `refresh ${index}` });
  }

  /** Close the client's sockets. */
  async close(): Promise<void> {
    await this.closeClient();
  }
}

/** Which engine a node runs: Elasticsearch marks every answer with `X-elastic-product`; OpenSearch does not. */
export function engineFromAnswer(headers: Record<string, unknown>): Engine {
  const product = Object.entries(headers).find(([k]) => k.toLowerCase() === "x-elastic-product")?.[1];
  return product === "Elasticsearch" ? "elasticsearch" : "opensearch";
}

function secretsOf(o: ConnectionOptions): string[] {
  const out: string[] = [];
  const a = o.auth as Record<string, string> | undefined;
  if (a) for (const key of ["password", "apiKey", "bearer"]) if (a[key]) out.push(a[key] as string);
  for (const u of Array.isArray(o.url) ? o.url : [o.url]) {
    try {
      const parsed = new URL(u);
      if (parsed.password) out.push(decodeURIComponent(parsed.password), parsed.password);
    } catch {
      /* reported by validation */
    }
  }
  return out;
}

/** Check the options every factory shares; throws `errorClass` naming the problem. */
export function validateOptions(o: ConnectionOptions, errorClass: ErrorClass): void {
  const urls = Array.isArray(o?.url) ? o.url : [o?.url];
  if (urls.length === 0 || urls.some((u) => typeof u !== "string" || !/^https?:\/\//.test(u))) {
    throw new errorClass("`url` must be an http(s) URL of a node (or a list of them), e.g. http://127.0.0.1:9200");
  }
  if (typeof o.indexPrefix !== "string" || !INDEX_PREFIX.test(o.indexPrefix)) {
    throw new errorClass(
      `\`indexPrefix\` ${JSON.stringify(o.indexPrefix)} is not a valid index name prefix: use lowercase letters, ` +
        "digits, '.', '_' and '-', starting with a letter or digit",
    );
  }
  if (o.engine !== undefined && !["auto", "opensearch", "elasticsearch"].includes(o.engine)) {
    throw new errorClass(`\`engine\` must be "auto", "opensearch" or "elasticsearch", not ${JSON.stringify(o.engine)}`);
  }
  if (o.refresh !== undefined && !["wait_for", "true", "false"].includes(o.refresh)) {
    throw new errorClass(`\`refresh\` must be "wait_for", "true" or "false", not ${JSON.stringify(o.refresh)}`);
  }
}

/** Open a connection: validate the options, detect the engine if asked, create the official client. */
export async function connect(o: ConnectionOptions, errorClass: ErrorClass): Promise<Connection> {
  validateOptions(o, errorClass);
  const urls = Array.isArray(o.url) ? o.url : [o.url];
  const secrets = secretsOf(o);
  const policy: RetryPolicy = {
    retries: o.retry?.retries ?? 6,
    baseMs: o.retry?.baseMs ?? 100,
    capMs: o.retry?.capMs ?? 5000,
  };
  const timeout = o.requestTimeoutMs ?? 30000;
  const tls = o.tls ? { ca: o.tls.ca, rejectUnauthorized: o.tls.rejectUnauthorized ?? true } : undefined;
  const headers: Record<string, string> = {};
  if (o.auth && "apiKey" in o.auth) headers.authorization = `ApiKey ${o.auth.apiKey}`;
  if (o.auth && "bearer" in o.auth) headers.authorization = `Bearer ${o.auth.bearer}`;
  const basic = o.auth && "username" in o.auth ? { username: o.auth.username, password: o.auth.password } : undefined;

  // The OpenSearch client does no product check, so it can ask any node what it is.
  const os = await import("@opensearch-project/opensearch");
  const osClient = new os.Client({
    nodes: urls,
    auth: basic,
    ssl: tls,
    headers,
    maxRetries: 0,
    requestTimeout: timeout,
  });
  const osSend: Sender = async (p) => {
    const r = await osClient.transport.request(
      p.path === "/_bulk"
        ? { method: p.method, path: p.path, bulkBody: p.body as string, querystring: p.query }
        : { method: p.method, path: p.path, body: p.body as any, querystring: p.query },
      { ignore: ALL_ERROR_STATUSES, maxRetries: 0 },
    );
    return { status: r.statusCode ?? 0, body: r.body };
  };
  const probe = new Connection("opensearch", "", "true", osSend, errorClass, secrets, policy, async () => {});
  let engine: Engine;
  let version: string;
  {
    const what = `ask the node at ${urls.join(", ")} for its version`;
    const raw = await (async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await osClient.transport.request(
            { method: "GET", path: "/_nodes/_local", querystring: { filter_path: "nodes.*.version" } },
            { ignore: ALL_ERROR_STATUSES, maxRetries: 0 },
          );
        } catch (exc) {
          if (attempt >= policy.retries) {
            await osClient.close();
            const e = exc as Error;
            throw probe.error(`${what} failed: the node could not be reached (${e.name}: ${e.message}); is it running?`);
          }
          await new Promise((r) => setTimeout(r, backoffDelay(attempt, policy)));
        }
      }
    })();
    if ((raw.statusCode ?? 0) >= 400) {
      await osClient.close();
      const reason = serverReason(raw.body) ?? `HTTP ${raw.statusCode}`;
      const hint = raw.statusCode === 401 || raw.statusCode === 403 ? " (check `auth`)" : "";
      throw probe.error(`${what} failed: HTTP ${raw.statusCode} ${reason}${hint}`, { status: raw.statusCode ?? undefined, reason });
    }
    const detected = engineFromAnswer((raw.headers ?? {}) as Record<string, unknown>);
    engine = o.engine && o.engine !== "auto" ? o.engine : detected;
    if (o.engine && o.engine !== "auto" && o.engine !== detected) {
      await osClient.close();
      throw probe.error(`engine is set to "${o.engine}" but the node at ${urls.join(", ")} runs ${detected}; ` +
        `set engine to "${detected}" or "auto"`);
    }
    const nodes = Object.values((raw.body as any)?.nodes ?? {}) as { version?: string }[];
    version = nodes[0]?.version ?? "";
  }
  const major = Number.parseInt(version, 10);
  if (engine === "elasticsearch" && !(major >= 8)) {
    await osClient.close();
    throw probe.error(`Elasticsearch ${version} is not supported: reme-es-memorie needs Elasticsearch 8.x or 9.x`);
  }
  if (engine === "opensearch" && !(major >= 2)) {
    await osClient.close();
    throw probe.error(`OpenSearch ${version} is not supported: reme-es-memorie needs OpenSearch 2.x or 3.x`);
  }
  const refresh = o.refresh ?? "true";
  if (engine === "opensearch") {
    return new Connection(engine, version, refresh, osSend, errorClass, secrets, policy, () => osClient.close());
  }
  await osClient.close();
  const es = await import("@elastic/elasticsearch");
  const esClient = new es.Client({
    nodes: urls,
    auth: o.auth as any,
    tls,
    maxRetries: 0,
    requestTimeout: timeout,
  });
  const esSend: Sender = async (p) => {
    const isNdjson = p.path === "/_bulk";
    const r = await esClient.transport.request(
      isNdjson
        ? { method: p.method, path: p.path, bulkBody: p.body as string, querystring: p.query }
        : { method: p.method, path: p.path, body: p.body as any, querystring: p.query },
      { ignore: ALL_ERROR_STATUSES, maxRetries: 0, meta: true },
    );
    return { status: r.statusCode ?? 0, body: r.body };
  };
  return new Connection(engine, version, refresh, esSend, errorClass, secrets, policy, () => esClient.close());
}
