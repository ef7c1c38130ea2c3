/** Snapshots of a store's indices (`createSnapshot`), and the read of one snapshot that a restore starts with. */
import { connect, type ConnectionOptions } from "./connection.js";
import { RestoreError } from "./errors.js";
import { findIndex } from "./indices.js";
import { KINDS } from "./restore-plan.js";
import { readSnapshot, registerFsRepository, type SnapshotInfo, startSnapshot } from "./port-snapshots.js";

export type { SnapshotInfo } from "./port-snapshots.js";

/** How long to wait for a snapshot, or for the restore of its indices, by default (30 minutes). */
export const DEFAULT_TIMEOUT_MS = 1_800_000;

export interface CreateSnapshotOptions {
  /** The cluster's snapshot repository (its registered name). */
  repository: string;
  snapshot: string;
  /** Register the repository first, as an `fs` repository at this folder (below every node's `path.repo`). */
  location?: string;
  /** How long to wait for the snapshot (default 30 minutes). */
  timeoutMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Snapshot the store's indices of `indexPrefix` (every kind that exists, every tenant; the cluster's global state
 * left out) into `repository` and wait until it has ended. Returns the snapshot as the cluster describes it.
 */
export async function createSnapshot(options: ConnectionOptions, o: CreateSnapshotOptions): Promise<SnapshotInfo> {
  for (const key of ["repository", "snapshot"] as const) {
    if (typeof o?.[key] !== "string" || o[key].trim() === "") {
      throw new RestoreError(`createSnapshot: ${key} must be a non-empty string, not ${JSON.stringify(o?.[key])}`);
    }
  }
  const conn = await connect({ ...options, refresh: "false" }, RestoreError);
  try {
    if (o.location !== undefined) await registerFsRepository(conn, o.repository, o.location);
    const live: string[] = [];
    for (const kind of KINDS) {
      const info = await findIndex(conn, options.indexPrefix, kind);
      if (info) live.push(info.index);
    }
    if (live.length === 0) throw conn.error(`prefix ${options.indexPrefix} has no Memorie index on this cluster: nothing to snapshot`);
    await startSnapshot(conn, o.repository, o.snapshot, live);
    const until = Date.now() + (o.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    for (let delay = 100; ; delay = Math.min(2000, delay * 2)) {
      const info = await readSnapshot(conn, o.repository, o.snapshot);
      if (!["IN_PROGRESS", "STARTED", "INIT"].includes(info.state)) return info;
      if (Date.now() > until) {
        throw conn.error(`snapshot ${o.snapshot} of ${o.repository} still running after ${o.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms; ` +
          "it goes on in the cluster");
      }
      await sleep(delay);
    }
  } finally {
    await conn.close();
  }
}
