// The vector store's `hnsw` option: the build settings of a new index, in its mapping and `_meta` (pure, then on the
// real nodes), and bad values refused before anything is sent.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { renderIndex } from "../src/dialect.js";
import { VectorStoreError } from "../src/errors.js";
import { createVectorStore } from "../src/index.js";
import { dropAfterSuite, freshPrefix, targets } from "./targets.js";

const paramsOf = (engine: string, field: any) =>
  engine === "opensearch" ? field.method.parameters : { m: field.index_options.m, ef_construction: field.index_options.ef_construction };

describe("hnsw option, pure", () => {
  it("renders m and ef_construction into the vector field and _meta; Memorie's m 32 / 150 otherwise", () => {
    for (const engine of ["opensearch", "elasticsearch"] as const) {
      const tuned = renderIndex("vectors", engine, "a", { dims: 4, hnsw: { m: 32, efConstruction: 200 } });
      assert.deepEqual(paramsOf(engine, tuned.mappings.properties.embedding), { m: 32, ef_construction: 200 });
      assert.deepEqual(tuned.mappings._meta.reme_es.hnsw, { m: 32, ef_construction: 200 });
      const plain = renderIndex("vectors", engine, "a", { dims: 4 });
      assert.deepEqual(paramsOf(engine, plain.mappings.properties.embedding), { m: 32, ef_construction: 150 });
      assert.deepEqual(plain.mappings._meta.reme_es.hnsw, { m: 32, ef_construction: 150 });
    }
  });

  it("refuses unknown keys and out-of-range values, naming them", async () => {
    const url = "http://127.0.0.1:1";
    await assert.rejects(createVectorStore({ url, indexPrefix: "p", hnsw: { m: 1 } }), (e: VectorStoreError) =>
      /hnsw.m must be a whole number from 2 to 512, not 1/.test(e.message));
    await assert.rejects(createVectorStore({ url, indexPrefix: "p", hnsw: { ef_construction: 200 } as any }), (e: VectorStoreError) =>
      /hnsw.ef_construction is not an option: use hnsw.m and hnsw.efConstruction/.test(e.message));
  });
});

for (const { engine, url } of targets) {
  describe(`hnsw option on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it("a new index gets the given m and ef_construction; nearest neighbour still first", async () => {
      const prefix = freshPrefix("hnsw");
      const store = track(await createVectorStore({ url, indexPrefix: prefix, dimensions: 3, hnsw: { m: 32, efConstruction: 200 } }));
      const body: any = await (await fetch(`${url}/${prefix}-memorie-vectors/_mapping`)).json();
      const mapping = (Object.values(body)[0] as any).mappings;
      assert.deepEqual(paramsOf(engine, mapping.properties.embedding), { m: 32, ef_construction: 200 });
      assert.deepEqual(mapping._meta.reme_es.hnsw, { m: 32, ef_construction: 200 });
      await store.upsert("a", [1, 0, 0]);
      await store.upsert("b", [0, 1, 0]);
      assert.deepEqual((await store.search([0.9, 0.1, 0], { topK: 2 })).map((h) => h.id), ["a", "b"]);
    });
  });
}
