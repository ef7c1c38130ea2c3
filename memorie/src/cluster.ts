/**
 * The cluster a store opened, and when to check that its URL still reaches that cluster.
 *
 * A node restarted on another port leaves its old port free; another node can take it, and a client that kept
 * the old URL then talks to another cluster. Requiring the alias on writes catches this only when the other
 * cluster lacks the store's indices. So the store records the cluster UUID at open and checks it again, without
 * an extra request per call, by the rule the Python side follows too (`engine_settings.json` `cluster_check`):
 * before the first request after `intervalMs` without an answered request, after a connection failure (a node
 * went away), and when an index turns out to be missing.
 *
 * What an answer means is the shared data too (`cluster_check.answers`, `cluster_check.not_formed`): a role that may
 * not read the cluster state (401/403) cannot check and carries on; a retried status fails the try; any other status,
 * or an answer without a UUID, fails the call, except at open, where a 404 (`not_served`) or an answer without a UUID
 * opens the store unchecked (`OPENS_UNCHECKED`, `openedUuid`). A store that opened on `_na_` (a cluster not formed yet) checks before every try until it adopts
 * the first real UUID. `checkAnswer` and `compareUuid` are those rules, checked against the golden file the Python
 * tests read too.
 */
import { CLUSTER_CHECK, isRetryableStatus } from "./settings.js";
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

/** Not yet known: a node reports `_na_` before its cluster has formed (the shared `not_formed.uuid`). */
const NOT_FORMED = CLUSTER_CHECK.notFormed;

/**
 * What a check answered with an error status means (`cluster_check.answers`): `carry_on` (the role may not read the
 * cluster state: the store cannot tell, and goes on), `retry` (the try failed) or `fail` (the call fails).
 */
export function checkAnswer(status: number): "carry_on" | "retry" | "fail" {
  if (CLUSTER_CHECK.cannotCheck.includes(status)) return "carry_on";
  return isRetryableStatus(status) ? "retry" : "fail";
}

/**
 * What a check's UUID means for the recorded one: the same cluster, another one (or an answer without a UUID,
 * `answers.no_uuid`), or the first real UUID after `_na_`.
 */
export function compareUuid(recorded: string, answered: string | null | undefined): "same" | "moved" | "adopt" {
  if (answered === null || answered === undefined) return "moved";
  if (answered === NOT_FORMED || answered === recorded) return "same";
  return recorded === NOT_FORMED ? "adopt" : "moved";
}

/** The statuses of the check at open that open the store unchecked: the role may not ask, or the state is not served. */
export const OPENS_UNCHECKED: readonly number[] = [...CLUSTER_CHECK.cannotCheck, ...CLUSTER_CHECK.notServed];

/**
 * The UUID a store records from the check's answer when it opens (an error status other than `OPENS_UNCHECKED` has
 * failed the open already): none when it cannot check, the state is not served, or the answer tells none.
 */
export function openedUuid(answer: { status: number; body: unknown }): string | undefined {
  return answer.status >= 400 ? undefined : clusterUuidOf(answer.body);
}

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

  /** Whether the next request should check the cluster first: in doubt, idle for `intervalMs`, or not formed yet. */
  due(): boolean {
    return this.suspect || this.uuid_ === NOT_FORMED || this.now() - this.checkedAt >= this.intervalMs;
  }

  /** A request was answered (by the cluster confirmed when in doubt): the idle time starts again. */
  seen(): void {
    if (!this.suspect) this.checkedAt = this.now();
  }

  /** A connection failed: the node may have gone, so check before the next request. */
  suspectChange(): void {
    this.suspect = true;
  }

  /**
   * Record an answered UUID (the first real one after `_na_` is adopted); false when it is another cluster's (the
   * guard then stays suspicious).
   */
  confirm(uuid: string): boolean {
    const verdict = compareUuid(this.uuid_, uuid);
    if (verdict === "moved") {
      this.suspect = true;
      return false;
    }
    if (verdict === "adopt") this.uuid_ = uuid;
    this.passed();
    return true;
  }

  /** A check passed, or could not tell (the role may not read the cluster state): the idle time starts again. */
  passed(): void {
    this.suspect = false;
    this.checkedAt = this.now();
  }
}
