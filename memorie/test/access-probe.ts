/**
 * The Memorie half of `reme-es access` (a grant of one Memorie tenant), driven by the Python access cases
 * (tests/reliability/access_cases.py) on the secured nodes: the real stores, as one user, print what they see as JSON.
 * Not a `*.test.ts`: `node --test dist/test/` does not run it, and it needs no test node from the environment.
 *
 *   node dist/test/access-probe.js write|read|index-as
 *
 * Settings from the environment: REME_ES_PROBE_URL, REME_ES_PROBE_USER, REME_ES_PROBE_PASSWORD, REME_ES_PROBE_CA
 * (a CA file), REME_ES_PROBE_PREFIX (the stores' indexPrefix), REME_ES_PROBE_TENANTS (comma-separated),
 * REME_ES_PROBE_VECTORS ("0": no vector store, for a node without k-NN), REME_ES_PROBE_MEMORY (index-as: the id and
 * tenant of the memory to index, `id,tenant`).
 *
 * - write (an admin): for each tenant T, memories T-m1 and T-m2 (content "heron note of T"; T-m2's own metadata names
 *   the next tenant as `tenantId`, which must not make it that tenant's), their vectors (metadata {tenantId: T, ...},
 *   as Memorie's engine writes it) and the relation T-r1 (T-m1 -> T-m2); prints the ids written.
 * - read (a grantee): every read method of the three stores, for each tenant's scope asked by hand and unscoped;
 *   prints [{call, tenant, ids}] (tenant null: unscoped). The graph store resolves any id to a memory of that id, so
 *   its answers are exactly the relations it could read.
 * - index-as: the search store indexes one memory; prints {ok: true} or {ok: false, status, message}.
 */
import { readFileSync } from "node:fs";

import { type ConnectionOptions, createGraphStore, createSearchStore, createVectorStore, type Memory } from "../src/index.js";

const DIMS = 4;

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`access-probe: set ${name}`);
  return value;
}

function options(): ConnectionOptions {
  return {
    url: env("REME_ES_PROBE_URL"),
    indexPrefix: env("REME_ES_PROBE_PREFIX"),
    auth: { username: env("REME_ES_PROBE_USER"), password: env("REME_ES_PROBE_PASSWORD") },
    tls: { ca: readFileSync(env("REME_ES_PROBE_CA")) },
    retry: { retries: 0 },
  };
}

function memory(id: string, tenantId: string, content: string, metadata: Record<string, unknown> = {}): Memory {
  const now = new Date();
  return {
    id,
    tenantId,
    namespace: "notes",
    subjectId: "subject-1",
    type: "fact",
    content,
    state: "active",
    importance: 0.5,
    confidence: 0.5,
    metadata,
    createdAt: now,
    updatedAt: now,
    accessCount: 0,
    expiresAt: null,
    version: 1,
  };
}

function vector(index: number): number[] {
  const v = new Array<number>(DIMS).fill(0.1);
  v[index % DIMS] = 1;
  return v;
}

async function write(tenants: string[], vectors: boolean): Promise<unknown> {
  const o = options();
  const byId = new Map<string, Memory>();
  const search = await createSearchStore(o);
  const graph = await createGraphStore({ ...o, resolveMemory: (id) => byId.get(id) ?? null });
  const vectorStore = vectors ? await createVectorStore({ ...o, dimensions: DIMS }) : null;
  const written: Record<string, string[]> = { memories: [], vectors: [], relations: [] };
  try {
    for (const [i, tenant] of tenants.entries()) {
      const next = tenants[(i + 1) % tenants.length] as string;
      const memories = [
        memory(`${tenant}-m1`, tenant, `heron note of ${tenant}`),
        memory(`${tenant}-m2`, tenant, `heron note of ${tenant} again`, { tenantId: next }),
      ];
      for (const [j, m] of memories.entries()) {
        byId.set(m.id, m);
        await search.index(m);
        written.memories?.push(m.id);
        if (vectorStore) {
          await vectorStore.upsert(m.id, vector(j), { tenantId: tenant, namespace: m.namespace, subjectId: m.subjectId });
          written.vectors?.push(m.id);
        }
      }
      await graph.createRelation({
        id: `${tenant}-r1`,
        fromMemoryId: `${tenant}-m1`,
        toMemoryId: `${tenant}-m2`,
        type: "supports",
        weight: 0.9,
        createdAt: new Date(),
      });
      written.relations?.push(`${tenant}-r1`);
    }
    await search.refresh();
    await graph.refresh();
    await vectorStore?.refresh();
  } finally {
    await search.close();
    await graph.close();
    await vectorStore?.close();
  }
  return written;
}

async function read(tenants: string[], vectors: boolean): Promise<unknown> {
  const o = options();
  const search = await createSearchStore(o);
  const graph = await createGraphStore({ ...o, resolveMemory: (id) => ({ id }) as Memory });
  const vectorStore = vectors ? await createVectorStore(o) : null;
  const seen: { call: string; tenant: string | null; ids: string[] }[] = [];
  const note = async (call: string, tenant: string | null, found: Promise<{ id: string }[] | string[]>) => {
    const ids = (await found).map((x) => (typeof x === "string" ? x : x.id));
    seen.push({ call, tenant, ids: ids.sort() });
  };
  const memories = async (found: Promise<{ memory: Memory }[]>) => (await found).map((r) => r.memory);
  try {
    await note("search.search", null, memories(search.search({})));
    await note("search.search text", null, memories(search.search({ query: "heron" })));
    await note("search.listIds", null, search.listIds());
    await note("graph.listRelations", null, graph.listRelations());
    if (vectorStore) {
      await note("vectors.search", null, vectorStore.search(vector(0), { topK: 10 }));
      await note("vectors.listIds", null, vectorStore.listIds());
    }
    for (const tenant of tenants) {
      await note("search.search", tenant, memories(search.search({ tenantId: tenant })));
      await note("search.search text", tenant, memories(search.search({ tenantId: tenant, query: "heron" })));
      const scope = { tenantId: tenant, namespace: "notes", subjectId: "subject-1" };
      await note("search.search scope+filters", tenant, memories(search.search({ ...scope, filters: { type: "fact" } })));
      await note("graph.getRelated out", tenant, graph.getRelated(`${tenant}-m1`));
      await note("graph.getRelated in", tenant, graph.getRelated(`${tenant}-m2`, { direction: "incoming" }));
      await note("graph.getRelated both", tenant, graph.getRelated(`${tenant}-m1`, { direction: "both" }));
      await note("graph.traverse", tenant, graph.traverse(`${tenant}-m1`, { maxDepth: 2, direction: "both" }));
      if (vectorStore) {
        await note("vectors.search filter", tenant, vectorStore.search(vector(0), { topK: 10, filter: { tenantId: tenant } }));
        const scoped = vectorStore.scoped({ tenantId: tenant });
        await note("vectors.scoped.search", tenant, scoped.search(vector(1), { topK: 10 }));
        await note("vectors.scoped.listIds", tenant, scoped.listIds());
      }
    }
  } finally {
    await search.close();
    await graph.close();
    await vectorStore?.close();
  }
  return seen;
}

async function indexAs(): Promise<unknown> {
  const [id, tenant] = env("REME_ES_PROBE_MEMORY").split(",") as [string, string];
  const search = await createSearchStore({ ...options(), refresh: "true" });
  try {
    await search.index(memory(id, tenant, `heron planted as ${tenant}`));
    return { ok: true };
  } catch (exc) {
    const e = exc as { status?: number; message?: string };
    return { ok: false, status: e.status ?? null, message: String(e.message) };
  } finally {
    await search.close();
  }
}

async function main(): Promise<void> {
  const action = process.argv[2];
  const tenants = (process.env.REME_ES_PROBE_TENANTS ?? "").split(",").filter((t) => t !== "");
  const vectors = process.env.REME_ES_PROBE_VECTORS !== "0";
  const run = { write: () => write(tenants, vectors), read: () => read(tenants, vectors), "index-as": indexAs }[
    action as "write" | "read" | "index-as"
  ];
  if (!run) throw new Error(`access-probe: the action must be write, read or index-as, not ${JSON.stringify(action)}`);
  process.stdout.write(`${JSON.stringify(await run())}\n`);
}

main().catch((exc) => {
  process.stderr.write(`access-probe: ${(exc as Error)?.stack ?? String(exc)}\n`);
  process.exitCode = 1;
});
