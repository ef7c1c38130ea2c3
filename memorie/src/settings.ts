/**
 * The cluster settings this package shares with the Python side (`reme_es/engine_settings.json`): the vector
 * mapping of each engine, the HNSW defaults, the retry policy (statuses, tries, backoff, deadlines), the cluster
 * check, the engine-detection signal, the k-NN candidate rule and the index-prefix rule. Both test suites check them
 * against `tests/unit/golden/engine_settings.json` and replay `tests/golden/behaviour_cases.json`.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url)); // dist/src

/** Where the data files are: dist/templates (built or packed), then the source folders of the repository. */
export const dataDirs: readonly string[] = [
  join(here, "..", "templates"),
  join(here, "..", "..", "templates"),
  join(here, "..", "..", "..", "reme_es"),
];

/** A JSON data file of this package, from the first of `dataDirs` that holds it. */
export function readDataFile(name: string): any {
  for (const dir of dataDirs) {
    try {
      return JSON.parse(readFileSync(join(dir, name), "utf8"));
    } catch (exc) {
      if ((exc as NodeJS.ErrnoException).code !== "ENOENT") throw exc;
    }
  }
  throw new Error(`${name} not found in ${dataDirs.join(" or ")}; run \`npm run build\``);
}

interface CallPolicy {
  tries: number;
  base_s: number;
  max_s: number;
  deadline_s: number;
  try_timeout_s: number;
}

interface EngineSettings {
  hnsw: { m: number; ef_construction: number };
  knn_candidates: { factor: number; min: number; max: number };
  knn_calibration: {
    target_recall: number;
    at: number;
    depth: number;
    sample: number;
    seed: number;
    probes: { dropout: number; noise: number }[];
    widths: number[];
    max_width: number;
    latency_budget_ms: number;
    min_docs: number;
    recalibrate_ratio: number;
    meta_key: string;
    bodies: { random_field: string; exact_per_at: number; space_type: string; painless: string };
  };
  refresh: { after_ms: number };
  retry: {
    statuses: number[];
    not_retried_types: string[];
    backoff: { jitter: [number, number] };
    request: CallPolicy;
    bulk: CallPolicy & { unanswered_item_status: number };
  };
  cluster_check: {
    idle_s: number;
    answers: { cannot_check: number[]; not_served: number[] };
    not_formed: { uuid: string };
    endpoint: { path: string; query: Record<string, string>; uuid_field: string };
    endpoint_query_by_engine: Record<"opensearch" | "elasticsearch", Record<string, string>>;
  };
  engine_detection: { request: { path: string }; field: string; present: "elasticsearch"; absent: "opensearch" };
  index_prefix: { pattern: string };
  vector_mapping: Record<"opensearch" | "elasticsearch", Record<string, unknown>>;
}

export const SETTINGS: EngineSettings = readDataFile("engine_settings.json");

/** How one kind of call is retried, in ms: retries after the first try, backoff base and cap, deadline, try timeout. */
export interface SharedPolicy {
  retries: number;
  baseMs: number;
  capMs: number;
  callTimeoutMs: number;
  requestTimeoutMs: number;
}

function policyOf(p: CallPolicy): SharedPolicy {
  return {
    retries: p.tries - 1,
    baseMs: p.base_s * 1000,
    capMs: p.max_s * 1000,
    callTimeoutMs: p.deadline_s * 1000,
    requestTimeoutMs: p.try_timeout_s * 1000,
  };
}

/** The shared retry policy of single requests and of bulk calls (`engine_settings.json` `retry`). */
export const RETRY = { request: policyOf(SETTINGS.retry.request), bulk: policyOf(SETTINGS.retry.bulk) } as const;

/**
 * The timeout of one bulk request (`retry.bulk.try_timeout_rule`): the shared bulk try timeout, or the request try
 * timeout in force when that is longer.
 */
export function bulkTryTimeoutMs(requestTimeoutMs: number): number {
  return Math.max(RETRY.bulk.requestTimeoutMs, requestTimeoutMs);
}

/** The jitter range the backoff multiplies by: [low, high). */
export const JITTER: readonly [number, number] = SETTINGS.retry.backoff.jitter;

/** The status a bulk item without an answer counts as (its request failed in transport): retried, reported with it. */
export const UNANSWERED_ITEM_STATUS: number = SETTINGS.retry.bulk.unanswered_item_status;

/**
 * The cluster check (`engine_settings.json` `cluster_check`): how long idle before a check, its request, the statuses
 * that mean the role may not read the cluster state (`cannotCheck`: carry on), those that mean the cluster state is
 * not served (`notServed`: at open, the store opens unchecked), and the UUID of a cluster that has not
 * formed yet (`notFormed`).
 */
export const CLUSTER_CHECK = {
  idleMs: SETTINGS.cluster_check.idle_s * 1000,
  cannotCheck: SETTINGS.cluster_check.answers.cannot_check,
  notServed: SETTINGS.cluster_check.answers.not_served,
  notFormed: SETTINGS.cluster_check.not_formed.uuid,
  endpoint: SETTINGS.cluster_check.endpoint,
  queryByEngine: SETTINGS.cluster_check.endpoint_query_by_engine,
} as const;

/** The request whose answer tells the engine, and the engine a `_nodes` entry comes from (by the shared signal). */
export const ENGINE_DETECTION = { path: SETTINGS.engine_detection.request.path, field: SETTINGS.engine_detection.field };
export function engineOfNode(node: Record<string, unknown>): "opensearch" | "elasticsearch" {
  const rule = SETTINGS.engine_detection;
  return Object.hasOwn(node, rule.field) ? rule.present : rule.absent;
}

export const HNSW = { m: SETTINGS.hnsw.m, efConstruction: SETTINGS.hnsw.ef_construction } as const;

/**
 * HNSW build settings of a new Memorie vector index: m 32, ef_construction 150, not the shared m 16 / 64 the ReMe
 * store keeps. Measured on Zipf bag-of-words vectors at 100k (docs/memorie-performance.md): a graph of m 16 / 64
 * levels off at recall@10 ~0.96 on one segment however wide the search; this one reaches 0.975 at 1,000 candidates
 * (8.4 ms p50) and 0.978 at 250 on the six segments a load leaves. The price: vector loads take ~75% longer.
 */
export const VECTOR_HNSW = { m: 32, efConstruction: 150 } as const;

export const INDEX_PREFIX = new RegExp(SETTINGS.index_prefix.pattern);

const RETRIED = new Set(SETTINGS.retry.statuses);

/** Statuses worth sending again: the node was busy or failing, not the request wrong. */
export function isRetryableStatus(status: number | undefined): boolean {
  return status !== undefined && RETRIED.has(status);
}

const NOT_RETRIED_TYPES = new Set(SETTINGS.retry.not_retried_types);

/** The error type of an answer's (or a bulk item's) error body: `error.type`, else its first root cause's. */
export function errorType(body: unknown): string | undefined {
  const error = (body as { error?: { type?: unknown; root_cause?: { type?: unknown }[] } } | undefined)?.error;
  if (!error || typeof error !== "object") return undefined;
  const type = error.type ?? error.root_cause?.[0]?.type;
  return typeof type === "string" ? type : undefined;
}

/**
 * A refusal by the cluster's security (`retry.not_retried_types`, or a 403; a 401 is the credentials themselves): no
 * retry mends it, whatever its status
 * (OpenSearch answers an update under document-level security with a 500 `security_exception`).
 */
export function isRefusal(status: number | undefined, body: unknown): boolean {
  if (status === 401) return false; // the credentials, not their grant: said as such where the store connects
  const type = errorType(body);
  return status === 403 || (type !== undefined && NOT_RETRIED_TYPES.has(type));
}

/** An answer worth sending again: a retried status that is not a refusal by the cluster's security. */
export function isRetriedAnswer(status: number | undefined, body: unknown): boolean {
  return isRetryableStatus(status) && !isRefusal(status, body);
}

/** A refusal said plainly: the cluster's security refused, and why; `doing` is what the role may not do. */
export function refusalReason(reason: string, doing: string): string {
  return `refused by the cluster's security: ${reason}; this user's role may not ${doing} (not retried: a retry meets the same refusal)`;
}

/** How many candidates an HNSW search keeps per segment for the k nearest: factor × k, within [min, max]. */
export function knnCandidates(k: number): number {
  const rule = SETTINGS.knn_candidates;
  return Math.min(rule.max, Math.max(rule.min, rule.factor * k));
}

/** The vector field mapping of one engine with its placeholders (`$dims`, `$m`, `$ef_construction`) filled. */
export function vectorMapping(
  engine: "opensearch" | "elasticsearch",
  dims: number,
  m: number = HNSW.m,
  efConstruction: number = HNSW.efConstruction,
): Record<string, unknown> {
  const values: Record<string, number> = { $dims: dims, $m: m, $ef_construction: efConstruction };
  const fill = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(fill);
    if (node !== null && typeof node === "object") {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, fill(v)]));
    }
    return typeof node === "string" && Object.hasOwn(values, node) ? values[node] : node;
  };
  return fill(SETTINGS.vector_mapping[engine]) as Record<string, unknown>;
}
