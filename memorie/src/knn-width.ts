/**
 * How wide the vector store's HNSW search looks, from the index's shape. Every segment has its own graph, searched
 * with the same number of candidates (OpenSearch `k` on the lucene engine, Elasticsearch `num_candidates`); the
 * shared rule (`knnCandidates`: 5 × k within [100, 10,000]) is enough on data whose neighbours stand out, and too
 * narrow on bag-of-words vectors over a skewed vocabulary, where many entries are almost equally far and a greedy
 * graph walk misses some of the nearest. A segment of many entries needs more candidates for the same recall, so
 * the width grows with the entries per segment, at least the shared rule, at most 10,000 (what both engines accept).
 * How it must grow depends on the graph (`segmentWidth`): an index built with Memorie's m 32 (`VECTOR_HNSW`) needs
 * c × √entries, c 4 on OpenSearch (1,265 for one segment of 100k, 517 for each of the six of 17k a load leaves) and
 * 6 on Elasticsearch, whose graphs of the same settings found fewer of the nearest at the same width; an index built
 * with the shared m 16 needs 0.12 × entries and still levels off at ~0.96 on one large segment (indices made before
 * m 32 keep their rule, read from their `_meta`). The measurements are in docs/memorie-performance.md.
 */
import { knnCandidates, VECTOR_HNSW } from "./settings.js";
import type { Engine } from "./types.js";

/** What decides the width: live entries of the index and its segments (primaries, all shards). */
export interface IndexShape {
  docs: number;
  segments: number;
}

export const MAX_CANDIDATES = 10000;

/** A graph of m 16: candidates per segment for every entry of the segment (measured; see the module comment). */
export const WIDTH_FRACTION = 0.12;
/** A graph of m 32 or more (`VECTOR_HNSW`, Memorie's default): candidates per segment per √entries, per engine. */
export const WIDE_GRAPH_SCALE: Readonly<Record<Engine, number>> = { opensearch: 4, elasticsearch: 6 };

/** Candidates a segment of `entries` needs on `engine`, for a graph built with `m` (undefined: m 16's rule). */
export function segmentWidth(entries: number, m: number | undefined, engine: Engine = "opensearch"): number {
  if (m === undefined || m < VECTOR_HNSW.m) return WIDTH_FRACTION * entries;
  return WIDE_GRAPH_SCALE[engine] * Math.sqrt(entries);
}

/** Candidates per segment for the `k` nearest in an index on `engine` whose graph has `m`: the shared rule, widened
 * for large segments. */
export function knnWidth(k: number, shape: IndexShape | undefined, m?: number, engine: Engine = "opensearch"): number {
  const base = knnCandidates(k);
  if (!shape || !(shape.docs > 0)) return base;
  const perSegment = shape.docs / Math.max(1, shape.segments);
  return Math.max(k, Math.min(MAX_CANDIDATES, Math.max(base, Math.ceil(segmentWidth(perSegment, m, engine)))));
}

/**
 * The last known shape of one index, read again in the background when older than `maxAgeMs`: only the first
 * search waits for it. A failed read keeps the last shape (none: the shared rule) until the next is due.
 */
export class ShapeCache {
  private shape: IndexShape | undefined;
  private readAt = -Infinity;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly read: () => Promise<IndexShape | undefined>,
    private readonly maxAgeMs = 10000,
    private readonly now: () => number = Date.now,
  ) {}

  async get(): Promise<IndexShape | undefined> {
    if (this.reading === null && this.now() - this.readAt >= this.maxAgeMs) {
      this.readAt = this.now();
      this.reading = this.read()
        .then((s) => void (this.shape = s ?? this.shape), () => undefined)
        .finally(() => void (this.reading = null));
      if (this.shape === undefined) await this.reading;
    } else if (this.shape === undefined && this.reading !== null) await this.reading;
    return this.shape;
  }

  /** Forget the shape (the index was dropped or replaced). */
  reset(): void {
    this.shape = undefined;
    this.readAt = -Infinity;
  }
}
