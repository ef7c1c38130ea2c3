/**
 * `forget`: delete every document of one tenant (optionally one namespace and/or subject) from one index in one call,
 * and optionally expunge them from disk. An addition beyond Memorie's interfaces (its engine forgets memory by memory).
 *
 * - Where the node has delete-by-query (the `reindex` module: every real distribution; not the OpenSearch 2.19 and
 *   Elasticsearch 9 integ-test zips the managed nodes run), one `_delete_by_query` (conflicts=proceed, slices=auto,
 *   refresh=true) runs as a task that is polled, so no request has to outlast `requestTimeoutMs`. Documents changed
 *   while it ran (version conflicts) are deleted by running it again.
 * - Elsewhere the ids are scanned a page at a time (search_after on `id`: no 10,000-hit window) and deleted with
 *   bulk requests, two in flight, then the index is refreshed. Which one a node has is found out by the first
 *   forget of a connection (a node without the module answers "no handler found"), and remembered.
 * - Expunge: a deleted document stays in its segment until a merge rewrites that segment. The shard's retention
 *   leases keep soft-deleted documents until they sync (every 30 s), and so does the last commit, so expunge flushes,
 *   waits until every lease has passed the deletes and for the merges already running, then force-merges with
 *   only_expunge_deletes, and checks that no deleted document is left (the templates set
 *   `index.merge.policy.expunge_deletes_allowed: 0`, so every segment with a deleted document is rewritten, not only
 *   those with more than 10%).
 */
import type { ForgetScope } from "./dialect.js";
import { matchingIdsBody } from "./dialect.js";
import { sendPages } from "./bulk-load.js";
import type { ErrorClass } from "./errors.js";
import { searchPages } from "./port.js";
import {
  deletedDocs,
  deleteByQueryTask,
  expungeMerge,
  flush,
  mergesRunning,
  pageSize,
  rewriteEverySegmentWithDeletes,
  seqNos,
} from "./port-upkeep.js";
import type { BulkOp, Connection } from "./transport.js";
import type { Clause } from "./types.js";

/** What `forget` takes: the tenant (required, non-empty), optionally narrowed; `expunge` also removes it from disk. */
export interface ForgetOptions extends ForgetScope {
  /** After the delete, force-merge the index with only_expunge_deletes, so the deleted text is gone from disk. */
  expunge?: boolean;
  /**
   * `auto` (default): one delete-by-query where the node has it, else the scan. `scan`: always scan the ids and
   * delete them in bulk (for a user allowed to search and bulk-delete but not to run delete-by-query tasks).
   */
  method?: "auto" | "scan";
}

export interface ForgetResult {
  /** Documents deleted from this store's index. */
  deleted: number;
  /**
   * `expunge: true`: whether the index holds no deleted document any more (its `docs.deleted` is 0) after the merge
   * (up to three rounds; false when other writes keep deleting, e.g. updates). Always false without expunge.
   */
  expunged: boolean;
  /** Wall time of the call, expunge included. */
  seconds: number;
  /** Of `seconds`, the expunge: flush, waiting for the retention leases (up to 30 s), force merge; 0 without it. */
  expungeSeconds: number;
  /** How the node deleted them: one delete-by-query task, or a scan of ids and bulk deletes (no delete-by-query). */
  method: "delete_by_query" | "scan";
}

/** Longest wait for the retention leases to pass the deletes before expunging (they sync every 30 s). */
export const LEASE_WAIT_MS = 120_000;
/** Longest wait for the merges running on the index to end before expunging. */
const MERGE_WAIT_MS = 3_600_000;

/** Check what `forget` was given; an empty tenant is refused (forget never deletes across tenants). */
export function checkForgetOptions(o: ForgetOptions | undefined, errorClass: ErrorClass): ForgetOptions {
  if (!o || typeof o.tenantId !== "string" || o.tenantId.trim() === "") {
    throw new errorClass(
      `forget: tenantId must be a non-empty string, not ${JSON.stringify(o?.tenantId)}: forget deletes the documents ` +
        "of one tenant and never all of them (to delete a whole index, use drop())",
    );
  }
  for (const key of ["namespace", "subjectId"] as const) {
    const v = o[key];
    if (v !== undefined && (typeof v !== "string" || v === "")) {
      throw new errorClass(`forget: ${key} must be a non-empty string or left out, not ${JSON.stringify(v)}`);
    }
  }
  if (o.expunge !== undefined && typeof o.expunge !== "boolean") {
    throw new errorClass(`forget: expunge must be true or false, not ${JSON.stringify(o.expunge)}`);
  }
  if (o.method !== undefined && o.method !== "auto" && o.method !== "scan") {
    throw new errorClass(`forget: method must be "auto" or "scan", not ${JSON.stringify(o.method)}`);
  }
  return o;
}

/** Whether each connection's node has `_delete_by_query` (learnt by its first forget). */
const hasDeleteByQuery = new WeakMap<Connection, boolean>();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One delete-by-query task, run again while documents changed under it (version conflicts); null: no such API. */
async function deleteByQuery(conn: Connection, alias: string, query: Clause, what: string, page: number): Promise<number | null> {
  let deleted = 0;
  for (let round = 0; round < 5; round++) {
    const response = await deleteByQueryTask(conn, alias, query, page, what);
    if (response === null) return null;
    const failures = response.failures;
    if (failures.length > 0) {
      const first = failures[0];
      const reason = first?.cause ? `${first.cause.type}: ${first.cause.reason}` : JSON.stringify(first).slice(0, 300);
      throw conn.error(`${what}: ${failures.length} failure(s) after deleting ${deleted + response.deleted} ` +
        `documents (first: ${first?.id ?? "?"}: ${reason}); call forget again`, { reason, details: { failures } });
    }
    deleted += response.deleted;
    if (!response.versionConflicts) return deleted;
  }
  throw conn.error(`${what}: documents kept changing under the delete (version conflicts in 5 runs); call forget again`);
}

/** Without delete-by-query: scan the matching ids (search_after, no window cap) and delete them with bulk requests. */
async function deleteByScan(conn: Connection, alias: string, query: Clause, what: string, page: number): Promise<number> {
  async function* ops(): AsyncIterable<BulkOp> {
    const body = (after: unknown[] | undefined) => matchingIdsBody(query, page, after?.[0] as string | undefined);
    for await (const hits of searchPages(conn, alias, body, page, `${what}: find the ids`)) {
      for (const h of hits) yield { action: "delete", id: h.id };
    }
  }
  const { failures, total } = await sendPages(conn, alias, ops(), (n) => `${what}: delete ${n} documents`);
  await conn.refreshIndex(alias);
  conn.throwBulkFailures(what, failures, total);
  return total;
}

/**
 * Rewrite the segments that hold deleted documents; true when none is left after. A merge keeps soft-deleted
 * documents that a retention lease retains, or that the last commit may replay; so commit (flush), wait until the
 * leases move past the deletes at their next sync (every 30 s), and wait for the merges that started before (the
 * node's own merges after the deletes: they kept the deleted documents, and a force merge skips the segments they
 * are merging), then force-merge. Up to three rounds while deleted documents are left (other writes delete too: an
 * update leaves the old version deleted).
 */
async function expungeDeletes(conn: Connection, alias: string, what: string, leaseWaitMs: number): Promise<boolean> {
  await rewriteEverySegmentWithDeletes(conn, alias, what);
  // A merge also keeps what the last commit may need to replay (operations above its local checkpoint): commit first.
  await flush(conn, alias, `${what}: flush`);
  const { maxSeqNo } = await seqNos(conn, alias);
  const leasesBy = Date.now() + leaseWaitMs;
  for (;;) {
    const { retaining } = await seqNos(conn, alias);
    if (retaining.every((s) => s > maxSeqNo)) break;
    if (Date.now() >= leasesBy) {
      throw conn.error(
        `${what}: the documents are deleted, but the shard's retention leases still keep them after ` +
          `${Math.round(leaseWaitMs / 1000)} s (a replica recovering, or a cross-cluster follower?), so a merge cannot ` +
          `remove them yet; call forget with expunge again later, or POST /${alias}/_forcemerge?only_expunge_deletes=true`,
        { details: { maxSeqNo, retaining } },
      );
    }
    await sleep(500);
  }
  for (let round = 0; round < 3; round++) {
    const mergesBy = Date.now() + MERGE_WAIT_MS;
    while ((await mergesRunning(conn, alias)) > 0) {
      if (Date.now() >= mergesBy) {
        throw conn.error(`${what}: the documents are deleted, but the index was still merging after ` +
          `${MERGE_WAIT_MS / 60000} minutes; call forget with expunge again later`);
      }
      await sleep(500);
    }
    await expungeMerge(conn, alias, `${what}: expunge deleted documents`);
    if ((await deletedDocs(conn, alias)) === 0) return true;
  }
  return false;
}

/** Delete what `query` matches in `alias`, the whole of it, and expunge it when asked. */
export async function forgetInIndex(
  conn: Connection,
  alias: string,
  query: Clause,
  o: Pick<ForgetOptions, "expunge" | "method"> & { leaseWaitMs?: number },
): Promise<ForgetResult> {
  const t0 = performance.now();
  const what = `forget in ${alias}`;
  // Everything written so far, by any process, must be searchable, or the delete would not see it.
  await conn.refreshIndex(alias);
  const page = await pageSize(conn, alias);
  let deleted: number | null = null;
  let method: ForgetResult["method"] = "delete_by_query";
  if (o.method !== "scan" && hasDeleteByQuery.get(conn) !== false) {
    deleted = await deleteByQuery(conn, alias, query, what, page);
    hasDeleteByQuery.set(conn, deleted !== null);
  }
  if (deleted === null) {
    method = "scan";
    deleted = await deleteByScan(conn, alias, query, what, page);
  }
  const t1 = performance.now();
  const expunged = o.expunge ? await expungeDeletes(conn, alias, what, o.leaseWaitMs ?? LEASE_WAIT_MS) : false;
  const t2 = performance.now();
  return { deleted, expunged, seconds: (t2 - t0) / 1000, expungeSeconds: (t2 - t1) / 1000, method };
}
