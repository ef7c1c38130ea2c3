import assert from "node:assert/strict";
import { describe } from "node:test";

import type { VectorStore } from "../types.js";
import { type ContractTarget, rejectsWithCode, storeCase, unitVector } from "./common.js";

const close = (a: number, b: number, eps = 1e-5) => assert.ok(Math.abs(a - b) <= eps, `${a} is not ${b}`);

/** What the cases of the vector contract are given: how to declare a case. */
interface VectorKit<S extends VectorStore> {
  c: (title: string, body: (store: S) => Promise<void>) => void;
}

/**
 * Memorie's VectorStore contract (fresh store per case, the dimension changes between cases), strict, plus the
 * score formula (cos + 1) / 2, topK default 10, threshold after normalisation, metadata filter inside k-NN,
 * dimension mismatch, zero vectors (score 0.5) and listIds. `target.create()` must give a store with no
 * dimension fixed yet (the first upsert decides).
 */
export function runVectorStoreContract<S extends VectorStore>(name: string, target: ContractTarget<S>): void {
  const c = (title: string, body: (store: S) => Promise<void>) => storeCase(target, title, body);

  describe(`VectorStore contract: ${name}`, () => {
    const kit = { c };
    vectorMemorieOwnCases(kit);
    vectorScoresOptionsCasesA(kit);
    vectorScoresOptionsCasesB(kit);
  });
}

/** Memorie's own cases (strict). */
function vectorMemorieOwnCases<S extends VectorStore>({ c }: VectorKit<S>): void {
  c("upserts and finds the nearest neighbour", async (store) => {
    await store.upsert("a", unitVector(4, 0));
    await store.upsert("b", unitVector(4, 1));
    await store.upsert("c", unitVector(4, 2));
    const results = await store.search(unitVector(4, 0), { topK: 1 });
    assert.deepEqual(results.map((r) => r.id), ["a"]);
    close(results[0]!.score, 1);
  });

  c("ranks by similarity, closest first", async (store) => {
    await store.upsert("far", [0, 1, 0, 0]);
    await store.upsert("exact", [1, 0, 0, 0]);
    await store.upsert("close", [0.9, 0.1, 0, 0]);
    const results = await store.search([1, 0, 0, 0], { topK: 3 });
    assert.deepEqual(results.map((r) => r.id), ["exact", "close", "far"]);
  });

  c("respects topK exactly", async (store) => {
    for (let i = 0; i < 5; i++) await store.upsert(`item-${i}`, unitVector(5, i));
    assert.equal((await store.search(unitVector(5, 0), { topK: 2 })).length, 2);
    assert.equal((await store.search(unitVector(5, 0), { topK: 5 })).length, 5);
  });

  c("returns scores within [0, 1]: 1 for the same direction, 0 for the opposite", async (store) => {
    await store.upsert("a", [1, 0]);
    await store.upsert("b", [-1, 0]);
    const results = await store.search([1, 0], { topK: 2 });
    assert.deepEqual(results.map((r) => r.id), ["a", "b"]);
    close(results[0]!.score, 1);
    close(results[1]!.score, 0);
  });

  c("deletes an entry so it no longer matches", async (store) => {
    await store.upsert("gone", unitVector(3, 0));
    await store.upsert("kept", unitVector(3, 1));
    await store.delete("gone");
    assert.deepEqual((await store.search(unitVector(3, 0), { topK: 5 })).map((r) => r.id), ["kept"]);
  });

  c("re-upserting the same id replaces rather than duplicates", async (store) => {
    await store.upsert("x", unitVector(3, 0));
    await store.upsert("x", unitVector(3, 1));
    const results = await store.search(unitVector(3, 1), { topK: 5 });
    assert.deepEqual(results.map((r) => r.id), ["x"]);
    close(results[0]!.score, 1);
  });
}

/** Scores, options (part 1 of 2). */
function vectorScoresOptionsCasesA<S extends VectorStore>({ c }: VectorKit<S>): void {
  c("score is (cosine + 1) / 2, whatever the vectors' lengths", async (store) => {
    await store.upsert("deg45", [3, 3]);
    await store.upsert("deg90", [0, 0.2]);
    await store.upsert("deg135", [-5, 5]);
    const results = await store.search([2, 0], { topK: 3 });
    assert.deepEqual(results.map((r) => r.id), ["deg45", "deg90", "deg135"]);
    close(results[0]!.score, (1 + Math.SQRT1_2) / 2);
    close(results[1]!.score, 0.5);
    close(results[2]!.score, (1 - Math.SQRT1_2) / 2);
  });

  c("topK defaults to 10", async (store) => {
    for (let i = 0; i < 12; i++) await store.upsert(`v${i}`, [1, i / 10]);
    assert.equal((await store.search([1, 0])).length, 10);
  });

  c("threshold applies to the normalised score", async (store) => {
    await store.upsert("deg0", [1, 0]);
    await store.upsert("deg45", [1, 1]);
    await store.upsert("deg90", [0, 1]);
    assert.deepEqual((await store.search([1, 0], { threshold: 0.75 })).map((r) => r.id), ["deg0", "deg45"]);
    assert.deepEqual((await store.search([1, 0], { threshold: 0.5 })).map((r) => r.id), ["deg0", "deg45", "deg90"]);
    assert.deepEqual((await store.search([1, 0], { threshold: 0.9 })).map((r) => r.id), ["deg0"]);
  });

  c("filter is an exact metadata match applied inside the k-NN search", async (store) => {
    // 30 entries of tenant a right next to the query and one of tenant b far away: a post-filter on the top 5
    // would find nothing for b.
    for (let i = 0; i < 30; i++) await store.upsert(`a${i}`, [1, i / 1000, 0], { tenantId: "a" });
    await store.upsert("b0", [0, 0, 1], { tenantId: "b", n: 5 });
    await store.upsert("b1", [0, 1, 0], { tenantId: "b", n: "5" });
    await store.upsert("none", [1, 0, 0]);
    const b = await store.search([1, 0, 0], { topK: 5, filter: { tenantId: "b" } });
    assert.deepEqual(new Set(b.map((r) => r.id)), new Set(["b0", "b1"]));
    assert.deepEqual((await store.search([1, 0, 0], { topK: 5, filter: { n: 5 } })).map((r) => r.id), ["b0"]);
    assert.deepEqual((await store.search([1, 0, 0], { topK: 5, filter: { n: "5" } })).map((r) => r.id), ["b1"]);
    assert.deepEqual(await store.search([1, 0, 0], { topK: 5, filter: { tenantId: "c" } }), []);
    const withMeta = await store.search([1, 0, 0], { topK: 40, filter: {} });
    assert.equal(withMeta.length, 32, "entries without metadata are excluded when a filter is given");
    assert.ok(!withMeta.some((r) => r.id === "none"));
  });

  c("returns each hit's metadata", async (store) => {
    await store.upsert("m", [1, 0], { tenantId: "t", tags: ["x"], nested: { k: 1 } });
    await store.upsert("plain", [0, 1]);
    const results = await store.search([1, 0], { topK: 2 });
    assert.deepEqual(results[0], { id: "m", score: results[0]!.score, metadata: { tenantId: "t", tags: ["x"], nested: { k: 1 } } });
    assert.equal(results[1]?.metadata, undefined);
  });
}

/** Scores, options (part 2 of 2). */
function vectorScoresOptionsCasesB<S extends VectorStore>({ c }: VectorKit<S>): void {
  c("the first upsert fixes the dimension; a mismatch throws VectorStoreError", async (store) => {
    await store.upsert("three", [1, 0, 0]);
    await rejectsWithCode(() => store.upsert("four", [1, 0, 0, 0]), "VECTOR_STORE_ERROR", /dimension/i);
    await rejectsWithCode(() => store.search([1, 0]), "VECTOR_STORE_ERROR", /dimension/i);
    assert.deepEqual((await store.search([1, 0, 0])).map((r) => r.id), ["three"]);
  });

  c("a zero vector is stored and scores 0.5; a zero query scores 0.5 for every entry", async (store) => {
    await store.upsert("zero", [0, 0, 0]);
    await store.upsert("same", [1, 0, 0]);
    await store.upsert("opposite", [-1, 0, 0]);
    const results = await store.search([1, 0, 0], { topK: 3 });
    assert.deepEqual(results.map((r) => r.id), ["same", "zero", "opposite"]);
    close(results[1]!.score, 0.5);
    const fromZero = await store.search([0, 0, 0], { topK: 3 });
    assert.deepEqual(new Set(fromZero.map((r) => r.id)), new Set(["zero", "same", "opposite"]));
    for (const r of fromZero) close(r.score, 0.5);
    assert.deepEqual((await store.search([1, 0, 0], { threshold: 0.6 })).map((r) => r.id), ["same"]);
  });

  c("searching or deleting before any upsert is fine", async (store) => {
    assert.deepEqual(await store.search([1, 0]), []);
    await store.delete("never-upserted");
    if (store.listIds) assert.deepEqual(await store.listIds(), []);
  });

  c("listIds lists every entry", async (store) => {
    assert.ok(store.listIds, "listIds is implemented");
    for (const id of ["c", "a", "b"]) await store.upsert(id, [1, id.charCodeAt(0)]);
    await store.delete("b");
    assert.deepEqual((await store.listIds!()).sort(), ["a", "c"]);
  });
}
