// The stores driven the way Memorie's engine drives them (packages/core: add/update/delete/search/reindex/
// reconcile), on real nodes. The engine itself is not on npm, so this file makes the same calls it makes:
//   add/update -> searchStore.index(memory); vectorStore.upsert(id, embed(content), {tenantId, namespace, subjectId})
//   delete     -> searchStore.delete(id); vectorStore.delete(id)   (also for ids that were never indexed)
//   search     -> searchStore.search(query) with the caller's query object unchanged (limit, offset, relatedTo...);
//                 vectorStore.search(embed(text), { topK: limit ? max(limit * 5, 50) : 50 }) with no filter
//   reindex    -> every memory, 500 a page, into searchStore.index; reconcile -> listIds
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { createSearchStore, createVectorStore } from "../src/index.js";
import { makeMemory } from "../src/contract/common.js";
import type { Memory, SearchQuery, SearchStore, VectorStore } from "../src/types.js";
import { dropAfterSuite, freshPrefix, targets } from "./targets.js";

/** A bag-of-words hashing embedder like Memorie's reference one: text without [a-z0-9] gives the zero vector. */
function embed(text: string, dims = 64): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const token of text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean)) {
    let h = 0x811c9dc5;
    for (let i = 0; i < token.length; i++) h = Math.imul(h ^ token.charCodeAt(i), 0x01000193) >>> 0;
    v[h % dims]! += (h >>> 16) % 2 === 0 ? 1 : -1;
  }
  const n = Math.hypot(...v);
  return n === 0 ? v : v.map((x) => x / n);
}

class EngineCalls {
  readonly canonical = new Map<string, Memory>();
  readonly searchCalls: SearchQuery[] = [];
  readonly vectorCalls: { topK?: number; filter?: unknown }[] = [];
  constructor(
    private readonly search: SearchStore,
    private readonly vectors: VectorStore,
  ) {}

  async add(m: Memory): Promise<void> {
    this.canonical.set(m.id, m);
    await this.search.index(m);
    await this.vectors.upsert(m.id, embed(m.content), { tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId });
  }

  async delete(id: string): Promise<void> {
    this.canonical.delete(id);
    await this.search.delete(id);
    await this.vectors.delete(id);
  }

  async find(query: SearchQuery) {
    this.searchCalls.push(query);
    const keyword = await this.search.search(query);
    const options = { topK: query.limit ? Math.max(query.limit * 5, 50) : 50 };
    this.vectorCalls.push(options);
    const semantic = await this.vectors.search(embed(query.query ?? ""), options);
    return { keyword, semantic };
  }

  async reindex(): Promise<void> {
    const all = [...this.canonical.values()];
    for (let i = 0; i < all.length; i += 500) for (const m of all.slice(i, i + 500)) await this.search.index(m);
  }
}

for (const { engine, url } of targets) {
  describe(`engine-style calls on ${engine} ${url}`, () => {
    const track = dropAfterSuite();
    const open = async () => {
      const prefix = freshPrefix("engine");
      const search = track(await createSearchStore({ url, indexPrefix: prefix }));
      const vectors = track(await createVectorStore({ url, indexPrefix: prefix }));
      return { search, vectors, engine: new EngineCalls(search, vectors) };
    };

    it("deleting never-indexed ids is a no-op on both stores, even before the vector index exists", async () => {
      const { search, vectors, engine: e } = await open();
      await e.delete("never-indexed");
      assert.deepEqual(await search.listIds(), []);
      assert.deepEqual(await vectors.listIds(), []);
      const m = makeMemory({ content: "lonely olive" });
      await e.add(m);
      await e.delete("another-never-indexed");
      assert.deepEqual(await search.listIds(), [m.id]);
      assert.deepEqual(await vectors.listIds(), [m.id]);
      await e.delete(m.id);
      assert.deepEqual(await search.listIds(), []);
      assert.deepEqual(await vectors.listIds(), []);
    });

    it("a write is found by the very next search, by keyword and by vector (read-your-writes)", async () => {
      const { engine: e } = await open();
      const m = makeMemory({ tenantId: "t1", namespace: "users", subjectId: "u1", content: "Alice prefers green tea in the morning" });
      await e.add(m);
      const { keyword, semantic } = await e.find({ tenantId: "t1", namespace: "users", subjectId: "u1", query: "green tea", limit: 10 });
      assert.deepEqual(keyword.map((r) => r.memory.id), [m.id]);
      assert.equal(semantic[0]?.id, m.id);
      assert.deepEqual(semantic[0]?.metadata, { tenantId: "t1", namespace: "users", subjectId: "u1" });
    });

    it("default deferred refresh: writes never refresh; a read after writes refreshes once; reads alone never", async () => {
      const { search, vectors, engine: e } = await open();
      const ms = ["juniper", "quince", "sorrel", "tamarind"].map((w) => makeMemory({ content: `planted ${w} by the gate` }));
      for (const [i, m] of ms.entries()) {
        await e.add(m);
        const word = m.content.split(" ")[1]!;
        const { keyword, semantic } = await e.find({ query: word, limit: 10 });
        assert.deepEqual(keyword.map((r) => r.memory.id), [m.id], `add ${i} then search at once`);
        assert.equal(semantic[0]?.id, m.id);
        assert.equal(semantic.length, i + 1);
        assert.deepEqual([search.deferredRefreshes, vectors.deferredRefreshes], [i + 1, i + 1]);
      }
      for (let i = 0; i < 3; i++) await e.find({ query: "planted gate" });
      assert.deepEqual([search.deferredRefreshes, vectors.deferredRefreshes], [4, 4], "no refresh without writes");
      for (const m of ms.slice(0, 2)) await e.delete(m.id);
      const { keyword, semantic } = await e.find({ query: "planted gate", limit: 10 });
      assert.deepEqual(new Set(keyword.map((r) => r.memory.id)), new Set([ms[2]!.id, ms[3]!.id]), "deletes are seen too");
      assert.deepEqual(new Set(semantic.map((r) => r.id)), new Set([ms[2]!.id, ms[3]!.id]));
      assert.deepEqual([search.deferredRefreshes, vectors.deferredRefreshes], [5, 5], "two deletes, one refresh");
    });

    it("deferred refresh: another store object sees a write after the background refresh, without reading first", async () => {
      const prefix = freshPrefix("background");
      const writer = track(await createSearchStore({ url, indexPrefix: prefix, refreshAfterMs: 50 }));
      const reader = track(await createSearchStore({ url, indexPrefix: prefix, refresh: "false" }));
      const m = makeMemory({ content: "background medlar" });
      await writer.index(m);
      for (let waited = 0; writer.deferredRefreshes === 0 && waited < 20000; waited += 10) {
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(writer.deferredRefreshes, 1, "the background refresh ran");
      assert.deepEqual((await reader.search({ query: "medlar" })).map((r) => r.memory.id), [m.id]);
      await writer.search({ query: "medlar" });
      assert.equal(writer.deferredRefreshes, 1, "nothing pending after the background refresh");
    });

    it("search takes the caller's whole query unchanged (limit, offset, filters, relatedTo, relationTypes)", async () => {
      const { engine: e } = await open();
      const base = Date.UTC(2026, 0, 1);
      const ms = Array.from({ length: 6 }, (_, i) =>
        makeMemory({ tenantId: "t", namespace: "n", subjectId: "s", type: i % 2 ? "fact" : "event", content: `shared cedar note ${i}`, updatedAt: new Date(base + i) }),
      );
      for (const m of ms) await e.add(m);
      const query: SearchQuery = {
        tenantId: "t", namespace: "n", subjectId: "s", query: "cedar note", limit: 2, offset: 1,
        filters: { type: "fact" }, relatedTo: ms[0]!.id, relationTypes: ["supports"],
      };
      const frozen = structuredClone(query);
      const { keyword } = await e.find(query);
      assert.deepEqual(query, frozen, "the store does not modify the query");
      assert.equal(keyword.length, 2);
      assert.ok(keyword.every((r) => r.memory.type === "fact"));
      const all = (await e.find({ ...query, limit: 10, offset: 0 })).keyword.map((r) => r.memory.id);
      assert.deepEqual(keyword.map((r) => r.memory.id), all.slice(1, 3));
    });

    it("vector search as the engine asks: topK max(limit x 5, 50), no filter, every tenant's entries", async () => {
      const { search, vectors, engine: e } = await open();
      // Loaded in bulk (the same documents add() writes one by one) to keep the test short.
      const ms = Array.from({ length: 120 }, (_, i) => makeMemory({ tenantId: `t${i % 3}`, content: `spruce ${i} word${i % 7} term${i % 11}` }));
      for (const m of ms) e.canonical.set(m.id, m);
      await search.indexMany(ms);
      await vectors.upsertMany(ms.map((m) => ({ id: m.id, embedding: embed(m.content), metadata: { tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId } })));
      const r10 = await e.find({ tenantId: "t0", query: "spruce word1", limit: 10 });
      assert.deepEqual(e.vectorCalls.at(-1), { topK: 50 });
      assert.equal(r10.semantic.length, 50);
      assert.ok(new Set(r10.semantic.map((r) => e.canonical.get(r.id)?.tenantId)).size > 1, "no filter: all tenants");
      const r20 = await e.find({ query: "spruce", limit: 20 });
      assert.deepEqual(e.vectorCalls.at(-1), { topK: 100 });
      assert.equal(r20.semantic.length, 100);
      for (const res of [r10.semantic, r20.semantic]) {
        for (let i = 1; i < res.length; i++) assert.ok(res[i - 1]!.score >= res[i]!.score && res[i]!.score >= 0 && res[i - 1]!.score <= 1);
      }
    });

    it("content the embedder turns into a zero vector is stored and searchable", async () => {
      const { vectors, engine: e } = await open();
      const zero = makeMemory({ content: "日本語のメモ !!!" });
      const word = makeMemory({ content: "plain birch" });
      assert.ok(embed(zero.content).every((x) => x === 0));
      await e.add(zero);
      await e.add(word);
      const { keyword, semantic } = await e.find({ query: "plain birch" });
      assert.deepEqual(keyword.map((r) => r.memory.id), [word.id]);
      assert.deepEqual(semantic.map((r) => [r.id, Number(r.score.toFixed(4))]), [[word.id, 1], [zero.id, 0.5]]);
      assert.deepEqual(new Set(await vectors.listIds()), new Set([zero.id, word.id]));
    });

    it("reindex (500 a page into index) and reconcile (listIds) agree with the canonical store", async () => {
      const { search, engine: e } = await open();
      for (let i = 0; i < 15; i++) await e.add(makeMemory({ content: `maple ${i}` }));
      await e.delete([...e.canonical.keys()][3]!);
      await e.reindex();
      assert.deepEqual(new Set(await search.listIds()), new Set(e.canonical.keys()));
      assert.equal((await search.search({ query: "maple", limit: 100 })).length, 14);
    });
  });
}
