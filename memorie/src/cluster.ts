/**
 * The cluster a store opened, and when to check that its URL still reaches that cluster.
 *
 * A node restarted on another port leaves its old port free; another node can take it, and a client that kept
 * the old URL then talks to another cluster. Requiring the alias on writes catches this only when the other
 * cluster lacks the store's indices. So the store records the cluster UUID at open and checks it again, without
 * an extra request per call: before the first request after `intervalMs` without a check, after a connection
 * failure (a node went away), and when an index turns out to be missing.
 */
import type { Engine } from "./types.js";

/** The UUID in a cluster-state answer (`metadata.cluster_uuid`), or undefined when there is none. */
export function clusterUuidOf(body: unknown): string | undefined {
  const uuid = (body as { metadata?: { cluster_uuid?: unknown } } | null)?.metadata?.cluster_uuid;
  return typeof uuid === "string" && uuid !== "" ? uuid : undefined;
}

/**
 * The request that reads the cluster UUID: the cluster state's metadata, restricted to this store's own indices
 * (`<prefix>-memorie-*`, possibly none) so that the answer stays small on a large cluster. On OpenSearch `local`, so
 * the node answers from its own copy of the cluster state without asking the master; Elasticsearch 9 ignores
 * `local` there and deprecates it. (`GET /` would be cheaper, but the Elasticsearch integ-test distribution answers
 * it with 405.)
 */
export function identityRequest(prefix: string, engine: Engine): { path: string; query: Record<string, string> } {
  const query: Record<string, string> = { filter_path: "metadata.cluster_uuid" };
  if (engine === "opensearch") query.local = "true";
  return { path: `/_cluster/state/metadata/${encodeURIComponent(`${prefix}-memorie-*`)}`, query };
}

/** Not yet known: a node reports `_na_` before its cluster has formed. */
const UNKNOWN = "_na_";

export class ClusterGuard {
  private checkedAt: number;
  private suspect = false;

  constructor(
    private uuid_: string,
    readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.checkedAt = now();
  }

  /** The UUID of the cluster the store opened. */
  get uuid(): string {
    return this.uuid_;
  }

  /** Whether the next request should check the cluster first. */
  due(): boolean {
    return this.suspect || this.now() - this.checkedAt >= this.intervalMs;
  }

  /** A connection failed: the node may have gone, so check before the next request. */
  suspectChange(): void {
    this.suspect = true;
  }

  /** Record an answered UUID; false when it is another cluster's (the guard then stays suspicious). */
  confirm(uuid: string): boolean {
    if (this.uuid_ === UNKNOWN) this.uuid_ = uuid;
    if (uuid !== this.uuid_ && uuid !== UNKNOWN) {
      this.suspect = true;
      return false;
    }
    this.suspect = false;
    this.checkedAt = this.now();
    return true;
  }
}
