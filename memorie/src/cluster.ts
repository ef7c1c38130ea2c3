/**
 * The cluster a store opened, and when to check that its URL still reaches that cluster.
 *
 * A node restarted on another port leaves its old port free; another node can take it, and a client that kept
 * the old URL then talks to another cluster. Requiring the alias on writes catches this only when the other
 * cluster lacks the store's indices. So the store records the cluster UUID at open and checks it again, without
 * an extra request per call, by the rule the Python side follows too (`engine_settings.json` `cluster_check`):
 * before the first request after `intervalMs` without an answered request, after a connection failure (a node
 * went away), and when an index turns out to be missing.
 */
import { CLUSTER_CHECK } from "./settings.js";
import type { Engine } from "./types.js";

/** The UUID in a cluster-check answer (the shared `uuid_field`), or undefined when there is none. */
export function clusterUuidOf(body: unknown): string | undefined {
  let node: unknown = body;
  for (const key of CLUSTER_CHECK.endpoint.uuid_field.split(".")) {
    node = node !== null && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined;
  }
  return typeof node === "string" && node !== "" ? node : undefined;
}

/**
 * The request that reads the cluster UUID (the shared endpoint): the cluster state's metadata, restricted to this
 * store's own indices (`<prefix>-memorie-*`, possibly none) so that the answer stays small on a large cluster. On
 * OpenSearch `local`, so the node answers from its own copy of the cluster state without asking the cluster manager;
 * Elasticsearch 9 deprecates `local` there. (`GET /` would be cheaper, but the Elasticsearch integ-test
 * distribution answers it with 405.)
 */
export function identityRequest(prefix: string, engine: Engine): { path: string; query: Record<string, string> } {
  const { path, query } = CLUSTER_CHECK.endpoint;
  const indices = encodeURIComponent(`${prefix}-memorie-*`);
  return { path: path.replace("{indices}", indices), query: { ...query, ...CLUSTER_CHECK.queryByEngine[engine] } };
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

  /** Whether the next request should check the cluster first: in doubt, or idle for `intervalMs`. */
  due(): boolean {
    return this.suspect || this.now() - this.checkedAt >= this.intervalMs;
  }

  /** A request was answered (by the cluster confirmed when in doubt): the idle time starts again. */
  seen(): void {
    if (!this.suspect) this.checkedAt = this.now();
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
