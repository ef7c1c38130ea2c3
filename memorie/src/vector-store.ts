import { type LoadOptions, restoreAll, restoreScheduledRefresh, sendPages, withoutScheduledRefresh } from "./bulk-load.js";
import { connect, layoutOf, type Connection, type ConnectionOptions, type RefreshPolicy } from "./connection.js";
import {
  forgetQuery,
  knnBody,
  loadTemplate,
  matchingIdsBody,
  MAX_WINDOW,
  vectorDoc,
  vectorFilter,
  vectorScore,
} from "./dialect.js";
import { VectorStoreError } from "./errors.js";
import { describeValue, vectorFilterProblem } from "./filter-check.js";
import { checkForgetOptions, forgetInIndex, type ForgetOptions, type ForgetResult } from "./forget.js";
import type { CalibrateOptions, Calibration } from "./knn-calibration.js";
import { allIds, checkLayout, dropIndex, findIndex } from "./indices.js";
import type { Clause, MemoryScope, VectorSearchOptions, VectorSearchResult, VectorStore } from "./types.js";
import { deleteDoc, putDoc, searchHits, searchPages } from "./port.js";
import { type Operations, traced } from "./tracing.js";
import { VectorIndex } from "./vector-index.js";

/** The memory operation of each traced method (src/tracing.ts). */
const VECTOR_OPERATIONS: Operations = {
  upsert: { op: "update_memory" },
  upsertMany: { op: "update_memory" },
  search: { op: "search_memory" },
  delete: { op: "delete_memory" },
  forget: { op: "delete_memory" },
  drop: { op: "delete_memory_store" },
};

export interface VectorStoreOptions extends ConnectionOptions {
  /** Vector length; without it the first upsert decides (or the existing index's mapping). */
  dimensions?: number;
  /**
   * A fixed scope applied inside every k-NN query (exact match on the `tenantId`/`namespace`/`subjectId` keys
   * of the entries' metadata, the keys Memorie's engine writes). Use it when one index holds several tenants:
   * the engine searches with no filter, so without a scope other tenants' neighbours can fill the top K.
   */
  scope?: MemoryScope;
  /**
   * HNSW build settings of the index when this store creates it (default: m 32, ef_construction 150, `VECTOR_HNSW`;
   * the ReMe store's shared m 16 / 64 reaches recall@10 ~0.96 at most on one segment of 100k bag-of-words vectors).
   * Larger values build a better graph (higher recall at the same search width) at a slower load and more merging;
   * an existing index keeps the settings it was created with.
   */
  hnsw?: { m?: number; efConstruction?: number };
  /**
   * HNSW candidates per segment of every search (default: the width calibrated on the index, `calibrate()`, kept in
   * its `_meta`, grown with the entries per segment since; while none is recorded, chosen from the index's entries
   * per segment, see `knn-width.ts`; the shape is read from the index's stats at the first search and every 10 s
   * after). From 1 to 10,000.
   */
  knnCandidates?: number;
}

export interface OpenSearchVectorStore extends VectorStore {
  listIds(): Promise<string[]>;
  /**
   * Upsert many entries with bulk requests (1000 a page, 2 in flight; 429/5xx items retried), the index's scheduled
   * refresh off meanwhile and between the parts of a load
   * (restored 2 s after the last call, or by `refresh()`/`close()`; also after a failure), then refresh per the policy.
   */
  upsertMany(
    entries: Iterable<{ id: string; embedding: number[]; metadata?: Record<string, unknown> }>,
    options?: LoadOptions & { refresh?: RefreshPolicy; calibrate?: boolean },
  ): Promise<void>;
  /**
   * Delete every entry whose metadata has the tenant (and `namespace`/`subjectId` when given) in one call; `expunge`
   * also rewrites the segments that held them. A scoped store forgets within its scope only. Not part of Memorie's
   * VectorStore (see README).
   */
  forget(options: ForgetOptions): Promise<ForgetResult>;
  /** A view of the same index with a fixed scope inside k-NN (see `VectorStoreOptions.scope`). */
  scoped(scope: MemoryScope): OpenSearchVectorStore;
  /**
   * Measure the k-NN width on the index (stored vectors as probes, exact neighbours by an exact scoring query, the
   * smallest width of the ladder whose recall@10 at depth 50 reaches 0.97) and record it in the index's `_meta`, where
   * searches read it (`engine_settings.json` `knn_calibration`). The first search after an `upsertMany` runs it when
   * due (not the load itself); a scoped store
   * measures within its scope. Refreshes the index first.
   */
  calibrate(options?: CalibrateOptions): Promise<Calibration>;
  /** The recorded calibration of the index, if any. */
  readonly calibration: Calibration | undefined;
  refresh(): Promise<void>;
  drop(): Promise<void>;
  close(): Promise<void>;
  /** Refreshes this store sent under the `deferred` policy (before reads, in the background, at close, `refresh()`). */
  readonly deferredRefreshes: number;
  readonly engine: "opensearch" | "elasticsearch";
  /** The vector length, once known. */
  readonly dimensions: number | undefined;
  readonly scope: MemoryScope | undefined;
}

function checkVector(embedding: unknown, what: string): number[] {
  if (!Array.isArray(embedding) || embedding.length === 0) {
    throw new VectorStoreError(`${what}: the embedding must be a non-empty array of numbers`);
  }
  for (let i = 0; i < embedding.length; i++) {
    if (typeof embedding[i] !== "number" || !Number.isFinite(embedding[i])) {
      throw new VectorStoreError(`${what}: embedding[${i}] is ${describeValue(embedding[i])}, not a finite number`);
    }
  }
  return embedding as number[];
}

function scopeFilter(scope: MemoryScope | undefined): Record<string, unknown> | undefined {
  if (!scope) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of ["tenantId", "namespace", "subjectId"] as const) if (scope[key] !== undefined) out[key] = scope[key];
  return Object.keys(out).length > 0 ? out : undefined;
}

class OpenSearchVectorStoreImpl implements OpenSearchVectorStore {
  private readonly fixed: Record<string, unknown> | undefined;

  constructor(
    private readonly idx: VectorIndex,
    readonly scope: MemoryScope | undefined,
  ) {
    this.fixed = scopeFilter(scope);
  }

  /** Refreshes this store sent under the `deferred` policy (before reads, in the background, at close, `refresh()`). */
  get deferredRefreshes(): number {
    return this.idx.conn.visibility?.refreshes ?? 0;
  }

  get engine() {
    return this.idx.conn.engine;
  }

  get dimensions() {
    return this.idx.dims;
  }

  scoped(scope: MemoryScope): OpenSearchVectorStore {
    return new OpenSearchVectorStoreImpl(this.idx, scope);
  }

  get calibration(): Calibration | undefined {
    return this.idx.calibration;
  }

  calibrate(options: CalibrateOptions = {}): Promise<Calibration> {
    return this.idx.calibrate(vectorFilter(undefined, this.fixed), options);
  }

  /** The metadata to store: the caller's, with a scoped store's scope (a conflicting value is an error). */
  private metadataFor(id: string, metadata?: Record<string, unknown>): Record<string, unknown> | undefined {
    if (!this.fixed) return metadata;
    for (const [key, value] of Object.entries(this.fixed)) {
      if (metadata && metadata[key] !== undefined && metadata[key] !== value) {
        throw new VectorStoreError(
          `upsert ${id}: metadata.${key} is ${JSON.stringify(metadata[key])} but this store is scoped to ` +
            `${JSON.stringify(value)}; use a store of that scope`,
        );
      }
    }
    return { ...metadata, ...this.fixed };
  }

  async upsert(id: string, embedding: number[], metadata?: Record<string, unknown>): Promise<void> {
    if (typeof id !== "string" || id === "") throw new VectorStoreError("upsert: id must be a non-empty string");
    checkVector(embedding, `upsert ${id}`);
    this.idx.checkDims(embedding, `upsert ${id}`);
    const info = await this.idx.ensure(embedding.length);
    this.idx.checkDims(embedding, `upsert ${id}`);
    await putDoc(this.idx.conn, info.alias, id, vectorDoc(id, embedding, this.metadataFor(id, metadata)), `upsert vector ${id}`);
  }

  async upsertMany(
    entries: Iterable<{ id: string; embedding: number[]; metadata?: Record<string, unknown> }>,
    options: LoadOptions & { refresh?: RefreshPolicy; calibrate?: boolean } = {},
  ): Promise<void> {
    const conn = this.idx.conn;
    const iterator = entries[Symbol.iterator]();
    const first = iterator.next();
    if (first.done) return;
    const entry = (e: { id: string; embedding: number[]; metadata?: Record<string, unknown> }) => {
      checkVector(e.embedding, `upsert ${e.id}`);
      this.idx.checkDims(e.embedding, `upsert ${e.id}`);
      return { action: "index" as const, id: e.id, doc: vectorDoc(e.id, e.embedding, this.metadataFor(e.id, e.metadata)) };
    };
    const head = entry(first.value);
    const alias = (await this.idx.ensure(first.value.embedding.length)).alias;
    const ops = function* () {
      yield head;
      for (let next = iterator.next(); !next.done; next = iterator.next()) yield entry(next.value);
    };
    try {
      const fallback = loadTemplate("vectors").settings.index.refresh_interval ?? null;
      const { failures, total } = await withoutScheduledRefresh(conn, alias, fallback, () =>
        sendPages(conn, alias, ops(), (n) => `upsert ${n} vectors`, options),
      );
      conn.throwBulkFailures("upsertMany", failures, total);
    } finally {
      await conn.afterBulk(alias, options.refresh);
    }
    // A load changes the width the search needs: measured again when the index grew or shrank enough (due_rule), by
    // the first search after the load (`settle`), not here: the next parts and merges would change what was measured.
    if (options.calibrate !== false) this.idx.settlePending = true;
  }

  async search(embedding: number[], options: VectorSearchOptions = {}): Promise<VectorSearchResult[]> {
    checkVector(embedding, "search");
    const topK = options.topK ?? 10;
    if (!Number.isInteger(topK) || topK < 0 || topK > MAX_WINDOW) {
      throw new VectorStoreError(`search: topK must be a whole number from 0 to ${MAX_WINDOW}, not ${describeValue(topK)}`);
    }
    if (options.threshold !== undefined && (typeof options.threshold !== "number" || Number.isNaN(options.threshold))) {
      throw new VectorStoreError(`search: threshold must be a number in [0, 1], not ${describeValue(options.threshold)}`);
    }
    const filterProblem = vectorFilterProblem(options.filter);
    if (filterProblem !== undefined) throw new VectorStoreError(`search: ${filterProblem}`);
    this.idx.checkDims(embedding, "search");
    if (!this.idx.info) {
      this.idx.info = await findIndex(this.idx.conn, this.idx.prefix, "vectors");
      if (!this.idx.info) return [];
      this.idx.checkDims(embedding, "search");
    }
    if (topK === 0) return [];
    const conn = this.idx.conn;
    await this.idx.settle(vectorFilter(undefined, this.fixed));
    await conn.beforeRead(this.idx.info.alias);
    const body = knnBody(conn.engine, embedding, topK, vectorFilter(options.filter, this.fixed), await this.idx.width(topK));
    const hits = await searchHits<{ metadata?: Record<string, unknown> | null }>(conn, this.idx.info.alias, body, "vector search");
    const out: VectorSearchResult[] = [];
    for (const h of hits.slice(0, topK)) {
      const score = vectorScore(h.score);
      if (options.threshold !== undefined && score < options.threshold) continue;
      const result: VectorSearchResult = { id: h.id, score };
      const metadata = h.source.metadata;
      if (metadata !== null && metadata !== undefined) result.metadata = metadata;
      out.push(result);
    }
    return out;
  }

  async delete(id: string): Promise<void> {
    if (!this.idx.info) {
      this.idx.info = await findIndex(this.idx.conn, this.idx.prefix, "vectors");
      if (!this.idx.info) return;
    }
    await deleteDoc(this.idx.conn, this.idx.info.alias, id, `delete vector ${id}`);
  }

  async listIds(): Promise<string[]> {
    if (!this.idx.info) {
      this.idx.info = await findIndex(this.idx.conn, this.idx.prefix, "vectors");
      if (!this.idx.info) return [];
    }
    if (!this.fixed) return allIds(this.idx.conn, this.idx.info.alias);
    return scopedIds(this.idx.conn, this.idx.info.alias, vectorFilter(undefined, this.fixed));
  }

  async forget(options: ForgetOptions): Promise<ForgetResult> {
    const o = checkForgetOptions(options, VectorStoreError);
    for (const [key, value] of Object.entries(this.fixed ?? {})) {
      const given = o[key as keyof ForgetOptions];
      if (given !== undefined && given !== value) {
        throw new VectorStoreError(
          `forget: ${key} is ${JSON.stringify(given)} but this store is scoped to ${JSON.stringify(value)}; ` +
            "use a store of that scope",
        );
      }
    }
    if (!this.idx.info) {
      this.idx.info = await findIndex(this.idx.conn, this.idx.prefix, "vectors");
      if (!this.idx.info) return { deleted: 0, expunged: false, seconds: 0, expungeSeconds: 0, method: "scan" };
    }
    const scope = { ...o, ...this.fixed } as ForgetOptions;
    return forgetInIndex(this.idx.conn, this.idx.info.alias, forgetQuery("vectors", scope), o);
  }

  async refresh(): Promise<void> {
    const alias = this.idx.info?.alias;
    if (alias) await Promise.all([this.idx.conn.refreshNow(alias), restoreScheduledRefresh(this.idx.conn, alias)]);
  }

  async drop(): Promise<void> {
    if (this.idx.info) await restoreScheduledRefresh(this.idx.conn, this.idx.info.alias, true);
    await dropIndex(this.idx.conn, this.idx.prefix, "vectors");
    this.idx.info = null;
    this.idx.shape.reset();
  }

  async close(): Promise<void> {
    try {
      await restoreAll(this.idx.conn);
    } finally {
      await this.idx.conn.close();
    }
  }
}

async function scopedIds(conn: Connection, alias: string, filter: Clause | undefined): Promise<string[]> {
  const ids: string[] = [];
  const size = 5000;
  await conn.beforeRead(alias);
  const body = (after: unknown[] | undefined) => matchingIdsBody(filter, size, after?.[0] as string | undefined);
  for await (const hits of searchPages(conn, alias, body, size, `list ids of ${alias}`)) ids.push(...hits.map((h) => h.id));
  return ids;
}

/** A VectorStore over `<indexPrefix>-memorie-vectors` (created with `dimensions`, or on the first upsert). */
export async function createVectorStore(o: VectorStoreOptions): Promise<OpenSearchVectorStore> {
  if (o.dimensions !== undefined && (!Number.isInteger(o.dimensions) || o.dimensions < 1 || o.dimensions > 4096)) {
    throw new VectorStoreError(`dimensions must be a whole number from 1 to 4096, not ${describeValue(o.dimensions)}`);
  }
  for (const [key, value] of Object.entries(o.hnsw ?? {})) {
    const max = { m: 512, efConstruction: 3200 }[key];
    if (max === undefined) throw new VectorStoreError(`hnsw.${key} is not an option: use hnsw.m and hnsw.efConstruction`);
    if (!Number.isInteger(value) || (value as number) < 2 || (value as number) > max) {
      throw new VectorStoreError(`hnsw.${key} must be a whole number from 2 to ${max}, not ${describeValue(value)}`);
    }
  }
  if (o.knnCandidates !== undefined && (!Number.isInteger(o.knnCandidates) || o.knnCandidates < 1 || o.knnCandidates > 10000)) {
    throw new VectorStoreError(
      `knnCandidates must be a whole number from 1 to 10000, not ${String(o.knnCandidates)}; leave it out to choose from the index's size`,
    );
  }
  const conn = await connect(o, VectorStoreError);
  try {
    const idx = new VectorIndex(conn, o.indexPrefix, o.hnsw, layoutOf(o), o.knnCandidates);
    idx.info = await findIndex(conn, o.indexPrefix, "vectors");
    if (idx.info) await checkLayout(conn, idx.info, idx.layout);
    if (idx.info && o.dimensions !== undefined && idx.info.meta.dims !== o.dimensions) {
      throw new VectorStoreError(
        `dimension mismatch: index ${idx.info.index} holds ${idx.info.meta.dims}-dimensional vectors but ` +
          `dimensions is ${o.dimensions}; use another indexPrefix for another embedding model`,
        { details: { expected: idx.info.meta.dims, actual: o.dimensions } },
      );
    }
    if (!idx.info && o.dimensions !== undefined) await idx.ensure(o.dimensions);
    const id = o.scope?.tenantId ? `${o.indexPrefix}/${o.scope.tenantId}` : o.indexPrefix;
    return traced(new OpenSearchVectorStoreImpl(idx, o.scope), id, VECTOR_OPERATIONS);
  } catch (exc) {
    await conn.close();
    throw exc;
  }
}
