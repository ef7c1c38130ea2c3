/**
 * The shared state of one vector index (every scoped view of a vector store holds the same): its connection, its
 * alias and dimension once it exists, its shape (entries and segments) and the k-NN search width that follows from it
 * or from the calibration recorded in its `_meta`.
 */
import type { Connection } from "./connection.js";
import type { IndexLayout } from "./dialect.js";
import { VectorStoreError } from "./errors.js";
import { ensureIndex, findIndex, type IndexInfo } from "./indices.js";
import {
  type CalibrateOptions,
  type Calibration,
  calibrateIndex,
  calibratedWidth,
  calibrationDue,
  calibrationOfMeta,
  CALIBRATION,
} from "./knn-calibration.js";
import { knnWidth, ShapeCache } from "./knn-width.js";
import { indexShape } from "./port-indices.js";
import type { Clause } from "./types.js";

/** Shared state of one vector index: its connection and, once it exists, its alias and dimension. */
export class VectorIndex {
  info: IndexInfo | null = null;
  private creating: Promise<IndexInfo> | null = null;
  /** Entries and segments of the index, for the search width. */
  readonly shape = new ShapeCache(async () => (this.info ? indexShape(this.conn, this.info.alias) : undefined));

  constructor(
    readonly conn: Connection,
    readonly prefix: string,
    readonly hnsw: { m?: number; efConstruction?: number } = {},
    readonly layout: IndexLayout = {},
    readonly candidates?: number,
  ) {}

  /** HNSW candidates per segment for the `k` nearest: the option, else from the index's shape. */
  async width(k: number): Promise<number> {
    if (this.candidates !== undefined) return Math.max(k, this.candidates);
    const calibration = this.calibration;
    const shape = await this.shape.get();
    const rule = () => knnWidth(k, shape, this.info?.meta.hnsw?.m, this.conn.engine);
    if (!calibration) return rule();
    const width = calibratedWidth(calibration, k, shape);
    // The index moved away from what was measured (a merge, a load without calibrate): at least the rule until the
    // next calibration (the first search's after a load, or `calibrate()`).
    return shape && calibrationDue(calibration, shape) ? Math.max(width, rule()) : width;
  }

  /** The width measured on the index (its `_meta`), if any. */
  get calibration(): Calibration | undefined {
    return calibrationOfMeta(this.info?.meta);
  }

  /** Measure and record the width (see `OpenSearchVectorStore.calibrate`); `filter`: the store's scope. */
  async calibrate(filter: Clause | undefined, o: CalibrateOptions = {}): Promise<Calibration> {
    if (!this.info) this.info = await findIndex(this.conn, this.prefix, "vectors");
    if (!this.info) throw new VectorStoreError("calibrate: the vector index does not exist yet; upsert first");
    const info = this.info;
    await this.conn.refreshNow(info.alias);
    this.shape.reset();
    const shape = (await this.shape.get()) ?? { docs: 0, segments: 0 };
    const result = await calibrateIndex(this.conn, info.alias, info.meta, shape, filter, o);
    if (o.record !== false) info.meta = { ...info.meta, [CALIBRATION.meta_key]: result };
    this.shape.reset(); // the next search reads the shape again (a merge after a load changes it at once)
    return result;
  }

  /** A load (`upsertMany`) ended since the last check: the next search calibrates if due (`settle`), never a part. */
  settlePending = false;
  private settling: Promise<unknown> | null = null;

  /**
   * Before a search: when a load ended since the last check, calibrate once if due (issue 53: on the settled index,
   * not per part of a load). Concurrent searches share the one measurement. A failed calibration does not fail the
   * search: the width stays at least the rule's while the record is stale (`width`), and the next load checks again.
   */
  async settle(filter: Clause | undefined): Promise<void> {
    if (this.settlePending) {
      this.settlePending = false;
      this.settling ??= this.calibrateIfDue(filter)
        .catch(() => undefined)
        .finally(() => {
          this.settling = null;
        });
    }
    if (this.settling) await this.settling;
  }

  /** Calibrate when `knn_calibration.due_rule` holds (after a load); not with a fixed `knnCandidates`. */
  async calibrateIfDue(filter: Clause | undefined): Promise<Calibration | undefined> {
    if (this.candidates !== undefined || !this.info) return undefined;
    await this.conn.refreshNow(this.info.alias);
    this.shape.reset();
    const shape = await this.shape.get();
    if (!shape || !calibrationDue(this.calibration, shape)) return undefined;
    try {
      return await this.calibrate(filter);
    } catch (exc) {
      // A role that may search but not put mappings (or read index stats) loads without a calibration.
      if ([401, 403].includes((exc as { status?: number }).status ?? 0)) return undefined;
      throw exc;
    }
  }

  get dims(): number | undefined {
    return this.info?.meta.dims;
  }

  /** The index, created with `dims` if missing. */
  async ensure(dims: number): Promise<IndexInfo> {
    if (this.info) return this.info;
    this.creating ??= ensureIndex(this.conn, this.prefix, "vectors", () => ({ dims, hnsw: this.hnsw }), this.layout).finally(() => {
      this.creating = null;
    });
    this.info = await this.creating;
    return this.info;
  }

  checkDims(embedding: number[], what: string): void {
    const dims = this.dims;
    if (dims !== undefined && embedding.length !== dims) {
      throw new VectorStoreError(
        `${what}: dimension mismatch: the index ${this.info?.index} holds ${dims}-dimensional vectors, got ` +
          `${embedding.length}; use one embedding model per indexPrefix`,
        { details: { expected: dims, actual: embedding.length } },
      );
    }
  }
}
