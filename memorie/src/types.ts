/**
 * The shapes of Memorie's records and store interfaces (`@memorie/types`, `@memorie/storage`), declared here in
 * our own words. Memorie is not published on npm; TypeScript checks by shape, so these stores plug into
 * `createMemoryEngine` as they are.
 */

/** The engines a store talks to, and when a write becomes searchable (`ConnectionOptions.refresh`). */
export type Engine = "opensearch" | "elasticsearch";
export type RefreshPolicy = "deferred" | "wait_for" | "true" | "false";

export type MemoryState = "active" | "updated" | "superseded" | "merged" | "archived" | "expired" | "deleted";

export interface Memory {
  readonly id: string;
  readonly tenantId?: string;
  readonly namespace: string;
  readonly subjectId: string;
  readonly type: string;
  content: string;
  state: MemoryState;
  importance: number;
  confidence: number;
  source?: string;
  metadata: Record<string, unknown>;
  readonly createdAt: Date;
  updatedAt: Date;
  lastAccessedAt?: Date;
  accessCount: number;
  expiresAt?: Date | null;
  version: number;
  supersededBy?: string;
  supersedes?: string;
  mergedFrom?: string[];
}

/** Bounds of a numeric or date filter; every bound given must hold. */
export interface RangeFilter<T> {
  eq?: T;
  gte?: T;
  gt?: T;
  lte?: T;
  lt?: T;
}

export interface MemoryFilters {
  type?: string | string[];
  state?: string | string[];
  importance?: RangeFilter<number>;
  confidence?: RangeFilter<number>;
  createdAt?: RangeFilter<Date>;
  updatedAt?: RangeFilter<Date>;
  /** Exact match on top-level metadata keys. */
  metadata?: Record<string, unknown>;
}

export interface MemoryScope {
  tenantId?: string;
  namespace?: string;
  subjectId?: string;
}

export type RelationType =
  | "supports"
  | "contradicts"
  | "supersedes"
  | "derived_from"
  | "related_to"
  | "depends_on"
  | "caused_by"
  | (string & {});

export interface SearchQuery extends MemoryScope {
  query?: string;
  filters?: MemoryFilters;
  limit?: number;
  offset?: number;
  relatedTo?: string;
  relationTypes?: RelationType[];
}

export type Signal = "keyword" | "semantic" | "graph" | "structured";

export interface SearchResult {
  memory: Memory;
  score: number;
  matchedSignals?: Signal[];
}

export interface VectorSearchOptions {
  topK?: number;
  threshold?: number;
  filter?: Record<string, unknown>;
}

export interface VectorSearchResult {
  id: string;
  score: number;
  metadata?: Record<string, unknown>;
}

export interface MemoryRelation {
  readonly id: string;
  readonly fromMemoryId: string;
  readonly toMemoryId: string;
  readonly type: RelationType;
  weight?: number;
  metadata?: Record<string, unknown>;
  readonly createdAt: Date;
}

export interface GraphQueryOptions {
  types?: RelationType[];
  direction?: "outgoing" | "incoming" | "both";
  limit?: number;
  minWeight?: number;
}

export interface TraversalOptions extends GraphQueryOptions {
  maxDepth?: number;
}

export interface VectorStore {
  upsert(id: string, embedding: number[], metadata?: Record<string, unknown>): Promise<void>;
  search(embedding: number[], options?: VectorSearchOptions): Promise<VectorSearchResult[]>;
  delete(id: string): Promise<void>;
  listIds?(): Promise<string[]>;
}

export interface SearchStore {
  index(memory: Memory): Promise<void>;
  search(query: SearchQuery): Promise<SearchResult[]>;
  delete(id: string): Promise<void>;
  listIds?(): Promise<string[]>;
}

export interface GraphStore {
  createRelation(relation: MemoryRelation): Promise<void>;
  deleteRelation(relationId: string): Promise<void>;
  getRelated(memoryId: string, options?: GraphQueryOptions): Promise<Memory[]>;
  traverse(memoryId: string, options?: TraversalOptions): Promise<Memory[]>;
  listRelations?(): Promise<MemoryRelation[]>;
}

/** A query clause or request body, as JSON (its fields are the engine's; the dialects build it). */
export type Clause = Record<string, unknown>;
