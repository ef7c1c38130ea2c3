/**
 * Typed requests of snapshots and restores (snapshot.ts, restore.ts): repositories, snapshots, the restore of a
 * snapshot's indices under other names, and the wait for it. The REST paths and the answers' layout are here.
 */
import type { Connection } from "./transport.js";

const q = encodeURIComponent;

export interface SnapshotInfo {
  snapshot: string;
  /** SUCCESS, PARTIAL, FAILED, IN_PROGRESS, INCOMPATIBLE. */
  state: string;
  indices: string[];
  /** total, successful, failed. */
  shards: Record<string, number>;
  seconds: number;
}

function infoOf(s: { snapshot: string; state?: string; indices?: string[]; shards?: Record<string, number>; duration_in_millis?: number }): SnapshotInfo {
  return {
    snapshot: s.snapshot,
    state: s.state ?? "",
    indices: [...(s.indices ?? [])].sort(),
    shards: s.shards ?? {},
    seconds: (s.duration_in_millis ?? 0) / 1000,
  };
}

/** The snapshot as the cluster describes it; a missing repository or snapshot throws, saying which. */
export async function readSnapshot(conn: Connection, repository: string, snapshot: string): Promise<SnapshotInfo> {
  const r = await conn.request({
    method: "GET",
    path: `/_snapshot/${q(repository)}/${q(snapshot)}`,
    accept: [404],
    what: `read snapshot ${snapshot} of ${repository}`,
  });
  if (r.status === 404) {
    const missingRepo = r.body?.error?.type === "repository_missing_exception";
    throw conn.error(
      missingRepo
        ? `snapshot repository ${repository} is not registered on this cluster (createSnapshot with a location ` +
            "registers one). Nothing was changed"
        : `repository ${repository} holds no snapshot ${snapshot} (GET /_snapshot/${repository}/_all lists them). ` +
            "Nothing was changed",
      { status: 404 },
    );
  }
  return infoOf(r.body.snapshots[0]);
}

/** Register `repository` as an `fs` repository at `location` (below every node's `path.repo`). */
export async function registerFsRepository(conn: Connection, repository: string, location: string): Promise<void> {
  await conn.request({
    method: "PUT",
    path: `/_snapshot/${q(repository)}`,
    body: { type: "fs", settings: { location } },
    what: `register snapshot repository ${repository} at ${location} (below every node's path.repo)`,
  });
}

/** Start a snapshot of `indices` (no global state) in `repository`, not waiting for it. */
export async function startSnapshot(conn: Connection, repository: string, snapshot: string, indices: string[]): Promise<void> {
  await conn.request({
    method: "PUT",
    path: `/_snapshot/${q(repository)}/${q(snapshot)}`,
    query: { wait_for_completion: "false" },
    body: { indices: indices.join(","), include_global_state: false },
    what: `start snapshot ${snapshot} of ${indices.join(", ")} in ${repository}`,
  });
}

/**
 * Start restoring `indices` of a snapshot renamed by `rename` (pattern, replacement), without their aliases, the
 * global state or replicas; not waiting for it (`waitRestored`).
 */
export async function startRestore(
  conn: Connection,
  repository: string,
  snapshot: string,
  indices: string[],
  rename: [string, string],
  what: string,
): Promise<void> {
  await conn.request({
    method: "POST",
    path: `/_snapshot/${q(repository)}/${q(snapshot)}/_restore`,
    query: { wait_for_completion: "false" },
    body: {
      indices: indices.join(","),
      include_global_state: false,
      include_aliases: false,
      rename_pattern: rename[0],
      rename_replacement: rename[1],
      index_settings: { "index.number_of_replicas": 0, "index.auto_expand_replicas": "false" },
    },
    what,
  });
}

/** Wait until every primary shard of `indices` is restored (health yellow), up to `timeoutMs`. */
export async function waitRestored(conn: Connection, indices: string[], timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  const names = indices.map(q).join(",");
  for (;;) {
    const left = Math.max(1, Math.min(20, Math.floor((until - Date.now()) / 1000)));
    const r = await conn.request({
      method: "GET",
      path: `/_cluster/health/${names}`,
      query: { wait_for_status: "yellow", timeout: `${left}s` },
      accept: [408],
      missingIndexOk: true,
      what: `wait for the restore of ${indices.join(", ")}`,
    });
    if (!r.body?.timed_out && r.body?.status !== "red") return;
    if (Date.now() > until) {
      throw conn.error(`the restore of ${indices.join(", ")} had not ended after ${timeoutMs} ms (health ` +
        `${r.body?.status}); GET /_cat/recovery/${indices.join(",")} shows where it is`);
    }
  }
}
