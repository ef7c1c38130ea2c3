import assert from "node:assert/strict";
import { describe, it } from "node:test";

import type { GraphStore, Memory, MemoryRelation } from "../types.js";
import { makeMemory, makeRelation } from "./common.js";

/** A fresh graph store per case, and how to make a memory resolvable by it (the store's `resolveMemory`). */
export interface GraphContractTarget<S extends GraphStore = GraphStore> {
  create(): Promise<{ store: S; putMemory: (memory: Memory) => Promise<void> | void }>;
  destroy?(store: S): Promise<void>;
}

/** What the cases of the graph contract are given: how to declare a case, the ids of memories, a relation maker. */
interface GraphKit<S extends GraphStore> {
  c: (title: string, body: (store: S, put: (...ids: string[]) => Promise<void>) => Promise<void>) => void;
  ids: (ms: Memory[]) => string[];
  rel: (fromMemoryId: string, toMemoryId: string, more?: object) => MemoryRelation;
}

/**
 * Memorie's GraphStore contract (exact ids and order), plus direction both, minWeight (missing weight = 0),
 * limit, traverse breadth-first order, cycles, de-duplication, unresolvable ids and listRelations.
 */
export function runGraphStoreContract<S extends GraphStore>(name: string, target: GraphContractTarget<S>): void {
  const c = (
    title: string,
    body: (store: S, put: (...ids: string[]) => Promise<void>) => Promise<void>,
  ) =>
    it(title, async () => {
      const { store, putMemory } = await target.create();
      const put = async (...ids: string[]) => {
        for (const id of ids) await putMemory(makeMemory({ id }));
      };
      try {
        await body(store, put);
      } finally {
        await target.destroy?.(store);
      }
    });
  const ids = (ms: Memory[]) => ms.map((m) => m.id);
  let clock = Date.UTC(2026, 0, 1);
  const rel = (fromMemoryId: string, toMemoryId: string, more: object = {}) =>
    makeRelation({ fromMemoryId, toMemoryId, createdAt: new Date((clock += 1000)), ...more });

  describe(`GraphStore contract: ${name}`, () => {
    const kit = { c, ids, rel };
    graphMemorieOwnCases(kit);
    graphRemeEsCasesA(kit);
    graphRemeEsCasesB(kit);
  });
}

/** Memorie's own cases. */
function graphMemorieOwnCases<S extends GraphStore>({ c, ids, rel }: GraphKit<S>): void {
  c("creates a relation and finds it via getRelated (outgoing)", async (store, put) => {
    await put("a", "b");
    await store.createRelation(rel("a", "b", { type: "supports" }));
    assert.deepEqual(ids(await store.getRelated("a", { direction: "outgoing" })), ["b"]);
  });

  c("finds relations via getRelated (incoming)", async (store, put) => {
    await put("a", "b");
    await store.createRelation(rel("a", "b", { type: "supports" }));
    assert.deepEqual(ids(await store.getRelated("b", { direction: "incoming" })), ["a"]);
    assert.deepEqual(ids(await store.getRelated("b", { direction: "outgoing" })), []);
  });

  c("filters getRelated by relation type", async (store, put) => {
    await put("a", "b", "c");
    await store.createRelation(rel("a", "b", { type: "supports" }));
    await store.createRelation(rel("a", "c", { type: "contradicts" }));
    assert.deepEqual(ids(await store.getRelated("a", { direction: "outgoing", types: ["supports"] })), ["b"]);
    assert.deepEqual(ids(await store.getRelated("a", { types: ["supports", "contradicts"] })), ["b", "c"]);
    assert.deepEqual(ids(await store.getRelated("a", { types: ["depends_on"] })), []);
  });

  c("deleteRelation removes the relation", async (store, put) => {
    await put("a", "b");
    const r = rel("a", "b");
    await store.createRelation(r);
    await store.deleteRelation(r.id);
    assert.deepEqual(await store.getRelated("a", { direction: "outgoing" }), []);
    await store.deleteRelation("never-created");
  });

  c("traverse follows relations up to maxDepth", async (store, put) => {
    await put("a", "b", "c");
    await store.createRelation(rel("a", "b"));
    await store.createRelation(rel("b", "c"));
    assert.deepEqual(ids(await store.traverse("a", { direction: "outgoing", maxDepth: 1 })), ["b"]);
    assert.deepEqual(ids(await store.traverse("a", { direction: "outgoing", maxDepth: 2 })), ["b", "c"]);
  });

  c("getRelated returns nothing for a memory with no relations", async (store, put) => {
    await put("a");
    assert.deepEqual(await store.getRelated("a"), []);
  });
}

/** The cases reme-es adds (part 1 of 2). */
function graphRemeEsCasesA<S extends GraphStore>({ c, ids, rel }: GraphKit<S>): void {
  c("direction defaults to outgoing; both gives either side in creation order", async (store, put) => {
    await put("a", "b", "c");
    await store.createRelation(rel("a", "b"));
    await store.createRelation(rel("c", "a"));
    assert.deepEqual(ids(await store.getRelated("a")), ["b"]);
    assert.deepEqual(ids(await store.getRelated("a", { direction: "both" })), ["b", "c"]);
  });

  c("minWeight keeps relations at least that heavy; a missing weight counts as 0", async (store, put) => {
    await put("a", "heavy", "light", "unweighted");
    await store.createRelation(rel("a", "heavy", { weight: 0.9 }));
    await store.createRelation(rel("a", "light", { weight: 0.2 }));
    await store.createRelation(rel("a", "unweighted"));
    assert.deepEqual(ids(await store.getRelated("a", { minWeight: 0.5 })), ["heavy"]);
    assert.deepEqual(ids(await store.getRelated("a", { minWeight: 0.2 })), ["heavy", "light"]);
    assert.deepEqual(ids(await store.getRelated("a", { minWeight: 0.1 })), ["heavy", "light"]);
    assert.deepEqual(ids(await store.getRelated("a", { minWeight: 0 })), ["heavy", "light", "unweighted"]);
  });

  c("limit keeps the first relations in creation order", async (store, put) => {
    await put("a", "x", "y", "z");
    for (const to of ["x", "y", "z"]) await store.createRelation(rel("a", to));
    assert.deepEqual(ids(await store.getRelated("a", { limit: 2 })), ["x", "y"]);
    assert.deepEqual(ids(await store.traverse("a", { limit: 1 })), ["x"]);
  });

  c("traverse is breadth-first in discovery order, de-duplicated, start excluded", async (store, put) => {
    await put("a", "b", "c", "d", "e");
    await store.createRelation(rel("a", "c"));
    await store.createRelation(rel("a", "b"));
    await store.createRelation(rel("b", "d"));
    await store.createRelation(rel("c", "e"));
    await store.createRelation(rel("b", "c"));
    await store.createRelation(rel("d", "a"));
    assert.deepEqual(ids(await store.traverse("a")), ["c", "b"], "default depth 1");
    assert.deepEqual(ids(await store.traverse("a", { maxDepth: 2 })), ["c", "b", "e", "d"]);
    assert.deepEqual(ids(await store.traverse("a", { maxDepth: 10 })), ["c", "b", "e", "d"]);
  });

  c("traverse survives cycles", async (store, put) => {
    await put("a", "b", "c");
    await store.createRelation(rel("a", "b"));
    await store.createRelation(rel("b", "c"));
    await store.createRelation(rel("c", "a"));
    await store.createRelation(rel("b", "b"));
    assert.deepEqual(ids(await store.traverse("a", { maxDepth: 50 })), ["b", "c"]);
    assert.deepEqual(ids(await store.traverse("a", { maxDepth: 50, direction: "both" })), ["b", "c"]);
  });
}

/** The cases reme-es adds (part 2 of 2). */
function graphRemeEsCasesB<S extends GraphStore>({ c, ids, rel }: GraphKit<S>): void {
  c("traverse applies type and weight filters at every level", async (store, put) => {
    await put("a", "b", "c", "d");
    await store.createRelation(rel("a", "b", { type: "supports", weight: 1 }));
    await store.createRelation(rel("b", "c", { type: "contradicts", weight: 1 }));
    await store.createRelation(rel("b", "d", { type: "supports", weight: 0.1 }));
    assert.deepEqual(ids(await store.traverse("a", { maxDepth: 3, types: ["supports"] })), ["b", "d"]);
    assert.deepEqual(ids(await store.traverse("a", { maxDepth: 3, minWeight: 0.5 })), ["b", "c"]);
  });

  c("unresolvable memories are skipped", async (store, put) => {
    await put("a", "b");
    await store.createRelation(rel("a", "ghost"));
    await store.createRelation(rel("a", "b"));
    await store.createRelation(rel("ghost", "b"));
    assert.deepEqual(ids(await store.getRelated("a")), ["b"]);
    assert.deepEqual(ids(await store.traverse("a", { maxDepth: 2 })), ["b"]);
  });

  c("listRelations returns every relation record whole", async (store) => {
    const r1 = rel("a", "b", { type: "supports", weight: 0.25, metadata: { why: "test", n: 1 } });
    const r2 = rel("b", "c", { type: "depends_on" });
    await store.createRelation(r1);
    await store.createRelation(r2);
    assert.ok(store.listRelations, "listRelations is implemented");
    const listed = await store.listRelations!();
    const byId = new Map(listed.map((r) => [r.id, r]));
    assert.equal(listed.length, 2);
    assert.deepEqual(byId.get(r1.id), r1);
    assert.deepEqual(byId.get(r2.id), r2);
    assert.ok(byId.get(r1.id)!.createdAt instanceof Date);
    await store.deleteRelation(r1.id);
    assert.deepEqual((await store.listRelations!()).map((r) => r.id), [r2.id]);
  });
}
