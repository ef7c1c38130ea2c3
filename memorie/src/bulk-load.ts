/**
 * Bulk loads (`indexMany`, `upsertMany`): pages of bulk requests, several in flight, with the index's scheduled
 * refresh off meanwhile (`refresh_interval: -1`, so the node builds a few large segments instead of one per second,
 * and merges less after).
 *
 * A user loads in parts (issue 53: `upsertMany` of 2,000 at a time, then `refresh()`), so the scheduled refresh stays
 * off between the parts: it is put back `RESTORE_AFTER_MS` after the last load of that index in this connection
 * (later while another load of this process runs: a part's memories and vectors load side by side)
 * ended (also when it failed), or at once by the store's `refresh()`, `close()` or `drop()`. The timer keeps Node
 * alive for those 2 s, so a script that ends without `close()` still puts the setting back. Turning it off and on
 * is a cluster-state update each (two per part before; tens to hundreds of ms on a busy node), and each restore let
 * the node refresh, and later merge, a small segment (for vectors: an HNSW graph built, then rebuilt in the merge).
 *
 * A load is not atomic, with or without this: another reader (another process, or this store's own deferred
 * refresh before a concurrent read) can see a part of it while it runs, as it can see any write as soon as the
 * index is refreshed. Memorie's engine never relies on more (its `reindex()` pages through `index()` one memory at
 * a time); once a load returns, or throws, the store's next read refreshes first and sees all of it. Other readers
 * see it once the scheduled refresh is back: at most `RESTORE_AFTER_MS` plus the interval after the load (sooner
 * after `refresh()`).
 */
import type { StoreError } from "./errors.js";
import { putInterval, readInterval } from "./port-indices.js";
import type { BulkFailure, BulkOp, Connection } from "./transport.js";

export const DEFAULT_PAGE_SIZE = 1000;
export const DEFAULT_CONCURRENCY = 2;
/** How long the scheduled refresh stays off after the last load of an index ended, for the next part of the load. */
export const RESTORE_AFTER_MS = 2000;

export interface LoadOptions {
  /** Documents per bulk request (default 1000). */
  pageSize?: number;
  /** Bulk requests in flight at once (default 2). */
  concurrency?: number;
}

interface Suspension {
  count: number;
  /** The refresh_interval to put back (null: the node's default; undefined: nothing was changed). */
  restore: Promise<string | null | undefined>;
  /** The suspension could not be set up (the load that started it threw): nothing to restore, none to reuse. */
  failed: boolean;
  /** The restore due `RESTORE_AFTER_MS` after the last load ended (null while a load runs). */
  timer: ReturnType<typeof setTimeout> | null;
}

const suspended = new WeakMap<Connection, Map<string, Suspension>>();

/** Loads running now in this process, of any store or index: a part's memories and its vectors load side by side
 * (`indexMany` and `upsertMany` on two connections), so an index whose part ended waits for the other's. */
let loadsRunning = 0;

/** Turn the scheduled refresh of `index` off; returns the interval to restore (undefined: none was changed). */
async function suspend(conn: Connection, index: string, fallback: string | null): Promise<string | null | undefined> {
  try {
    const value = await readInterval(conn, index);
    await putInterval(conn, index, "-1");
    return value === "-1" ? fallback : value;
  } catch (exc) {
    // A user allowed to write but not to manage the index loads with the scheduled refresh on; a missing index is
    // left to the load, whose first bulk request reports it as a refused write.
    const status = (exc as StoreError).status;
    if (status === 403 || status === 404) return undefined;
    throw exc;
  }
}

/**
 * Run `load` with the scheduled refresh of `index` off, and keep it off `restoreAfterMs` after the last load ended
 * (the next part of the load reuses the suspension). `fallback` is the interval to restore when the index had `-1`
 * already (what a load that was killed before its end leaves behind).
 */
export async function withoutScheduledRefresh<T>(
  conn: Connection,
  index: string,
  fallback: string | null,
  load: () => Promise<T>,
  restoreAfterMs = RESTORE_AFTER_MS,
): Promise<T> {
  let byIndex = suspended.get(conn);
  if (!byIndex) suspended.set(conn, (byIndex = new Map()));
  let s = byIndex.get(index);
  if (s && !s.failed) {
    s.count++;
    if (s.timer) clearTimeout(s.timer);
    s.timer = null;
  } else {
    const made: Suspension = { count: 1, restore: suspend(conn, index, fallback), failed: false, timer: null };
    made.restore.catch(() => (made.failed = true));
    byIndex.set(index, (s = made));
  }
  const own = s;
  loadsRunning++;
  try {
    await own.restore;
    return await load();
  } finally {
    loadsRunning--;
    own.count--;
    if (own.count === 0 && byIndex.get(index) === own) {
      if (own.failed) byIndex.delete(index);
      else own.timer = setTimeout(() => restoreWhenIdle(conn, index, own, restoreAfterMs), restoreAfterMs);
    }
  }
}

/** The timer's restore: postponed by `restoreAfterMs` while another load of this process runs (the next part of
 * this index's load then reuses the suspension), else the interval put back. */
function restoreWhenIdle(conn: Connection, index: string, own: Suspension, restoreAfterMs: number): void {
  if (loadsRunning > 0 && own.count === 0) {
    own.timer = setTimeout(() => restoreWhenIdle(conn, index, own, restoreAfterMs), restoreAfterMs);
    return;
  }
  void restoreScheduledRefresh(conn, index).catch(() => undefined);
}

/**
 * Put the scheduled refresh of `index` back now if no load of it runs in this connection (the store's `refresh()`
 * and `close()`); `drop`: the index is gone, forget the suspension without a request.
 */
export async function restoreScheduledRefresh(conn: Connection, index: string, drop = false): Promise<void> {
  const byIndex = suspended.get(conn);
  const s = byIndex?.get(index);
  if (!byIndex || !s || s.count > 0) return;
  if (s.timer) clearTimeout(s.timer);
  byIndex.delete(index);
  const value = await s.restore.catch(() => undefined);
  if (value !== undefined && !drop) await putInterval(conn, index, value);
}

/** Every index's scheduled refresh back (before the connection closes); the first failure is thrown at the end. */
export async function restoreAll(conn: Connection): Promise<void> {
  let first: unknown = null;
  for (const index of [...(suspended.get(conn)?.keys() ?? [])]) {
    await restoreScheduledRefresh(conn, index).catch((exc) => (first ??= exc));
  }
  if (first) throw first;
}

/** Send `ops` to `index` in pages of `pageSize`, `concurrency` requests in flight; returns the items that failed. */
export async function sendPages(
  conn: Connection,
  index: string,
  ops: AsyncIterable<BulkOp> | Iterable<BulkOp>,
  what: (n: number) => string,
  o: LoadOptions = {},
): Promise<{ failures: BulkFailure[]; total: number }> {
  const pageSize = o.pageSize ?? DEFAULT_PAGE_SIZE;
  const concurrency = Math.max(1, o.concurrency ?? DEFAULT_CONCURRENCY);
  const failures: BulkFailure[] = [];
  const running = new Set<Promise<void>>();
  let error: unknown = null;
  let total = 0;
  const start = (page: BulkOp[]) => {
    const p: Promise<void> = conn.bulk(index, page, what(page.length)).then(
      (failed) => void failures.push(...failed),
      (exc) => void (error ??= exc),
    );
    const tracked = p.finally(() => running.delete(tracked));
    running.add(tracked);
  };
  let page: BulkOp[] = [];
  try {
    for await (const op of ops) {
      if (error) break;
      page.push(op);
      total++;
      if (page.length < pageSize) continue;
      start(page);
      page = [];
      if (running.size >= concurrency) await Promise.race(running);
    }
    if (page.length > 0 && !error) start(page);
  } finally {
    await Promise.all(running);
  }
  if (error) throw error;
  return { failures, total };
}
