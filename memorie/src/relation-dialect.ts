/** Request bodies of the graph store (relation documents, neighbour searches), as pure functions (see dialect.ts). */
import { dateOrNull } from "./metadata.js";
import type { Clause, MemoryRelation, MemoryScope } from "./types.js";

/** A stored relation document, as far as `relationFromSource` reads it. */
export interface RelationSource {
  id: string;
  from_id: string;
  to_id: string;
  type: string;
  created_at: string;
  weight?: number | null;
  metadata?: Record<string, unknown> | null;
}

/** The scope of a relation's two memories, as the canonical store holds them (null: not resolved). */
export interface RelationEnds {
  from: MemoryScope | null;
  to: MemoryScope | null;
}

/**
 * The document of one relation. The scope of each end (tenant, namespace, subject of its memory) is kept so that
 * `forget` finds the relations of a tenant: Memorie's relations carry no scope of their own.
 */
export function relationDoc(r: MemoryRelation, ends: RelationEnds = { from: null, to: null }): Record<string, unknown> {
  return {
    id: r.id,
    from_id: r.fromMemoryId,
    to_id: r.toMemoryId,
    from_tenant_id: ends.from?.tenantId ?? null,
    from_namespace: ends.from?.namespace ?? null,
    from_subject_id: ends.from?.subjectId ?? null,
    to_tenant_id: ends.to?.tenantId ?? null,
    to_namespace: ends.to?.namespace ?? null,
    to_subject_id: ends.to?.subjectId ?? null,
    type: r.type,
    weight: r.weight ?? null,
    created_at: dateOrNull(r.createdAt),
    metadata: r.metadata ?? null,
  };
}

export function relationFromSource(s: RelationSource): MemoryRelation {
  const r: MemoryRelation = { id: s.id, fromMemoryId: s.from_id, toMemoryId: s.to_id, type: s.type, createdAt: new Date(s.created_at) };
  if (s.weight !== null && s.weight !== undefined) r.weight = s.weight;
  if (s.metadata !== null && s.metadata !== undefined) r.metadata = s.metadata;
  return r;
}

export type Direction = "outgoing" | "incoming" | "both";

/**
 * Relations touching any of `ids` in `direction`, of the given types, with weight >= minWeight (a missing weight
 * counts as 0), in creation order (then id): the order the in-memory reference reports neighbours in.
 */
export function neighbourBody(
  ids: string[],
  direction: Direction,
  size: number,
  types?: string[],
  minWeight?: number,
  after?: unknown[],
): Clause {
  const sides: Clause[] = [];
  if (direction === "outgoing" || direction === "both") sides.push({ terms: { from_id: ids } });
  if (direction === "incoming" || direction === "both") sides.push({ terms: { to_id: ids } });
  const filter: Clause[] = [{ bool: { should: sides, minimum_should_match: 1 } }];
  if (types !== undefined) filter.push({ terms: { type: types } });
  if (minWeight !== undefined) {
    const range = { range: { weight: { gte: minWeight } } };
    filter.push(
      minWeight <= 0 ? { bool: { should: [range, { bool: { must_not: { exists: { field: "weight" } } } }] } } : range,
    );
  }
  const body: Clause = {
    query: { bool: { filter } },
    sort: [{ created_at: "asc" }, { id: "asc" }],
    size,
    _source: ["from_id", "to_id"],
    track_total_hits: false,
  };
  if (after) body.search_after = after;
  return body;
}
