import { type LoadOptions, restoreAll, restoreScheduledRefresh, sendPages, withoutScheduledRefresh } from "./bulk-load.js";
import { connect, layoutOf, type Connection, type ConnectionOptions, type RefreshPolicy } from "./connection.js";
import {
  forgetQuery,
  InvalidQuery,
  keywordScore,
  loadTemplate,
  memoryDoc,
  memoryFromSource,
  type MemorySource,
  searchBody,
} from "./dialect.js";
import { SearchError } from "./errors.js";
import { checkForgetOptions, forgetInIndex, type ForgetOptions, type ForgetResult } from "./forget.js";
import { allIds, dropIndex, ensureIndex, type IndexInfo } from "./indices.js";
import { deleteDoc, putDoc, searchHits } from "./port.js";
import { hasPorterStem } from "./port-indices.js";
import { type Operations, traced } from "./tracing.js";
import type { Memory, SearchQuery, SearchResult, SearchStore } from "./types.js";

/** The memory operation of each traced method (src/tracing.ts). */
const SEARCH_OPERATIONS: Operations = {
  index: { op: "update_memory" },
  indexMany: { op: "update_memory" },
  search: { op: "search_memory", query: (args) => (args[0] as SearchQuery | undefined)?.query },
  delete: { op: "delete_memory" },
  forget: { op: "delete_memory" },
  drop: { op: "delete_memory_store" },
};

export type SearchStoreOptions = ConnectionOptions;

/** Memorie's SearchStore on one index, plus bulk loading and upkeep. */
export interface OpenSearchStore extends SearchStore {
  listIds(): Promise<string[]>;
  /**
   * Index many memories with bulk requests (1000 a page, 2 in flight; 429/5xx items retried), the index's scheduled
   * refresh off meanwhile and between the parts of a load
   * (restored 2 s after the last call, or by `refresh()`/`close()`; also after a failure), then refresh per the policy.
   */
  indexMany(memories: Iterable<Memory>, options?: LoadOptions & { refresh?: RefreshPolicy }): Promise<void>;
  /**
   * Delete every memory of a tenant (narrowed by `namespace`/`subjectId` when given) in one call, with no 10,000-hit
   * cap; `expunge` also rewrites the segments that held them. Not part of Memorie's SearchStore (see README).
   */
  forget(options: ForgetOptions): Promise<ForgetResult>;
  /** Make every write so far searchable (after loads with `refresh: "false"`). */
  refresh(): Promise<void>;
  /** Delete this store's index. */
  drop(): Promise<void>;
  close(): Promise<void>;
  /** Refreshes this store sent under the `deferred` policy (before reads, in the background, at close, `refresh()`). */
  readonly deferredRefreshes: number;
  readonly engine: "opensearch" | "elasticsearch";
  /** Alias and versioned index; `stemming` tells whether content is stemmed (the node has `porter_stem`). */
  readonly info: { alias: string; index: string; stemming: boolean };
}

function checkMemory(m: Memory): void {
  if (!m || typeof m.id !== "string" || m.id === "") throw new SearchError("index: memory.id must be a non-empty string");
  if (typeof m.content !== "string") throw new SearchError(`index: memory ${m.id} has no string content`);
  for (const key of ["createdAt", "updatedAt"] as const) {
    if (!(m[key] instanceof Date) || Number.isNaN(m[key].getTime())) {
      throw new SearchError(`index: memory ${m.id}: ${key} must be a valid Date`);
    }
  }
}

class OpenSearchSearchStore implements OpenSearchStore {
  constructor(
    private readonly conn: Connection,
    private readonly prefix: string,
    private readonly index_: IndexInfo,
  ) {}

  /** Refreshes this store sent under the `deferred` policy (before reads, in the background, at close, `refresh()`). */
  get deferredRefreshes(): number {
    return this.conn.visibility?.refreshes ?? 0;
  }

  get engine() {
    return this.conn.engine;
  }

  get info() {
    return { alias: this.index_.alias, index: this.index_.index, stemming: Boolean(this.index_.meta.stemming) };
  }

  private get alias(): string {
    return this.index_.alias;
  }

  async index(memory: Memory): Promise<void> {
    checkMemory(memory);
    await putDoc(this.conn, this.alias, memory.id, memoryDoc(memory), `index memory ${memory.id}`);
  }

  async indexMany(memories: Iterable<Memory>, options: LoadOptions & { refresh?: RefreshPolicy } = {}) {
    const ops = function* () {
      for (const m of memories) {
        checkMemory(m);
        yield { action: "index" as const, id: m.id, doc: memoryDoc(m) };
      }
    };
    try {
      const fallback = loadTemplate("memories").settings.index.refresh_interval ?? null;
      const { failures, total } = await withoutScheduledRefresh(this.conn, this.alias, fallback, () =>
        sendPages(this.conn, this.alias, ops(), (n) => `index ${n} memories`, options),
      );
      this.conn.throwBulkFailures("indexMany", failures, total);
    } finally {
      await this.conn.afterBulk(this.alias, options.refresh);
    }
  }

  async search(query: SearchQuery): Promise<SearchResult[]> {
    let built;
    try {
      built = searchBody(query ?? {});
    } catch (exc) {
      if (exc instanceof InvalidQuery) throw new SearchError(`search: ${exc.message}`);
      throw exc;
    }
    await this.conn.beforeRead(this.alias);
    const hits = await searchHits<MemorySource>(this.conn, this.alias, built.body, "search memories");
    return hits.map((h) =>
      built.withText
        ? { memory: memoryFromSource(h.source), score: keywordScore(h.score), matchedSignals: ["keyword"] }
        : { memory: memoryFromSource(h.source), score: 1, matchedSignals: ["structured"] },
    );
  }

  async delete(id: string): Promise<void> {
    await deleteDoc(this.conn, this.alias, id, `delete memory ${id}`);
  }

  listIds(): Promise<string[]> {
    return allIds(this.conn, this.alias);
  }

  forget(options: ForgetOptions): Promise<ForgetResult> {
    const o = checkForgetOptions(options, SearchError);
    return forgetInIndex(this.conn, this.alias, forgetQuery("memories", o), o);
  }

  async refresh(): Promise<void> {
    // and the scheduled refresh a load turned off back on (bulk-load.ts), in the same round trip's time
    await Promise.all([this.conn.refreshNow(this.alias), restoreScheduledRefresh(this.conn, this.alias)]);
  }

  async drop(): Promise<void> {
    await restoreScheduledRefresh(this.conn, this.alias, true);
    await dropIndex(this.conn, this.prefix, "memories");
  }

  async close(): Promise<void> {
    try {
      await restoreAll(this.conn);
    } finally {
      await this.conn.close();
    }
  }
}

/** A SearchStore over `<indexPrefix>-memorie-memories` (created on first use). */
export async function createSearchStore(o: SearchStoreOptions): Promise<OpenSearchStore> {
  const conn = await connect(o, SearchError);
  try {
    const stemming = async () => ({ stemming: await hasPorterStem(conn) });
    const info = await ensureIndex(conn, o.indexPrefix, "memories", stemming, layoutOf(o));
    return traced(new OpenSearchSearchStore(conn, o.indexPrefix, info), o.indexPrefix, SEARCH_OPERATIONS);
  } catch (exc) {
    await conn.close();
    throw exc;
  }
}
