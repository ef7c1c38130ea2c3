/** Request bodies of the vector store (k-NN search, documents, filters, scores), as pure functions (see dialect.ts). */
import type { Engine } from "./connection.js";
import { metadataClauses, metadataTerms } from "./metadata.js";
import { knnCandidates } from "./settings.js";
import type { Clause } from "./types.js";

/** The document of one vector entry; a zero vector is stored without a vector (cosine is undefined for it). */
export function vectorDoc(id: string, embedding: number[], metadata?: Record<string, unknown>): Record<string, unknown> {
  const zero = embedding.every((x) => x === 0);
  const doc: Record<string, unknown> = {
    id,
    zero,
    has_meta: metadata !== undefined,
    ...metadataTerms(metadata),
    metadata: metadata ?? null,
  };
  if (!zero) doc.embedding = embedding;
  return doc;
}

/** The per-segment candidates of an Elasticsearch k-NN search (the shared rule: factor × k within [min, max]). */
export function num_candidates(k: number): number {
  return knnCandidates(k);
}

/** Filter clauses of a vector search: the scope of a scoped store and the caller's metadata filter. */
export function vectorFilter(filter?: Record<string, unknown>, fixed?: Record<string, unknown>): Clause | undefined {
  const clauses: Clause[] = [];
  const mustNot: Clause[] = [];
  for (const f of [fixed, filter]) {
    if (!f) continue;
    const m = metadataClauses(f);
    clauses.push(...m.filter);
    mustNot.push(...m.must_not);
  }
  if (filter !== undefined || fixed !== undefined) clauses.push({ term: { has_meta: true } });
  if (clauses.length === 0 && mustNot.length === 0) return undefined;
  const bool: Clause = { filter: clauses };
  if (mustNot.length > 0) bool.must_not = mustNot;
  return { bool };
}

/**
 * One k-NN request for the `k` nearest entries. Entries stored as zero vectors score 0.5 against any query (cosine
 * taken as 0), so a constant-score clause over them is added to the same request; an entry has either a vector
 * or the zero flag, so summed scores are the one that applies. A zero query vector scores 0.5 for every entry.
 */
export function knnBody(engine: Engine, vector: number[], k: number, filter: Clause | undefined, candidates = knnCandidates(k)): Clause {
  const zeroQuery = vector.every((x) => x === 0);
  const zeroDocs = { bool: { filter: [{ term: { zero: true } }, ...(filter ? [filter] : [])] } };
  if (zeroQuery) {
    return {
      size: k,
      query: { constant_score: { filter: filter ?? { match_all: {} }, boost: 0.5 } },
      sort: [{ _score: "desc" }, { id: "asc" }],
      _source: ["metadata"],
      track_total_hits: false,
    };
  }
  const zeroClause = { constant_score: { filter: zeroDocs, boost: 0.5 } };
  if (engine === "opensearch") {
    const knn: Clause = { vector, k: Math.max(k, candidates) };
    if (filter) knn.filter = filter;
    return {
      size: k,
      query: { bool: { should: [{ knn: { embedding: knn } }, zeroClause] } },
      _source: ["metadata"],
      track_total_hits: false,
    };
  }
  const knn: Clause = { field: "embedding", query_vector: vector, k, num_candidates: Math.max(k, candidates) };
  if (filter) knn.filter = filter;
  return { size: k, knn, query: zeroClause, _source: ["metadata"], track_total_hits: false };
}

/**
 * The engines' cosine k-NN score is already (1 + cos) / 2 (measured: OpenSearch 2.19 lucene `cosinesimil` and
 * Elasticsearch 9 `cosine` both give 1, 0.8535534, 0.5, 0 for 0°, 45°, 90°, 180°); clamp float rounding into [0, 1].
 */
export function vectorScore(raw: number | null | undefined): number {
  return Math.min(1, Math.max(0, raw ?? 0));
}

