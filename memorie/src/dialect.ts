/**
 * Everything that differs between OpenSearch and Elasticsearch, and every request body, as pure functions.
 * The stores do I/O only; these builders are tested without a server (test/unit.test.ts).
 */
import type { Engine } from "./connection.js";
import { searchQueryProblem } from "./filter-check.js";
import { dateOrNull, metadataClauses, metadataTerms } from "./metadata.js";
import { HNSW, readDataFile, VECTOR_HNSW, vectorMapping as sharedVectorMapping } from "./settings.js";
import type { Clause, Memory, MemoryFilters, RangeFilter, SearchQuery } from "./types.js";

export type IndexKind = "memories" | "vectors" | "relations";

export { HNSW, VECTOR_HNSW };
export { canonicalJson, metadataClauses, metadataTerms } from "./metadata.js";

/** A fresh copy of one template (`memorie/templates/<kind>.json`, copied into dist/templates). */
export function loadTemplate(kind: IndexKind): { version: number; settings: any; mappings: any } {
  return readDataFile(`${kind}.json`);
}

/** The analyzer of memory content: porter stemming where the node has it, no stop words either way. */
export function textAnalyzer(stemming: boolean): Record<string, unknown> {
  return stemming
    ? { type: "custom", tokenizer: "standard", filter: ["lowercase", "porter_stem"] }
    : { type: "standard" };
}

/** The vector field (shared mapping): HNSW cosine; lucene on OpenSearch, `dense_vector` hnsw on Elasticsearch. */
export function vectorMapping(engine: Engine, dims: number, hnsw: HnswOptions = {}): Record<string, unknown> {
  return sharedVectorMapping(engine, dims, hnsw.m ?? VECTOR_HNSW.m, hnsw.efConstruction ?? VECTOR_HNSW.efConstruction);
}

/** HNSW build settings of a new vector index (default: `VECTOR_HNSW`, m 32 / ef_construction 150). */
export interface HnswOptions {
  m?: number;
  efConstruction?: number;
}

/**
 * Shards and replicas of a new index. Default: the template's one shard and `auto_expand_replicas: "0-1"` (a single
 * node stays green; a cluster of two or more nodes keeps one replica of every shard).
 */
export interface IndexLayout {
  shards?: number;
  /** A fixed number of replicas: `number_of_replicas` N and `auto_expand_replicas` off. */
  replicas?: number;
}

export interface RenderOptions extends IndexLayout {
  hnsw?: HnswOptions;
  stemming?: boolean;
  dims?: number;
}

/** The index settings a layout asks for (empty when it asks for nothing: the template's settings apply). */
export function layoutSettings(layout: IndexLayout): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (layout.shards !== undefined) out.number_of_shards = layout.shards;
  if (layout.replicas !== undefined) {
    out.number_of_replicas = layout.replicas;
    out.auto_expand_replicas = false;
  }
  return out;
}

/**
 * What differs between the layout asked for and an existing index's settings (`index.number_of_shards`,
 * `index.number_of_replicas`, `index.auto_expand_replicas` as the node reports them: strings), one line per option.
 */
export function layoutMismatches(layout: IndexLayout, settings: Record<string, unknown>): string[] {
  const out: string[] = [];
  const shards = Number(settings.number_of_shards);
  if (layout.shards !== undefined && shards !== layout.shards) out.push(`shards is ${layout.shards} but the index has ${shards}`);
  if (layout.replicas !== undefined) {
    const replicas = Number(settings.number_of_replicas);
    const auto = settings.auto_expand_replicas;
    if (replicas !== layout.replicas) out.push(`replicas is ${layout.replicas} but the index has ${replicas}`);
    else if (auto !== undefined && auto !== "false" && auto !== false) {
      out.push(`replicas is ${layout.replicas} but the index expands its replicas automatically (auto_expand_replicas ${auto})`);
    }
  }
  return out;
}

/** The create-index body of one kind for this engine, with the alias and a `_meta` recording the choices. */
export function renderIndex(kind: IndexKind, engine: Engine, alias: string, o: RenderOptions = {}): any {
  const body = loadTemplate(kind);
  const version = body.version;
  const settings = body.settings;
  const props = body.mappings.properties;
  const meta: Record<string, unknown> = { kind: `memorie-${kind}`, template_version: version };
  if (kind === "memories") {
    settings.analysis.analyzer.memorie_text = textAnalyzer(Boolean(o.stemming));
    meta.stemming = Boolean(o.stemming);
  }
  if (kind === "vectors") {
    if (!o.dims) throw new Error("a vectors index needs its dimension");
    props.embedding = vectorMapping(engine, o.dims, o.hnsw);
    meta.dims = o.dims;
    meta.hnsw = { m: o.hnsw?.m ?? VECTOR_HNSW.m, ef_construction: o.hnsw?.efConstruction ?? VECTOR_HNSW.efConstruction };
    if (engine === "opensearch") settings.index.knn = true;
  }
  Object.assign(settings.index, layoutSettings(o));
  body.mappings._meta = { reme_es: meta };
  return { settings, mappings: body.mappings, aliases: { [alias]: {} } };
}

/** The alias of one kind (`<prefix>-memorie-<kind>`) and its versioned index name. */
export function indexNames(prefix: string, kind: IndexKind): { alias: string; index: string; version: number } {
  const alias = `${prefix}-memorie-${kind}`;
  const version = loadTemplate(kind).version;
  return { alias, index: `${alias}-v${version}`, version };
}

// --------------------------------------------------------------------------------------- search store

const DATE_KEYS = ["createdAt", "updatedAt", "lastAccessedAt", "expiresAt"] as const;

/** The document of one memory: scope and filter fields, analysed content, and the whole record. */
export function memoryDoc(memory: Memory): Record<string, unknown> {
  const { content, ...rest } = memory;
  const record: Record<string, unknown> = { ...rest };
  for (const key of DATE_KEYS) {
    const value = record[key];
    if (value instanceof Date) record[key] = value.toISOString();
  }
  return {
    id: memory.id,
    tenant_id: memory.tenantId ?? null,
    namespace: memory.namespace,
    subject_id: memory.subjectId,
    type: memory.type,
    state: memory.state,
    importance: memory.importance,
    confidence: memory.confidence,
    created_at: dateOrNull(memory.createdAt),
    updated_at: dateOrNull(memory.updatedAt),
    last_accessed_at: dateOrNull(memory.lastAccessedAt),
    expires_at: dateOrNull(memory.expiresAt),
    content,
    ...metadataTerms(memory.metadata),
    record,
  };
}

/** The memory stored in a document, with real `Date`s. */
export function memoryFromSource(source: MemorySource): Memory {
  const record: Record<string, unknown> = { ...source.record, content: source.content };
  for (const key of DATE_KEYS) {
    const value = record[key];
    if (typeof value === "string") record[key] = new Date(value);
  }
  return record as unknown as Memory;
}

/** A stored memory document, as far as `memoryFromSource` reads it. */
export interface MemorySource {
  content: string;
  record: Record<string, unknown>;
}

export class InvalidQuery extends Error {}

function list(value: string | string[], name: string): string[] {
  const values = Array.isArray(value) ? value : [value];
  if (values.some((v) => typeof v !== "string")) throw new InvalidQuery(`filters.${name} must be a string or strings`);
  return values;
}

/** A value for an error message: JSON where that says what it is, else its type (a string is quoted). */
function describeValue(v: unknown): string {
  if (v === undefined) return "undefined";
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  return JSON.stringify(v) ?? typeof v;
}

function rangeClause(field: string, name: string, range: RangeFilter<number | Date>, kind: "number" | "date"): Clause[] {
  const convert = (bound: string, v: unknown): number | string => {
    if (kind === "number") {
      if (typeof v !== "number" || !Number.isFinite(v)) {
        throw new InvalidQuery(`filters.${name}.${bound} must be a finite number, not ${describeValue(v)}`);
      }
      return v;
    }
    if (!(v instanceof Date) || Number.isNaN(v.getTime())) {
      const got = v instanceof Date ? "an invalid Date (new Date() of an unparseable value)" : describeValue(v);
      throw new InvalidQuery(`filters.${name}.${bound} must be a valid Date, not ${got}`);
    }
    return v.toISOString();
  };
  const bounds: Record<string, number | string> = {};
  for (const bound of ["gte", "gt", "lte", "lt"] as const) {
    if (range[bound] !== undefined) bounds[bound] = convert(bound, range[bound]);
  }
  const clauses: Clause[] = [];
  if (range.eq !== undefined) clauses.push({ term: { [field]: convert("eq", range.eq) } });
  if (Object.keys(bounds).length > 0) clauses.push({ range: { [field]: bounds } });
  return clauses;
}

/** Scope (defined keys only) and every filter, as server-side filter clauses. */
export function searchFilter(query: SearchQuery): { filter: Clause[]; must_not: Clause[] } {
  const problem = searchQueryProblem(query);
  if (problem !== undefined) throw new InvalidQuery(problem);
  const filter: Clause[] = [];
  let must_not: Clause[] = [];
  if (query.tenantId !== undefined) filter.push({ term: { tenant_id: query.tenantId } });
  if (query.namespace !== undefined) filter.push({ term: { namespace: query.namespace } });
  if (query.subjectId !== undefined) filter.push({ term: { subject_id: query.subjectId } });
  const f: MemoryFilters = query.filters ?? {};
  if (f.type !== undefined) filter.push({ terms: { type: list(f.type, "type") } });
  if (f.state !== undefined) filter.push({ terms: { state: list(f.state, "state") } });
  if (f.importance) filter.push(...rangeClause("importance", "importance", f.importance, "number"));
  if (f.confidence) filter.push(...rangeClause("confidence", "confidence", f.confidence, "number"));
  if (f.createdAt) filter.push(...rangeClause("created_at", "createdAt", f.createdAt, "date"));
  if (f.updatedAt) filter.push(...rangeClause("updated_at", "updatedAt", f.updatedAt, "date"));
  if (f.metadata) {
    const m = metadataClauses(f.metadata);
    filter.push(...m.filter);
    must_not = m.must_not;
  }
  return { filter, must_not };
}

function count(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new InvalidQuery(`${name} must be a whole number >= 0, not ${JSON.stringify(value)}`);
  }
  return value;
}

export const DEFAULT_LIMIT = 20;
export const MAX_WINDOW = 10000;

/**
 * The search body of a SearchQuery. With text: every word must match (`match`, operator `and`; the text is never
 * parsed as query syntax), best BM25 first. Without text: the filters alone, newest `updatedAt` first.
 */
export function searchBody(query: SearchQuery): { body: Clause; withText: boolean } {
  if (query.query !== undefined && typeof query.query !== "string") {
    throw new InvalidQuery(`query must be a string, not ${typeof query.query}`);
  }
  if (query.query !== undefined && query.query.trim() === "") {
    throw new InvalidQuery("query is blank: give words to search for, or leave `query` out for a filters-only search");
  }
  const limit = count(query.limit, "limit", DEFAULT_LIMIT);
  const offset = count(query.offset, "offset", 0);
  if (offset + limit > MAX_WINDOW) {
    throw new InvalidQuery(`offset + limit must be at most ${MAX_WINDOW} (got ${offset + limit}); narrow the filters`);
  }
  const { filter, must_not } = searchFilter(query);
  const withText = query.query !== undefined;
  const bool: Clause = { filter };
  if (must_not.length > 0) bool.must_not = must_not;
  if (withText) bool.must = [{ match: { content: { query: query.query, operator: "and" } } }];
  const sort = withText
    ? [{ _score: "desc" }, { updated_at: { order: "desc", missing: "_last" } }, { id: "asc" }]
    : [{ updated_at: { order: "desc", missing: "_last" } }, { id: "asc" }];
  return {
    withText,
    body: { query: { bool }, sort, from: offset, size: limit, track_scores: withText, track_total_hits: false },
  };
}

/** BM25 relevance s >= 0 mapped into [0, 1): s / (s + 1), the SQLite reference adapter's formula. */
export function keywordScore(raw: number | null | undefined): number {
  const s = Math.max(0, raw ?? 0);
  return s / (s + 1);
}

/** One page of documents with their sources in `id` order after `after` (search_after on the `id` keyword). */
export function sourcePageBody(size: number, after?: string): Clause {
  const body: Clause = { query: { match_all: {} }, sort: [{ id: "asc" }], size, track_total_hits: false };
  if (after !== undefined) body.search_after = [after];
  return body;
}

/** One page of ids in `id` order after `after` (search_after on the `id` keyword, so no 10,000 window). */
export function idPageBody(size: number, after?: string): Clause {
  const body: Clause = { query: { match_all: {} }, sort: [{ id: "asc" }], size, _source: false, track_total_hits: false };
  if (after !== undefined) body.search_after = [after];
  return body;
}

export * from "./vector-dialect.js";

export * from "./relation-dialect.js";

// ------------------------------------------------------------------------------------------------- forget

/** What `forget` removes: every document of one tenant, optionally narrowed to a namespace and/or a subject. */
export interface ForgetScope {
  tenantId: string;
  namespace?: string;
  subjectId?: string;
}

/**
 * The query of a `forget` on one kind of index. Memories keep the scope in `tenant_id`/`namespace`/`subject_id`;
 * vectors in their metadata (the keys Memorie's engine writes: `tenantId`, `namespace`, `subjectId`); a relation
 * matches when either of its memories is in the scope (both ends' scope fields are kept on the relation).
 */
export function forgetQuery(kind: IndexKind, scope: ForgetScope): Clause {
  const keys = (["tenantId", "namespace", "subjectId"] as const).filter((k) => scope[k] !== undefined);
  if (kind === "vectors") {
    return { bool: { filter: metadataClauses(Object.fromEntries(keys.map((k) => [k, scope[k]]))).filter } };
  }
  const field = { tenantId: "tenant_id", namespace: "namespace", subjectId: "subject_id" } as const;
  const terms = (prefix: string) => keys.map((k) => ({ term: { [prefix + field[k]]: scope[k] } }));
  if (kind === "memories") return { bool: { filter: terms("") } };
  return {
    bool: {
      should: [{ bool: { filter: terms("from_") } }, { bool: { filter: terms("to_") } }],
      minimum_should_match: 1,
    },
  };
}

/** One page of the ids matching `query`, in `id` order after `after` (the scan of `forget` without delete-by-query). */
export function matchingIdsBody(query: Clause | undefined, size: number, after?: string): Clause {
  const body: Clause = { query, sort: [{ id: "asc" }], size, _source: false, track_total_hits: false };
  if (after !== undefined) body.search_after = [after];
  return body;
}
