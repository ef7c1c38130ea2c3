/**
 * Bulk loads (`indexMany`, `upsertMany`): pages of bulk requests, several in flight, with the index's scheduled
 * refresh off meanwhile (`refresh_interval: -1`, so the node builds a few large segments instead of one per second,
 * and merges less after), restored when the last load of that index in this connection ends, also when it fails.
 *
 * A load is not atomic, with or without this: another reader (another process, or this store's own deferred
 * refresh before a concurrent read) can see a part of it while it runs, as it can see any write as soon as the
 * index is refreshed. Memorie's engine never relies on more (its `reindex()` pages through `index()` one memory at
 * a time); once a load returns, or throws, the store's next read refreshes first and sees all of it.
 */
import type { StoreError } from "./errors.js";
import { putInterval, readInterval } from "./port-indices.js";
import type { BulkFailure, BulkOp, Connection } from "./transport.js";

export const DEFAULT_PAGE_SIZE = 1000;
export const DEFAULT_CONCURRENCY = 2;

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
}

const suspended = new WeakMap<Connection, Map<string, Suspension>>();

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
 * Run `load` with the scheduled refresh of `index` off. `fallback` is the interval to restore when the index had
 * `-1` already (what a load that was killed before its end leaves behind).
 */
export async function withoutScheduledRefresh<T>(
  conn: Connection,
  index: string,
  fallback: string | null,
  load: () => Promise<T>,
): Promise<T> {
  let byIndex = suspended.get(conn);
  if (!byIndex) suspended.set(conn, (byIndex = new Map()));
  let s = byIndex.get(index);
  if (s) s.count++;
  else {
    const restore = suspend(conn, index, fallback);
    s = { count: 1, restore };
    byIndex.set(index, s);
  }
  const own = s;
  try {
    await own.restore;
    return await load();
  } finally {
    own.count--;
    if (own.count === 0) {
      byIndex.delete(index);
      const value = await own.restore.catch(() => undefined);
      if (value !== undefined) await putInterval(conn, index, value);
    }
  }
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
