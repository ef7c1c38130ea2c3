// Behaviours of this package beyond the shared contract, on real nodes: engine detection, versioned indices
// behind aliases, the engines' mappings, errors (status, reason, no secrets), refresh policies, bulk loads,
// the scoped vector store.
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { describe, it } from "node:test";

import { createSearchStore, createVectorStore, type OpenSearchStore, type OpenSearchVectorStore } from "../src/index.js";
import { makeMemory, rejectsWithCode } from "../src/contract/common.js";
import { dropAfterSuite, freshPrefix, http, targets } from "./targets.js";

for (const { engine, url } of targets) {
  describe(`reme-es-memorie on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it("detects the engine, and refuses an explicit engine the node does not run", async () => {
      const s = track(await createSearchStore({ url, indexPrefix: freshPrefix("detect") }));
      assert.equal(s.engine, engine);
      const other = engine === "opensearch" ? "elasticsearch" : "opensearch";
      await rejectsWithCode(
        () => createSearchStore({ url, indexPrefix: freshPrefix("detect"), engine: other }),
        "SEARCH_ERROR",
        new RegExp(`runs ${engine}`),
      );
    });

    it("keeps each kind in a versioned index behind its alias, and reopens it", async () => {
      const prefix = freshPrefix("alias");
      const s = track(await createSearchStore({ url, indexPrefix: prefix }));
      assert.deepEqual(s.info, { alias: `${prefix}-memorie-memories`, index: `${prefix}-memorie-memories-v1`, stemming: s.info.stemming });
      const aliases = await http(url, "GET", `/_alias/${prefix}-memorie-memories`);
      assert.deepEqual(Object.keys(aliases.body), [`${prefix}-memorie-memories-v1`]);
      const m = makeMemory({ content: "persisted walnut" });
      await s.index(m);
      await s.refresh(); // another store object: it sees the write once the writer refreshed (deferred policy)
      const again = await createSearchStore({ url, indexPrefix: prefix });
      try {
        assert.deepEqual((await again.search({ query: "walnut" })).map((r) => r.memory.id), [m.id]);
      } finally {
        await again.close();
      }
    });

    it("declares stemming exactly when the node has porter_stem, and records it in the index", async () => {
      const probe = await http(url, "POST", "/_analyze", { tokenizer: "standard", filter: ["porter_stem"], text: "running" });
      const nodeStems = probe.status === 200 && probe.body?.tokens?.[0]?.token === "run";
      const s = track(await createSearchStore({ url, indexPrefix: freshPrefix("stem") }));
      assert.equal(s.info.stemming, nodeStems);
      const mapping = (await http(url, "GET", `/${s.info.index}/_mapping`)).body[s.info.index].mappings;
      assert.equal(mapping._meta.reme_es.stemming, nodeStems);
    });

    it("refuses an index of another template version or of another program", async () => {
      const prefix = freshPrefix("version");
      const alias = `${prefix}-memorie-memories`;
      await http(url, "PUT", `/${alias}-v0`, {
        aliases: { [alias]: {} },
        mappings: { _meta: { reme_es: { kind: "memorie-memories", template_version: 0 } } },
      });
      const foreign = freshPrefix("foreign");
      await http(url, "PUT", `/${foreign}-x`, { aliases: { [`${foreign}-memorie-memories`]: {} } });
      try {
        await rejectsWithCode(() => createSearchStore({ url, indexPrefix: prefix }), "SEARCH_ERROR", /template version 0/);
        await rejectsWithCode(() => createSearchStore({ url, indexPrefix: foreign }), "SEARCH_ERROR", /not created by reme-es-memorie/);
      } finally {
        await http(url, "DELETE", `/${alias}-v0`);
        await http(url, "DELETE", `/${foreign}-x`);
      }
    });

    it("maps vectors as the engine's HNSW cosine field (lucene on OpenSearch, explicit hnsw on Elasticsearch)", async () => {
      const v = track(await createVectorStore({ url, indexPrefix: freshPrefix("mapping"), dimensions: 8 }));
      const index = `${(v as unknown as { idx: { info: { index: string } } }).idx.info.index}`;
      const mapping = (await http(url, "GET", `/${index}/_mapping`)).body[index].mappings.properties.embedding;
      if (engine === "opensearch") {
        assert.equal(mapping.type, "knn_vector");
        assert.equal(mapping.dimension, 8);
        assert.equal(mapping.method.engine, "lucene");
        assert.equal(mapping.method.space_type, "cosinesimil");
      } else {
        assert.equal(mapping.type, "dense_vector");
        assert.equal(mapping.similarity, "cosine");
        assert.equal(mapping.index_options.type, "hnsw");
      }
      assert.equal(v.dimensions, 8);
      await rejectsWithCode(() => createVectorStore({ url, indexPrefix: index.replace(/-memorie-vectors-v1$/, ""), dimensions: 4 }),
        "VECTOR_STORE_ERROR", /dimension mismatch/);
    });

    it("server errors carry status and reason; bad input is refused before a request", async () => {
      const s = track(await createSearchStore({ url, indexPrefix: freshPrefix("errors") }));
      const err = await rejectsWithCode(
        () => s.index(makeMemory({ importance: "high" as unknown as number })),
        "SEARCH_ERROR",
        /HTTP 400/,
      ) as { status?: number; reason?: string };
      assert.equal(err.status, 400);
      assert.match(err.reason ?? "", /importance|number|pars/i);
      await rejectsWithCode(() => s.search({ offset: 9999, limit: 2 }), "SEARCH_ERROR", /10000/);
      await rejectsWithCode(() => createSearchStore({ url, indexPrefix: "Bad Prefix" }), "SEARCH_ERROR", /indexPrefix/);
    });

    it("never puts credentials in errors", async () => {
      const password = "pw-Secret-4711";
      const basic = Buffer.from(`alice:${password}`).toString("base64");
      let caught: unknown;
      try {
        await createSearchStore({
          url: `http://alice:${password}@127.0.0.1:9`,
          indexPrefix: freshPrefix("secret"),
          retry: { retries: 1, baseMs: 1 },
        });
      } catch (exc) {
        caught = exc;
      }
      assert.ok(caught instanceof Error && (caught as { code?: string }).code === "SEARCH_ERROR");
      for (const text of [String((caught as Error).message), inspect(caught, { depth: null }), JSON.stringify(caught)]) {
        assert.ok(!text.includes(password) && !text.includes(basic), text);
      }
      // A node without security accepts (ignores) basic auth: a server error then must not show it either.
      const s = track(await createSearchStore({ url, indexPrefix: freshPrefix("secret"), auth: { username: "alice", password } }));
      try {
        await s.index(makeMemory({ importance: "x" as unknown as number }));
        assert.fail("expected a mapping error");
      } catch (exc) {
        for (const text of [String((exc as Error).message), inspect(exc, { depth: null }), JSON.stringify(exc)]) {
          assert.ok(!text.includes(password) && !text.includes(basic), text);
        }
      }
    });

    it("refresh 'wait_for' is read-your-writes; 'false' needs refresh()", async () => {
      const w = track(await createSearchStore({ url, indexPrefix: freshPrefix("waitfor"), refresh: "wait_for" }));
      const m = makeMemory({ content: "waited hazelnut" });
      await w.index(m);
      assert.deepEqual((await w.search({ query: "hazelnut" })).map((r) => r.memory.id), [m.id]);
      const f = track(await createSearchStore({ url, indexPrefix: freshPrefix("norefresh"), refresh: "false" }));
      const ms = Array.from({ length: 30 }, () => makeMemory({ content: "bulk pecan" }));
      await f.indexMany(ms);
      await f.refresh();
      assert.equal((await f.search({ query: "pecan", limit: 50 })).length, 30);
    });

    it("indexMany reports the items that failed and stores the rest", async () => {
      const s = track(await createSearchStore({ url, indexPrefix: freshPrefix("bulk") }));
      const good = [makeMemory({ content: "good almond" }), makeMemory({ content: "good almond" })];
      const bad = makeMemory({ content: "bad almond", confidence: "sure" as unknown as number });
      const err = await rejectsWithCode(() => s.indexMany([good[0]!, bad, good[1]!]), "SEARCH_ERROR", /1 of 3 items failed/) as {
        details?: { failures: { id: string; status: number }[] };
      };
      assert.deepEqual(err.details?.failures.map((f) => [f.id, f.status]), [[bad.id, 400]]);
      assert.deepEqual(new Set((await s.search({ query: "almond" })).map((r) => r.memory.id)), new Set(good.map((m) => m.id)));
    });

    it("a scoped vector store keeps another tenant's neighbours from crowding it out", async () => {
      const v: OpenSearchVectorStore = track(await createVectorStore({ url, indexPrefix: freshPrefix("scoped"), refresh: "false" }));
      const crowd = Array.from({ length: 60 }, (_, i) => ({
        id: `b${i}`, embedding: [1, i / 1000, 0], metadata: { tenantId: "B", namespace: "n", subjectId: "s" },
      }));
      const mine = Array.from({ length: 3 }, (_, i) => ({
        id: `a${i}`, embedding: [0.2, 1, i / 10], metadata: { tenantId: "A", namespace: "n", subjectId: "s" },
      }));
      await v.upsertMany([...crowd, ...mine], { refresh: "true" });
      const unscoped = await v.search([1, 0, 0], { topK: 50 });
      assert.equal(unscoped.length, 50);
      assert.ok(unscoped.every((r) => r.id.startsWith("b")), "the engine's unfiltered search sees only tenant B");
      const a = v.scoped({ tenantId: "A" });
      assert.deepEqual((await a.search([1, 0, 0], { topK: 50 })).map((r) => r.id), ["a0", "a1", "a2"]);
      const scopedStore = track(await createVectorStore({ url, indexPrefix: freshPrefix("scoped2"), scope: { tenantId: "A", namespace: "n" } }));
      await scopedStore.upsert("x", [1, 0], { subjectId: "s" });
      assert.deepEqual((await scopedStore.search([1, 0]))[0]?.metadata, { subjectId: "s", tenantId: "A", namespace: "n" });
      await rejectsWithCode(() => scopedStore.upsert("y", [1, 0], { tenantId: "B" }), "VECTOR_STORE_ERROR", /scoped/);
      assert.deepEqual((await a.listIds()).sort(), ["a0", "a1", "a2"]);
    });

    it("vector listIds pages past 10,000", async () => {
      const v = track(await createVectorStore({ url, indexPrefix: freshPrefix("vids"), refresh: "false" }));
      const entries = Array.from({ length: 10_020 }, (_, i) => ({ id: `v${i}`, embedding: [1, i] }));
      await v.upsertMany(entries, { refresh: "true", pageSize: 2000 });
      const ids = await v.listIds();
      assert.equal(ids.length, 10_020);
      assert.deepEqual(new Set(ids), new Set(entries.map((e) => e.id)));
    });
  });
}

export type { OpenSearchStore };
