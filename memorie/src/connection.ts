/**
 * One node connection per store: the official client of the detected engine, requests with retries, bulk
 * with per-item retries, and errors mapped to the store's error class without secrets.
 *
 * Both clients are driven through `transport.request` with raw REST paths, so that request bodies come from
 * the pure builders in `dialect.ts` and every engine difference stays in one place. The clients' own retries
 * are off (`maxRetries: 0`): this module retries 429, 500, 502, 503, 504 (the shared settings) and connection failures with exponential backoff.
 */
import { ClusterGuard, clusterUuidOf, identityRequest } from "./cluster.js";
import { type ErrorClass, serverReason } from "./errors.js";
import { INDEX_PREFIX } from "./settings.js";
import {
  Connection,
  DEFAULT_CLUSTER_CHECK_MS,
  DEFAULT_LIMITS,
  type Limits,
  type RetryPolicy,
  type SendParams,
} from "./transport.js";
import type { Engine, RefreshPolicy } from "./types.js";

export {
  backoffDelay,
  type BulkFailure,
  type BulkOp,
  Connection,
  isRetryableStatus,
  type RequestParams,
  type Response,
  type RetryPolicy,
} from "./transport.js";

export type { Engine, RefreshPolicy } from "./types.js";
export type Auth = { username: string; password: string } | { apiKey: string } | { bearer: string };

/** Options every factory takes. */
export interface ConnectionOptions {
  /** One node URL or several of one cluster, e.g. the `url` that `reme-es server start --json` prints. */
  url: string | string[];
  /** Prefix of this store's indices (1-200 lowercase letters, digits, `_`, `-`); aliases are `<prefix>-memorie-*`. */
  indexPrefix: string;
  /** `auto` (default) asks the node which engine it runs. */
  engine?: "auto" | Engine;
  auth?: Auth;
  /**
   * When a write becomes searchable. `deferred` (default): writes do not refresh; the store refreshes an index
   * once before its next read that follows writes (read-your-writes, what Memorie's engine assumes) and in the
   * background `refreshAfterMs` after the last write (see visibility.ts). `true`: each write refreshes the shard.
   * `wait_for`: each write waits for the next scheduled refresh (at most the index's 1 s refresh interval).
   * `false`: no wait and no refresh; call `refresh()` after a bulk load.
   */
  refresh?: RefreshPolicy;
  /** Under `deferred`: the background refresh runs this many ms after the last write (default 1000). */
  refreshAfterMs?: number;
  /** TLS for https nodes: a CA bundle (PEM) and whether to verify the certificate (default true). */
  tls?: { ca?: string | Buffer; rejectUnauthorized?: boolean };
  /** Retries of 429/500/502/503/504/connection failures: attempts after the first (default 6), backoff base and cap in ms. */
  retry?: { retries?: number; baseMs?: number; capMs?: number };
  /** Timeout of one try of a request in ms (default 30000). */
  requestTimeoutMs?: number;
  /**
   * Total time of one call in ms, its retries and backoff included (default 60000; a bulk page and the retries of
   * its items count as one call). A node that accepts connections and never answers fails a call after this long.
   */
  callTimeoutMs?: number;
  /**
   * How often to check that `url` still reaches the cluster the store opened, in ms (default 5000): before the
   * first request after this long without a check. It is also checked after a connection failure and when an
   * index is missing. One small request (`GET /_cluster/state/metadata/<prefix>-memorie-*`) per check.
   */
  clusterCheckMs?: number;
  /**
   * Primary shards of each index this store creates (default 1, the templates'). Fixed at creation: an existing
   * index with another number makes the factory fail (say what to do), rather than be used as it is.
   */
  shards?: number;
  /**
   * Replicas of each index this store creates: `number_of_replicas` N with `auto_expand_replicas` off. Default: no
   * number, `auto_expand_replicas: "0-1"` (one node: no replica, the index stays green; two or more: one replica of
   * every shard). An existing index with other replicas makes the factory fail with the request that changes them.
   */
  replicas?: number;
}

const ALL_ERROR_STATUSES = Array.from({ length: 200 }, (_, i) => 400 + i);

/** Which engine a node runs: Elasticsearch marks every answer with `X-elastic-product`; OpenSearch does not. */
export function engineFromAnswer(headers: Record<string, unknown>): Engine {
  const product = Object.entries(headers).find(([k]) => k.toLowerCase() === "x-elastic-product")?.[1];
  return product === "Elasticsearch" ? "elasticsearch" : "opensearch";
}

function secretsOf(o: ConnectionOptions): string[] {
  const out: string[] = [];
  const basic = (user: string, password: string) => Buffer.from(`${user}:${password}`).toString("base64");
  const a = o.auth as Record<string, string> | undefined;
  if (a) for (const key of ["password", "apiKey", "bearer"]) if (a[key]) out.push(a[key] as string);
  if (a?.username !== undefined && a.password) out.push(basic(a.username, a.password));
  for (const u of Array.isArray(o.url) ? o.url : [o.url]) {
    try {
      const parsed = new URL(u);
      if (parsed.password) {
        const [user, password] = [decodeURIComponent(parsed.username), decodeURIComponent(parsed.password)];
        out.push(password, parsed.password, basic(user, password));
      }
    } catch {
      /* reported by validation */
    }
  }
  return out;
}

/** A value for an error message: JSON where that says what it is (a string is quoted), else its type. */
function describe(v: unknown): string {
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  return JSON.stringify(v) ?? typeof v;
}

/** The shards and replicas of the indices a store creates, from its options. */
export function layoutOf(o: ConnectionOptions): { shards?: number; replicas?: number } {
  return { shards: o.shards, replicas: o.replicas };
}

/** Check the options every factory shares; throws `errorClass` naming the problem. */
export function validateOptions(o: ConnectionOptions, errorClass: ErrorClass): void {
  const urls = Array.isArray(o?.url) ? o.url : [o?.url];
  if (urls.length === 0 || urls.some((u) => typeof u !== "string" || !/^https?:\/\//.test(u))) {
    throw new errorClass("`url` must be an http(s) URL of a node (or a list of them), e.g. http://127.0.0.1:9200");
  }
  if (typeof o.indexPrefix !== "string" || !INDEX_PREFIX.test(o.indexPrefix)) {
    throw new errorClass(
      `\`indexPrefix\` ${JSON.stringify(o.indexPrefix)} is not a valid index name prefix: use 1-200 characters of ` +
        "lowercase letters, digits, '-' and '_', starting with a letter or digit",
    );
  }
  if (o.engine !== undefined && !["auto", "opensearch", "elasticsearch"].includes(o.engine)) {
    throw new errorClass(`\`engine\` must be "auto", "opensearch" or "elasticsearch", not ${JSON.stringify(o.engine)}`);
  }
  if (o.refresh !== undefined && !["deferred", "wait_for", "true", "false"].includes(o.refresh)) {
    throw new errorClass(
      `\`refresh\` must be "deferred", "wait_for", "true" or "false", not ${JSON.stringify(o.refresh)}`,
    );
  }
  const after = o.refreshAfterMs;
  if (after !== undefined && (typeof after !== "number" || !Number.isFinite(after) || after < 0)) {
    throw new errorClass(`\`refreshAfterMs\` must be a number of milliseconds >= 0, not ${JSON.stringify(after)}`);
  }
  for (const [key, min, hint] of [
    ["shards", 1, "1 for one primary shard per index (the default), more to spread a large index over nodes"],
    ["replicas", 0, "0 for none, 1 for one copy of every shard on another node; leave it out for auto_expand_replicas 0-1"],
  ] as const) {
    const v = o[key];
    if (v !== undefined && (typeof v !== "number" || !Number.isInteger(v) || v < min || v > 1024)) {
      throw new errorClass(`\`${key}\` must be a whole number from ${min} to 1024, not ${describe(v)}: ${hint}`);
    }
  }
  for (const key of ["requestTimeoutMs", "callTimeoutMs", "clusterCheckMs"] as const) {
    const v = o[key];
    if (v !== undefined && (typeof v !== "number" || Number.isNaN(v) || v <= 0)) {
      throw new errorClass(`\`${key}\` must be a number of milliseconds > 0 (Infinity: never), not ${JSON.stringify(v)}`);
    }
  }
}

/** The node's version from `GET /_nodes/_local` (OpenSearch's compatibility mode can make `GET /` say 7.10.2). */
const VERSION_REQUEST = { path: "/_nodes/_local", query: { filter_path: "nodes.*.version" } };

/**
 * Ask the node what it is (engine, version) and which cluster it belongs to; throws a message that says what
 * the server at the URL is not.
 */
async function identify(
  probe: Connection,
  o: ConnectionOptions,
): Promise<{ engine: Engine; version: string; uuid: string | undefined }> {
  const where = (Array.isArray(o.url) ? o.url : [o.url]).join(", ");
  const params = { method: "GET" as const, ...VERSION_REQUEST, accept: [401, 403, 404], what: `ask ${where} for its version` };
  const raw = await probe.request(params);
  if (raw.status >= 400) {
    const reason = serverReason(raw.body);
    const hint = raw.status === 404 ? "; is it an OpenSearch or Elasticsearch node? check `url`" : " (check `auth`)";
    throw probe.error(`${params.what} failed: HTTP ${raw.status} ${reason ?? "(no error body)"}${hint}`, {
      status: raw.status,
      reason: reason ?? `HTTP ${raw.status}`,
    });
  }
  const nodes = Object.values((raw.body as any)?.nodes ?? {}) as { version?: unknown }[];
  const version = nodes[0]?.version;
  if (typeof version !== "string" || !/^\d+\./.test(version)) {
    const text = typeof raw.body === "string" ? raw.body : (JSON.stringify(raw.body) ?? "");
    const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 120);
    throw probe.error(
      `${where} does not answer like an OpenSearch or Elasticsearch node: GET /_nodes/_local gave HTTP ${raw.status} ` +
        `without a node version (${excerpt ? JSON.stringify(excerpt) : "empty body"}); check \`url\``,
    );
  }
  const detected = engineFromAnswer(raw.headers ?? {});
  if (o.engine && o.engine !== "auto" && o.engine !== detected) {
    throw probe.error(`engine is set to "${o.engine}" but the node at ${where} runs ${detected}; ` +
      `set engine to "${detected}" or "auto"`);
  }
  const major = Number.parseInt(version, 10);
  if (detected === "elasticsearch" && major < 8) {
    throw probe.error(`Elasticsearch ${version} is not supported: reme-es-memorie needs Elasticsearch 8.x or 9.x`);
  }
  if (detected === "opensearch" && major < 2) {
    throw probe.error(`OpenSearch ${version} is not supported: reme-es-memorie needs OpenSearch 2.x or 3.x`);
  }
  const identity = identityRequest(o.indexPrefix, detected);
  const state = await probe.request({ method: "GET", ...identity, what: `read the cluster UUID of ${where}` });
  return { engine: detected, version, uuid: clusterUuidOf(state.body) };
}
/** Open a connection: validate the options, detect the engine, record the cluster, create the official client. */
export async function connect(o: ConnectionOptions, errorClass: ErrorClass): Promise<Connection> {
  validateOptions(o, errorClass);
  const urls = Array.isArray(o.url) ? o.url : [o.url];
  const retry: RetryPolicy = {
    retries: o.retry?.retries ?? 6,
    baseMs: o.retry?.baseMs ?? 100,
    capMs: o.retry?.capMs ?? 5000,
  };
  const limits: Limits = {
    requestTimeoutMs: o.requestTimeoutMs ?? DEFAULT_LIMITS.requestTimeoutMs,
    callTimeoutMs: o.callTimeoutMs ?? DEFAULT_LIMITS.callTimeoutMs,
  };
  const tls = o.tls ? { ca: o.tls.ca, rejectUnauthorized: o.tls.rejectUnauthorized ?? true } : undefined;
  const headers: Record<string, string> = {};
  if (o.auth && "apiKey" in o.auth) headers.authorization = `ApiKey ${o.auth.apiKey}`;
  if (o.auth && "bearer" in o.auth) headers.authorization = `Bearer ${o.auth.bearer}`;
  const basic = o.auth && "username" in o.auth ? { username: o.auth.username, password: o.auth.password } : undefined;
  const common = { errorClass, secrets: secretsOf(o), retry, limits, urls, refresh: o.refresh ?? "deferred", refreshAfterMs: o.refreshAfterMs } as const;

  // The OpenSearch client does no product check, so it can ask any node what it is.
  const os = await import("@opensearch-project/opensearch");
  const osClient = new os.Client({ nodes: urls, auth: basic, ssl: tls, headers, maxRetries: 0, requestTimeout: limits.requestTimeoutMs });
  const osSend = async (p: SendParams) => {
    const r = await osClient.transport.request(
      p.path === "/_bulk"
        ? { method: p.method, path: p.path, bulkBody: p.body as string, querystring: p.query }
        : { method: p.method, path: p.path, body: p.body as any, querystring: p.query },
      { ignore: ALL_ERROR_STATUSES, maxRetries: 0, requestTimeout: p.timeoutMs },
    );
    return { status: r.statusCode ?? 0, body: r.body, headers: (r.headers ?? {}) as Record<string, unknown> };
  };
  let found;
  try {
    found = await identify(new Connection({ ...common, engine: "opensearch", version: "", send: osSend }), o);
  } catch (exc) {
    await osClient.close();
    throw exc;
  }
  const cluster = found.uuid === undefined ? undefined : {
    guard: new ClusterGuard(found.uuid, o.clusterCheckMs ?? DEFAULT_CLUSTER_CHECK_MS),
    identity: identityRequest(o.indexPrefix, found.engine),
  };
  const parts = { ...common, engine: found.engine, version: found.version, cluster };
  if (found.engine === "opensearch") return new Connection({ ...parts, send: osSend, close: () => osClient.close() });
  await osClient.close();
  const es = await import("@elastic/elasticsearch");
  const esClient = new es.Client({ nodes: urls, auth: o.auth as any, tls, maxRetries: 0, requestTimeout: limits.requestTimeoutMs });
  const esSend = async (p: SendParams) => {
    const r = await esClient.transport.request(
      p.path === "/_bulk"
        ? { method: p.method, path: p.path, bulkBody: p.body as string, querystring: p.query }
        : { method: p.method, path: p.path, body: p.body as any, querystring: p.query },
      { ignore: ALL_ERROR_STATUSES, maxRetries: 0, meta: true, requestTimeout: p.timeoutMs },
    );
    return { status: r.statusCode ?? 0, body: r.body };
  };
  return new Connection({ ...parts, send: esSend, close: () => esClient.close() });
}
