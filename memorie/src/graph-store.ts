import { connect, layoutOf, type Connection, type ConnectionOptions } from "./connection.js";
import {
  type Direction,
  forgetQuery,
  neighbourBody,
  type RelationEnds,
  relationDoc,
  relationFromSource,
  type RelationSource,
  sourcePageBody,
} from "./dialect.js";
import { GraphStoreError } from "./errors.js";
import { checkForgetOptions, forgetInIndex, type ForgetOptions, type ForgetResult } from "./forget.js";
import { allIds, dropIndex, ensureIndex, type IndexInfo } from "./indices.js";
import { deleteDoc, putDoc, searchPages } from "./port.js";
import type { GraphQueryOptions, GraphStore, Memory, MemoryRelation, TraversalOptions } from "./types.js";
import { type Operations, traced } from "./tracing.js";

/** The memory operation of each traced method (src/tracing.ts). */
const GRAPH_OPERATIONS: Operations = {
  createRelation: { op: "update_memory" },
  deleteRelation: { op: "delete_memory" },
  getRelated: { op: "search_memory" },
  traverse: { op: "search_memory" },
  forget: { op: "delete_memory" },
  drop: { op: "delete_memory_store" },
};

export interface GraphStoreOptions extends ConnectionOptions {
  /** Reads a memory from the canonical store (typically `memoryStore.get`); null when it is gone. */
  resolveMemory: (id: string) => Promise<Memory | null> | Memory | null;
}

export interface OpenSearchGraphStore extends GraphStore {
  listRelations(): Promise<MemoryRelation[]>;
  /**
   * Delete every relation that touches a memory of a tenant (narrowed by `namespace`/`subjectId`: either end in that
   * scope) in one call; `expunge` also rewrites the segments that held them. Not part of Memorie's GraphStore.
   */
  forget(options: ForgetOptions): Promise<ForgetResult>;
  refresh(): Promise<void>;
  drop(): Promise<void>;
  close(): Promise<void>;
  /** Refreshes this store sent under the `deferred` policy (before reads, in the background, at close, `refresh()`). */
  readonly deferredRefreshes: number;
  readonly engine: "opensearch" | "elasticsearch";
}

const PAGE = 1000;
const TERMS_CHUNK = 10000;

function checkOptions(o: TraversalOptions | undefined, what: string): Required<Pick<TraversalOptions, "direction">> & TraversalOptions {
  const options = { ...o, direction: o?.direction ?? "outgoing" };
  if (!["outgoing", "incoming", "both"].includes(options.direction)) {
    throw new GraphStoreError(`${what}: direction must be "outgoing", "incoming" or "both", not ${JSON.stringify(options.direction)}`);
  }
  for (const key of ["limit", "maxDepth"] as const) {
    const v = options[key];
    if (v !== undefined && (!Number.isInteger(v) || v < 0)) {
      throw new GraphStoreError(`${what}: ${key} must be a whole number >= 0, not ${JSON.stringify(v)}`);
    }
  }
  if (options.minWeight !== undefined && (typeof options.minWeight !== "number" || Number.isNaN(options.minWeight))) {
    throw new GraphStoreError(`${what}: minWeight must be a number, not ${JSON.stringify(options.minWeight)}`);
  }
  if (options.types !== undefined && (!Array.isArray(options.types) || options.types.some((t) => typeof t !== "string"))) {
    throw new GraphStoreError(`${what}: types must be an array of relation type strings`);
  }
  return options;
}

class OpenSearchGraphStoreImpl implements OpenSearchGraphStore {
  constructor(
    private readonly conn: Connection,
    private readonly prefix: string,
    private readonly info: IndexInfo,
    private readonly resolveMemory: GraphStoreOptions["resolveMemory"],
  ) {}

  /** Refreshes this store sent under the `deferred` policy (before reads, in the background, at close, `refresh()`). */
  get deferredRefreshes(): number {
    return this.conn.visibility?.refreshes ?? 0;
  }

  get engine() {
    return this.conn.engine;
  }

  private get alias() {
    return this.info.alias;
  }

  async createRelation(relation: MemoryRelation): Promise<void> {
    if (!relation || typeof relation.id !== "string" || relation.id === "") {
      throw new GraphStoreError("createRelation: relation.id must be a non-empty string");
    }
    for (const key of ["fromMemoryId", "toMemoryId", "type"] as const) {
      if (typeof relation[key] !== "string" || relation[key] === "") {
        throw new GraphStoreError(`createRelation ${relation.id}: ${key} must be a non-empty string`);
      }
    }
    if (!(relation.createdAt instanceof Date) || Number.isNaN(relation.createdAt.getTime())) {
      throw new GraphStoreError(`createRelation ${relation.id}: createdAt must be a valid Date`);
    }
    const ends = await this.ends(relation);
    await putDoc(this.conn, this.alias, relation.id, relationDoc(relation, ends), `create relation ${relation.id}`);
  }

  /** The scope of both memories of a relation, read through `resolveMemory` (null for one it cannot resolve). */
  private async ends(relation: MemoryRelation): Promise<RelationEnds> {
    const scope = (m: Memory | null) =>
      m ? { tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId } : null;
    try {
      const [from, to] = await Promise.all([this.resolveMemory(relation.fromMemoryId), this.resolveMemory(relation.toMemoryId)]);
      return { from: scope(from), to: scope(to) };
    } catch (exc) {
      throw new GraphStoreError(
        `createRelation ${relation.id}: resolveMemory failed: ${(exc as Error)?.message ?? String(exc)}`,
        { cause: exc },
      );
    }
  }

  async deleteRelation(relationId: string): Promise<void> {
    await deleteDoc(this.conn, this.alias, relationId, `delete relation ${relationId}`);
  }

  /**
   * For each id of `frontier` (in order), its neighbours in relation creation order: one search per level
   * (more only past 1,000 relations or 10,000 frontier ids).
   */
  private async neighbours(frontier: string[], o: GraphQueryOptions & { direction: Direction }): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(frontier.map((id) => [id, []]));
    const outgoing = o.direction !== "incoming";
    const incoming = o.direction !== "outgoing";
    await this.conn.beforeRead(this.alias);
    for (let i = 0; i < frontier.length; i += TERMS_CHUNK) {
      const ids = frontier.slice(i, i + TERMS_CHUNK);
      const body = (after: unknown[] | undefined) => neighbourBody(ids, o.direction, PAGE, o.types, o.minWeight, after);
      for await (const hits of searchPages<RelationSource>(this.conn, this.alias, body, PAGE, "find related memories")) {
        for (const { source } of hits) {
          if (outgoing) out.get(source.from_id)?.push(source.to_id);
          if (incoming) out.get(source.to_id)?.push(source.from_id);
        }
      }
    }
    return out;
  }

  /** Resolve ids in order, skipping unresolvable ones, until `limit` memories. */
  private async resolve(ids: string[], limit?: number): Promise<Memory[]> {
    const memories: Memory[] = [];
    let i = 0;
    while (i < ids.length && (limit === undefined || memories.length < limit)) {
      const want = limit === undefined ? ids.length : limit - memories.length;
      const batch = ids.slice(i, i + want);
      i += batch.length;
      let resolved: (Memory | null)[];
      try {
        resolved = await Promise.all(batch.map((id) => this.resolveMemory(id)));
      } catch (exc) {
        throw new GraphStoreError(`resolveMemory failed: ${(exc as Error)?.message ?? String(exc)}`, { cause: exc });
      }
      for (const m of resolved) if (m) memories.push(m);
    }
    return memories;
  }

  async getRelated(memoryId: string, options?: GraphQueryOptions): Promise<Memory[]> {
    const o = checkOptions(options, "getRelated");
    if (o.limit === 0) return [];
    const found = (await this.neighbours([memoryId], o)).get(memoryId) ?? [];
    return this.resolve([...new Set(found)], o.limit);
  }

  async traverse(memoryId: string, options?: TraversalOptions): Promise<Memory[]> {
    const o = checkOptions(options, "traverse");
    const maxDepth = o.maxDepth ?? 1;
    const visited = new Set<string>([memoryId]);
    const collected: string[] = [];
    let frontier = [memoryId];
    for (let depth = 0; depth < maxDepth && frontier.length > 0; depth++) {
      const byId = await this.neighbours(frontier, o);
      const next: string[] = [];
      for (const id of frontier) {
        for (const n of byId.get(id) ?? []) {
          if (visited.has(n)) continue;
          visited.add(n);
          collected.push(n);
          next.push(n);
        }
      }
      frontier = next;
    }
    if (o.limit === 0) return [];
    return this.resolve(collected, o.limit);
  }

  async listRelations(): Promise<MemoryRelation[]> {
    const out: MemoryRelation[] = [];
    const size = 5000;
    await this.conn.beforeRead(this.alias);
    const body = (after: unknown[] | undefined) => sourcePageBody(size, after?.[0] as string | undefined);
    for await (const hits of searchPages<RelationSource>(this.conn, this.alias, body, size, "list relations")) {
      out.push(...hits.map((h) => relationFromSource(h.source)));
    }
    return out;
  }

  forget(options: ForgetOptions): Promise<ForgetResult> {
    const o = checkForgetOptions(options, GraphStoreError);
    return forgetInIndex(this.conn, this.alias, forgetQuery("relations", o), o);
  }

  /** Ids of every relation (for upkeep). */
  listIds(): Promise<string[]> {
    return allIds(this.conn, this.alias);
  }

  refresh(): Promise<void> {
    return this.conn.refreshNow(this.alias);
  }

  drop(): Promise<void> {
    return dropIndex(this.conn, this.prefix, "relations");
  }

  close(): Promise<void> {
    return this.conn.close();
  }
}

/** A GraphStore over `<indexPrefix>-memorie-relations`; memories come from `resolveMemory`. */
export async function createGraphStore(o: GraphStoreOptions): Promise<OpenSearchGraphStore> {
  if (typeof o?.resolveMemory !== "function") {
    throw new GraphStoreError("resolveMemory must be a function (id) => Memory | null, e.g. (id) => memoryStore.get(id)");
  }
  const conn = await connect(o, GraphStoreError);
  try {
    const info = await ensureIndex(conn, o.indexPrefix, "relations", () => ({}), layoutOf(o));
    return traced(new OpenSearchGraphStoreImpl(conn, o.indexPrefix, info, o.resolveMemory), o.indexPrefix, GRAPH_OPERATIONS);
  } catch (exc) {
    await conn.close();
    throw exc;
  }
}
