/**
 * Typed requests of `forget` (forget.ts) and its expunge: delete-by-query and force-merge tasks, flush, the index
 * stats and settings they read (sequence numbers and retention leases, merges, deleted documents, the result window).
 * The REST paths and the answers' layout are here; forget.ts speaks in counts and decisions.
 */
import { serverReason } from "./errors.js";
import type { Connection } from "./transport.js";
import type { Clause } from "./types.js";

const SCAN_PAGE = 5000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A node without the reindex module answers a delete-by-query with "no handler found" (400) or 405. */
function noHandler(status: number, body: unknown): boolean {
  const text = typeof body === "string" ? body : JSON.stringify(body ?? "");
  return status === 405 || (status === 400 && /no handler found/i.test(text));
}

/** Wait for a task started with wait_for_completion=false; returns its response. */
async function awaitTask(conn: Connection, task: string, what: string): Promise<any> {
  for (let delay = 50; ; delay = Math.min(1000, delay * 2)) {
    const r = await conn.request({ method: "GET", path: `/_tasks/${encodeURIComponent(task)}`, what: `${what} (task ${task})` });
    if (r.body?.completed) {
      if (r.body.error) {
        const reason = serverReason({ error: r.body.error }) ?? "unknown error";
        throw conn.error(`${what} failed: ${reason}`, { reason, details: { task } });
      }
      return r.body.response ?? {};
    }
    await sleep(delay);
  }
}

/** What one delete-by-query task did: documents deleted, version conflicts met, and the failures. */
export interface DeleteByQueryResult {
  deleted: number;
  versionConflicts: number;
  failures: { id?: string; cause?: { type?: string; reason?: string } }[];
}

/** Run one delete-by-query task of `query` on `alias` to its end; null when the node has no delete-by-query. */
export async function deleteByQueryTask(
  conn: Connection,
  alias: string,
  query: Clause,
  page: number,
  what: string,
): Promise<DeleteByQueryResult | null> {
  const started = await conn.request({
    method: "POST",
    path: `/${encodeURIComponent(alias)}/_delete_by_query`,
    query: { conflicts: "proceed", refresh: "true", slices: "auto", scroll_size: page, wait_for_completion: "false" },
    body: { query },
    accept: [400, 405],
    what: `${what} (delete-by-query)`,
  });
  if (started.status >= 400) {
    if (noHandler(started.status, started.body)) return null;
    const reason = serverReason(started.body) ?? `HTTP ${started.status}`;
    throw conn.error(`${what} failed: HTTP ${started.status} ${reason}`, { status: started.status, reason });
  }
  const response = await awaitTask(conn, String(started.body?.task), what);
  return { deleted: response.deleted ?? 0, versionConflicts: response.version_conflicts ?? 0, failures: response.failures ?? [] };
}

/** Commit `alias` (flush). */
export async function flush(conn: Connection, alias: string, what: string): Promise<void> {
  await conn.request({ method: "POST", path: `/${encodeURIComponent(alias)}/_flush`, what });
}

/** Force-merge `alias` with only_expunge_deletes, as a task waited for. */
export async function expungeMerge(conn: Connection, alias: string, what: string): Promise<void> {
  const started = await conn.request({
    method: "POST",
    path: `/${encodeURIComponent(alias)}/_forcemerge`,
    query: { only_expunge_deletes: "true", wait_for_completion: "false" },
    what,
  });
  await awaitTask(conn, String(started.body?.task), what);
}

/**
 * Documents per page of the scan or per batch of delete-by-query: at most the index's max_result_window (10,000
 * unless lowered), which no page may exceed; search_after (or the task's scroll) goes past it.
 */
export async function pageSize(conn: Connection, alias: string): Promise<number> {
  const window = await conn.request({
    method: "GET",
    path: `/${encodeURIComponent(alias)}/_settings/index.max_result_window`,
    query: { include_defaults: "true", flat_settings: "true" },
    what: `read the result window of ${alias}`,
  });
  const found = Object.values(window.body ?? {})[0] as any;
  const max = Number(found?.settings?.["index.max_result_window"] ?? found?.defaults?.["index.max_result_window"]);
  return Number.isInteger(max) && max > 0 ? Math.min(SCAN_PAGE, max) : SCAN_PAGE;
}

/** Every shard copy's highest sequence number and its retention leases (index stats). */
export async function seqNos(conn: Connection, alias: string): Promise<{ maxSeqNo: number; retaining: number[] }> {
  const r = await conn.request({
    method: "GET",
    path: `/${encodeURIComponent(alias)}/_stats/docs`,
    query: {
      level: "shards",
      filter_path: "indices.*.shards.*.seq_no.max_seq_no,indices.*.shards.*.retention_leases.leases.retaining_seq_no",
    },
    what: `read the sequence numbers of ${alias}`,
  });
  let maxSeqNo = -1;
  const retaining: number[] = [];
  for (const index of Object.values(r.body?.indices ?? {}) as any[]) {
    for (const copies of Object.values(index.shards ?? {}) as any[][]) {
      for (const copy of copies) {
        maxSeqNo = Math.max(maxSeqNo, copy.seq_no?.max_seq_no ?? -1);
        for (const lease of copy.retention_leases?.leases ?? []) retaining.push(lease.retaining_seq_no);
      }
    }
  }
  return { maxSeqNo, retaining };
}

/**
 * The templates set `index.merge.policy.expunge_deletes_allowed: 0`, so that an expunge rewrites every segment that
 * holds a deleted document (the node's default, 10%, leaves segments with fewer). An index created before they did
 * gets it now (a dynamic setting); a user who may not change settings (403) expunges with the index's own value.
 */
export async function rewriteEverySegmentWithDeletes(conn: Connection, alias: string, what: string): Promise<void> {
  const key = "index.merge.policy.expunge_deletes_allowed";
  const r = await conn.request({
    method: "GET",
    path: `/${encodeURIComponent(alias)}/_settings/${key}`,
    query: { flat_settings: "true" },
    what: `read ${key} of ${alias}`,
  });
  const values = Object.values(r.body ?? {}).map((i: any) => i?.settings?.[key]);
  if (values.length > 0 && values.every((v) => Number(v) === 0)) return;
  await conn.request({
    method: "PUT",
    path: `/${encodeURIComponent(alias)}/_settings`,
    body: { index: { merge: { policy: { expunge_deletes_allowed: 0 } } } },
    accept: [403],
    what: `${what}: set ${key} to 0`,
  });
}

/** Merges running on any copy of the index's shards (index stats). */
export async function mergesRunning(conn: Connection, alias: string): Promise<number> {
  const r = await conn.request({
    method: "GET",
    path: `/${encodeURIComponent(alias)}/_stats/merge`,
    query: { filter_path: "_all.total.merges.current" },
    what: `read the merges of ${alias}`,
  });
  return r.body?._all?.total?.merges?.current ?? 0;
}

/** Deleted documents still in the index's segments, all copies (index stats). */
export async function deletedDocs(conn: Connection, alias: string): Promise<number> {
  const r = await conn.request({
    method: "GET",
    path: `/${encodeURIComponent(alias)}/_stats/docs`,
    query: { filter_path: "_all.total.docs.deleted" },
    what: `read the deleted documents of ${alias}`,
  });
  return r.body?._all?.total?.docs?.deleted ?? 0;
}
