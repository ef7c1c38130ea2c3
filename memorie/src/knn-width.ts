/**
 * How wide the vector store's HNSW search looks, from the index's shape. Every segment has its own graph, searched
 * with the same number of candidates (OpenSearch `k` on the lucene engine, Elasticsearch `num_candidates`); the
 * shared rule (`knnCandidates`: 5 × k within [100, 10,000]) is enough on data whose neighbours stand out, and too
 * narrow on bag-of-words vectors over a skewed vocabulary, where many entries are almost equally far and a greedy
 * graph walk misses some of the nearest. A segment of many entries needs more candidates for the same recall, so
 * the width grows with the entries per segment: `fraction` × docs / segments, at least the shared rule, at most
 * 10,000 (what both engines accept). The measurements behind `fraction` are in memorie/README.md (Performance).
 */
import { knnCandidates } from "./settings.js";

/** What decides the width: live entries of the index and its segments (primaries, all shards). */
export interface IndexShape {
  docs: number;
  segments: number;
}

export const MAX_CANDIDATES = 10000;

/** Candidates per segment for every 100 entries of a segment (measured; see the module comment). */
export const WIDTH_FRACTION = 0.12;

/** Candidates per segment for the `k` nearest: the shared rule, widened for large segments. */
export function knnWidth(k: number, shape: IndexShape | undefined, fraction = WIDTH_FRACTION): number {
  const base = knnCandidates(k);
  if (!shape || !(shape.docs > 0)) return base;
  const perSegment = shape.docs / Math.max(1, shape.segments);
  return Math.max(k, Math.min(MAX_CANDIDATES, Math.max(base, Math.ceil(fraction * perSegment))));
}

/** The shape from an index-stats answer (`_stats/docs,segments`), or undefined when it holds none. */
export function shapeOfStats(body: any): IndexShape | undefined {
  const primaries = body?._all?.primaries;
  const docs = primaries?.docs?.count;
  const segments = primaries?.segments?.count;
  return typeof docs === "number" && typeof segments === "number" ? { docs, segments } : undefined;
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
