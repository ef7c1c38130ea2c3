/**
 * One node connection per store: the official client of the detected engine, requests with retries, bulk
 * with per-item retries, and errors mapped to the store's error class without secrets.
 *
 * Both clients are driven through `transport.request` with raw REST paths, so that request bodies come from
 * the pure builders in `dialect.ts` and every engine difference stays in one place. The clients' own retries
 * are off (`maxRetries: 0`): `transport.ts` retries under the policy shared with the Python side
 * (`engine_settings.json` `retry`: the statuses, connection failures, tries, backoff and deadlines).
 */
import { ClusterGuard, identityRequest, OPENS_UNCHECKED, openedUuid } from "./cluster.js";
import { type ClientSender, dialectOf, ENGINES, type SenderOptions } from "./engine-dialect.js";
import { type ErrorClass, serverReason } from "./errors.js";
import { bulkTryTimeoutMs, CLUSTER_CHECK, ENGINE_DETECTION, engineOfNode, INDEX_PREFIX, RETRY } from "./settings.js";
import { type BulkLimits, Connection, type Limits, type RetryPolicy } from "./transport.js";
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
  /**
   * Retries of the shared retried statuses and of connection failures: attempts after the first, backoff base and cap
   * in ms. Default: the shared policy (`engine_settings.json` `retry`; requests 6 retries from 100 ms up to 5 s, bulk
   * calls 8 from 200 ms up to 10 s); values given here apply to both.
   */
  retry?: { retries?: number; baseMs?: number; capMs?: number };
  /**
   * Timeout of one try of a request in ms (default: the shared `try_timeout_s`, 30 s). A bulk request waits the
   * shared bulk `try_timeout_s` (30 s), or this when it is longer.
   */
  requestTimeoutMs?: number;
  /**
   * Total time of one call in ms, its retries and backoff included (default: the shared `deadline_s`, 60 s for a
   * request and 120 s for a bulk page and the retries of its items; a value given here applies to both). A node that
   * accepts connections and never answers fails a call after this long.
   */
  callTimeoutMs?: number;
  /**
   * How long a store may be idle before it checks that `url` still reaches the cluster it opened, in ms (default:
   * the shared `cluster_check.idle_s`, 10 s): before the first request after this long without an answered one. It
   * is also checked after a connection failure and when an index is missing. One small request
   * (`GET /_cluster/state/metadata/<prefix>-memorie-*`) per check.
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

/** Which engine a node runs, by the signal shared with the Python side (`engine_settings.json` `engine_detection`):
 * Elasticsearch nodes report `build_flavor` in their `_nodes` entry, OpenSearch nodes do not. */
export function engineFromNode(node: Record<string, unknown>): Engine {
  return engineOfNode(node);
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
  if (o.engine !== undefined && o.engine !== "auto" && !ENGINES.includes(o.engine)) {
    const named = ENGINES.map((e) => `"${e}"`).join(" or ");
    throw new errorClass(`\`engine\` must be "auto", ${named}, not ${JSON.stringify(o.engine)}`);
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

/** The node's version and engine from `GET /_nodes/_local` (OpenSearch's compatibility mode can make `GET /` say
 * 7.10.2, and the Elasticsearch integ-test node answers `GET /` with 405). */
const VERSION_REQUEST = {
  path: ENGINE_DETECTION.path,
  query: { filter_path: `nodes.*.version,nodes.*.${ENGINE_DETECTION.field}` },
};

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
  const nodes = Object.values((raw.body as any)?.nodes ?? {}) as Record<string, unknown>[];
  const version = nodes[0]?.version;
  if (typeof version !== "string" || !/^\d+\./.test(version)) {
    const text = typeof raw.body === "string" ? raw.body : (JSON.stringify(raw.body) ?? "");
    const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 120);
    throw probe.error(
      `${where} does not answer like an OpenSearch or Elasticsearch node: GET /_nodes/_local gave HTTP ${raw.status} ` +
        `without a node version (${excerpt ? JSON.stringify(excerpt) : "empty body"}); check \`url\``,
    );
  }
  const detected = engineFromNode(nodes[0] as Record<string, unknown>);
  if (o.engine && o.engine !== "auto" && o.engine !== detected) {
    throw probe.error(`engine is set to "${o.engine}" but the node at ${where} runs ${detected}; ` +
      `set engine to "${detected}" or "auto"`);
  }
  const unsupported = dialectOf(detected).unsupported(version);
  if (unsupported) throw probe.error(unsupported);
  // A role that may not read the cluster state, or a server that does not serve it (`OPENS_UNCHECKED`), opens the
  // store unchecked; any other error status fails the open.
  const identity = identityRequest(o.indexPrefix, detected);
  const what = `read the cluster UUID of ${where}`;
  const state = await probe.request({ method: "GET", ...identity, accept: [...OPENS_UNCHECKED], what });
  return { engine: detected, version, uuid: openedUuid(state) };
}
export type { SenderOptions } from "./engine-dialect.js";

/** A sender through the official client of `engine` (its dialect's), and how to close it. */
export async function openSender(engine: Engine, urls: string[], o: SenderOptions): Promise<ClientSender> {
  return dialectOf(engine).openSender(urls, o);
}

/** The retry policies and limits of a connection: the shared defaults, replaced by the options given. */
export function policiesOf(o: ConnectionOptions): { retry: RetryPolicy; limits: Limits; bulk: BulkLimits } {
  const pick = (shared: RetryPolicy): RetryPolicy => ({
    retries: o.retry?.retries ?? shared.retries,
    baseMs: o.retry?.baseMs ?? shared.baseMs,
    capMs: o.retry?.capMs ?? shared.capMs,
  });
  const requestTimeoutMs = o.requestTimeoutMs ?? RETRY.request.requestTimeoutMs;
  return {
    retry: pick(RETRY.request),
    limits: { requestTimeoutMs, callTimeoutMs: o.callTimeoutMs ?? RETRY.request.callTimeoutMs },
    bulk: {
      retry: pick(RETRY.bulk),
      callTimeoutMs: o.callTimeoutMs ?? RETRY.bulk.callTimeoutMs,
      requestTimeoutMs: bulkTryTimeoutMs(requestTimeoutMs),
    },
  };
}

/** Open a connection: validate the options, detect the engine, record the cluster, create the official client. */
export async function connect(o: ConnectionOptions, errorClass: ErrorClass): Promise<Connection> {
  validateOptions(o, errorClass);
  const urls = Array.isArray(o.url) ? o.url : [o.url];
  const { retry, limits, bulk } = policiesOf(o);
  const senderOptions = { auth: o.auth, tls: o.tls, requestTimeoutMs: limits.requestTimeoutMs };
  const common = {
    errorClass, secrets: secretsOf(o), retry, limits, bulk, urls, refresh: o.refresh ?? "deferred", refreshAfterMs: o.refreshAfterMs,
  } as const;
  // the probe's client can ask any node what it is (`EngineDialect.openSender`); it stays if the node runs its engine
  const prober = dialectOf("opensearch");
  const probe = await prober.openSender(urls, senderOptions);
  let found;
  try {
    found = await identify(new Connection({ ...common, engine: "opensearch", version: "", send: probe.send }), o);
  } catch (exc) {
    await probe.close();
    throw exc;
  }
  const cluster = found.uuid === undefined ? undefined : {
    guard: new ClusterGuard(found.uuid, o.clusterCheckMs ?? CLUSTER_CHECK.idleMs),
    identity: identityRequest(o.indexPrefix, found.engine),
  };
  const parts = { ...common, engine: found.engine, version: found.version, cluster };
  if (found.engine === prober.engine) return new Connection({ ...parts, ...probe });
  await probe.close();
  return new Connection({ ...parts, ...(await dialectOf(found.engine).openSender(urls, senderOptions)) });
}
