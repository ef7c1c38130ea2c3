import assert from "node:assert/strict";
import { describe } from "node:test";

import type { Memory, SearchStore } from "../types.js";
import { type ContractTarget, makeMemory, rejectsWithCode, storeCase } from "./common.js";

export interface SearchContractOptions {
  /**
   * Whether the store stems English (false: the suite checks that it really does not). Default: what the store
   * declares in `store.info.stemming` (the reme-es stores read it from their index), else true.
   */
  stemming?: boolean;
  /** Load many memories (default: the store's `indexMany` if it has one, else `index` one by one). */
  bulkLoad?: (store: SearchStore, memories: Memory[]) => Promise<void>;
}

const ids = (results: { memory: Memory }[]) => results.map((r) => r.memory.id);

/** What the cases of the search contract are given: how to declare a case, whether a store stems, its bulk load. */
interface SearchKit<S extends SearchStore> {
  c: (title: string, body: (store: S) => Promise<void>) => void;
  stems: (store: S) => boolean;
  bulkLoad: (store: SearchStore, memories: Memory[]) => Promise<void>;
}

/**
 * Memorie's SearchStore contract, every upstream case made strict (the expected hit is required, not just the
 * absence of wrong ones), plus the behaviours reme-es promises: AND of words, no query syntax, stemming, all
 * filters server-side, scoping, structured search, limit/offset, round trip, listIds past 10,000.
 */
export function runSearchStoreContract<S extends SearchStore>(
  name: string,
  target: ContractTarget<S>,
  options: SearchContractOptions = {},
): void {
  /** Whether `store` stems: the option, else the store's own `info.stemming`, else true. */
  const stems = (store: S): boolean => {
    const declared = (store as { info?: { stemming?: unknown } }).info?.stemming;
    return options.stemming ?? (typeof declared === "boolean" ? declared : true);
  };
  const bulkLoad =
    options.bulkLoad ??
    (async (store: SearchStore, memories: Memory[]) => {
      const bulk = (store as { indexMany?: (m: Memory[]) => Promise<void> }).indexMany;
      if (bulk) await bulk.call(store, memories);
      else for (const m of memories) await store.index(m);
    });
  const c = (title: string, body: (store: S) => Promise<void>) => storeCase(target, title, body);

  describe(`SearchStore contract: ${name}`, () => {
    const kit = { c, stems, bulkLoad };
    searchMemorieOwnCasesA(kit);
    searchMemorieOwnCasesB(kit);
    searchTextMatchingCases(kit);
    searchFiltersCasesA(kit);
    searchFiltersCasesB(kit);
    searchStructuredSearchPagingCases(kit);
    searchRecordsCases(kit);
  });
}

/** Memorie's own cases (strict) (part 1 of 2). */
function searchMemorieOwnCasesA<S extends SearchStore>({ c }: SearchKit<S>): void {
  c("indexes and finds a memory by keyword", async (store) => {
    const m = makeMemory({ namespace: "kw", subjectId: "s1", content: "The quarterly revenue report shows strong growth." });
    await store.index(m);
    assert.deepEqual(ids(await store.search({ namespace: "kw", subjectId: "s1", query: "revenue" })), [m.id]);
  });

  c("does not match unrelated content", async (store) => {
    await store.index(makeMemory({ namespace: "kw2", subjectId: "s1", content: "Completely unrelated content about gardening." }));
    assert.deepEqual(await store.search({ namespace: "kw2", subjectId: "s1", query: "revenue" }), []);
  });

  c("respects namespace/subject scoping (and finds the in-scope hit)", async (store) => {
    const a = makeMemory({ namespace: "scope-a", subjectId: "s1", content: "shared keyword apples" });
    const b = makeMemory({ namespace: "scope-b", subjectId: "s1", content: "shared keyword apples" });
    const c2 = makeMemory({ namespace: "scope-a", subjectId: "s2", content: "shared keyword apples" });
    await store.index(a);
    await store.index(b);
    await store.index(c2);
    assert.deepEqual(ids(await store.search({ namespace: "scope-a", subjectId: "s1", query: "apples" })), [a.id]);
    assert.deepEqual(ids(await store.search({ namespace: "scope-b", query: "apples" })), [b.id]);
  });

  c("enforces tenant isolation (and finds the tenant's hit)", async (store) => {
    const a = makeMemory({ tenantId: "t-a", namespace: "ns", subjectId: "s1", content: "isolated banana content" });
    const b = makeMemory({ tenantId: "t-b", namespace: "ns", subjectId: "s1", content: "isolated banana content" });
    await store.index(a);
    await store.index(b);
    assert.deepEqual(ids(await store.search({ tenantId: "t-a", namespace: "ns", subjectId: "s1", query: "banana" })), [a.id]);
    assert.deepEqual(ids(await store.search({ tenantId: "t-b", namespace: "ns", query: "banana" })), [b.id]);
  });

  c("without tenantId, a search spans tenants", async (store) => {
    const a = makeMemory({ tenantId: "t-a", namespace: "ns", content: "tenantless cherry" });
    const b = makeMemory({ tenantId: "t-b", namespace: "ns", content: "tenantless cherry" });
    const n = makeMemory({ namespace: "ns", content: "tenantless cherry" });
    for (const m of [a, b, n]) await store.index(m);
    assert.deepEqual(new Set(ids(await store.search({ namespace: "ns", query: "cherry" }))), new Set([a.id, b.id, n.id]));
  });

  c("removes a memory from the index on delete", async (store) => {
    const m = makeMemory({ namespace: "del-ns", subjectId: "s1", content: "deletable pineapple content" });
    const keep = makeMemory({ namespace: "del-ns", subjectId: "s1", content: "kept pineapple content" });
    await store.index(m);
    await store.index(keep);
    await store.delete(m.id);
    assert.deepEqual(ids(await store.search({ namespace: "del-ns", subjectId: "s1", query: "pineapple" })), [keep.id]);
  });
}

/** Memorie's own cases (strict) (part 2 of 2). */
function searchMemorieOwnCasesB<S extends SearchStore>({ c }: SearchKit<S>): void {
  c("re-indexing the same id updates rather than duplicates", async (store) => {
    const m = makeMemory({ namespace: "reindex-ns", subjectId: "s1", content: "original mango content" });
    await store.index(m);
    await store.index({ ...m, content: "updated mango content", version: 2 });
    const results = await store.search({ namespace: "reindex-ns", subjectId: "s1", query: "mango" });
    assert.deepEqual(ids(results), [m.id]);
    assert.equal(results[0]?.memory.content, "updated mango content");
    assert.equal(results[0]?.memory.version, 2);
    assert.deepEqual(await store.search({ namespace: "reindex-ns", query: "original" }), []);
  });

  c("returns scores in [0, 1] (for a real hit)", async (store) => {
    await store.index(makeMemory({ namespace: "score-ns", subjectId: "s1", content: "score test kiwi content" }));
    const results = await store.search({ namespace: "score-ns", subjectId: "s1", query: "kiwi" });
    assert.equal(results.length, 1);
    for (const r of results) {
      assert.ok(r.score > 0 && r.score <= 1, `score ${r.score}`);
      assert.deepEqual(r.matchedSignals, ["keyword"]);
    }
  });
}

/** Text matching. */
function searchTextMatchingCases<S extends SearchStore>({ c, stems }: SearchKit<S>): void {
  c("text search requires every word", async (store) => {
    const both = makeMemory({ content: "revenue growth was strong" });
    const one = makeMemory({ content: "revenue fell" });
    await store.index(both);
    await store.index(one);
    assert.deepEqual(ids(await store.search({ query: "revenue growth" })), [both.id]);
    assert.deepEqual(new Set(ids(await store.search({ query: "revenue" }))), new Set([both.id, one.id]));
  });

  c("text is never parsed as query syntax", async (store) => {
    const m = makeMemory({ content: "revenue report for the board" });
    await store.index(m);
    // As query syntax these would match (OR, wildcard, field:value) or fail to parse; as words they match nothing.
    for (const q of ["revenue OR gardening", "rev*", "content:revenue", "revenue AND (", "state:active"]) {
      assert.deepEqual(await store.search({ query: q }), [], q);
    }
    assert.deepEqual(ids(await store.search({ query: "revenue, report!" })), [m.id]);
    assert.deepEqual(ids(await store.search({ query: '"revenue (board' })), [m.id], "unbalanced quotes are just punctuation");
  });

  c("stop words are searchable words (no stop-word removal breaks an AND query)", async (store) => {
    const m = makeMemory({ content: "the report is on the table" });
    const other = makeMemory({ content: "a report" });
    await store.index(m);
    await store.index(other);
    assert.deepEqual(ids(await store.search({ query: "the report" })), [m.id]);
    assert.deepEqual(ids(await store.search({ query: "is" })), [m.id]);
  });

  c("stems English words as declared (report ~ reports, running ~ run; options.stemming or store.info.stemming)", async (store) => {
    const stemming = stems(store);
    const m = makeMemory({ content: "Two reports are running late" });
    await store.index(m);
    assert.deepEqual(ids(await store.search({ query: "reports running" })), [m.id]);
    assert.deepEqual(ids(await store.search({ query: "REPORTS" })), [m.id], "case-insensitive");
    assert.deepEqual(ids(await store.search({ query: "report run" })), stemming ? [m.id] : []);
  });

  c("ranks the better match first, scores strictly in (0, 1)", async (store) => {
    const strong = makeMemory({ content: "kiwi kiwi kiwi" });
    const weak = makeMemory({ content: "kiwi with many other unrelated words in a long sentence about fruit salad" });
    await store.index(weak);
    await store.index(strong);
    const results = await store.search({ query: "kiwi" });
    assert.deepEqual(ids(results), [strong.id, weak.id]);
    assert.ok(results[0]!.score > results[1]!.score && results[0]!.score < 1 && results[1]!.score > 0);
  });

  c("a blank query throws SearchError", async (store) => {
    await rejectsWithCode(() => store.search({ query: "   " }), "SEARCH_ERROR");
    await rejectsWithCode(() => store.search({ query: "" }), "SEARCH_ERROR");
  });
}

/** Filters (part 1 of 2). */
function searchFiltersCasesA<S extends SearchStore>({ c }: SearchKit<S>): void {
  c("filters by type and state, as a string or an array", async (store) => {
    const fact = makeMemory({ type: "fact", state: "active", content: "filter plum" });
    const pref = makeMemory({ type: "preference", state: "archived", content: "filter plum" });
    const event = makeMemory({ type: "event", state: "updated", content: "filter plum" });
    for (const m of [fact, pref, event]) await store.index(m);
    const q = (filters: object) => store.search({ query: "plum", filters }).then((r) => new Set(ids(r)));
    assert.deepEqual(await q({ type: "fact" }), new Set([fact.id]));
    assert.deepEqual(await q({ type: ["fact", "event"] }), new Set([fact.id, event.id]));
    assert.deepEqual(await q({ state: "archived" }), new Set([pref.id]));
    assert.deepEqual(await q({ state: ["active", "updated"] }), new Set([fact.id, event.id]));
    assert.deepEqual(await q({ type: ["fact", "preference"], state: "archived" }), new Set([pref.id]));
    assert.deepEqual(await q({ type: [] }), new Set());
  });

  c("filters by importance and confidence ranges (eq, gt, gte, lt, lte)", async (store) => {
    const lo = makeMemory({ importance: 0.2, confidence: 0.9, content: "range fig" });
    const mid = makeMemory({ importance: 0.5, confidence: 0.5, content: "range fig" });
    const hi = makeMemory({ importance: 0.8, confidence: 0.1, content: "range fig" });
    for (const m of [lo, mid, hi]) await store.index(m);
    const q = (filters: object) => store.search({ query: "fig", filters }).then((r) => new Set(ids(r)));
    assert.deepEqual(await q({ importance: { gte: 0.5 } }), new Set([mid.id, hi.id]));
    assert.deepEqual(await q({ importance: { gt: 0.5 } }), new Set([hi.id]));
    assert.deepEqual(await q({ importance: { lte: 0.5 } }), new Set([lo.id, mid.id]));
    assert.deepEqual(await q({ importance: { lt: 0.5 } }), new Set([lo.id]));
    assert.deepEqual(await q({ importance: { eq: 0.2 } }), new Set([lo.id]));
    assert.deepEqual(await q({ importance: { gt: 0.2, lt: 0.8 } }), new Set([mid.id]));
    assert.deepEqual(await q({ confidence: { gte: 0.5 }, importance: { gte: 0.5 } }), new Set([mid.id]));
  });

  c("filters by createdAt and updatedAt ranges", async (store) => {
    const d = (s: string) => new Date(s);
    const old = makeMemory({ createdAt: d("2024-01-01T00:00:00Z"), updatedAt: d("2024-06-01T00:00:00Z"), content: "dated lime" });
    const mid = makeMemory({ createdAt: d("2025-01-01T00:00:00Z"), updatedAt: d("2025-06-01T00:00:00Z"), content: "dated lime" });
    const neu = makeMemory({ createdAt: d("2026-01-01T00:00:00Z"), updatedAt: d("2026-06-01T00:00:00Z"), content: "dated lime" });
    for (const m of [old, mid, neu]) await store.index(m);
    const q = (filters: object) => store.search({ query: "lime", filters }).then((r) => new Set(ids(r)));
    assert.deepEqual(await q({ createdAt: { gte: d("2025-01-01T00:00:00Z") } }), new Set([mid.id, neu.id]));
    assert.deepEqual(await q({ createdAt: { gt: d("2025-01-01T00:00:00Z") } }), new Set([neu.id]));
    assert.deepEqual(await q({ createdAt: { eq: d("2024-01-01T00:00:00Z") } }), new Set([old.id]));
    assert.deepEqual(await q({ updatedAt: { lt: d("2025-06-01T00:00:00Z") } }), new Set([old.id]));
    assert.deepEqual(await q({ updatedAt: { lte: d("2025-06-01T00:00:00Z"), gt: d("2024-06-01T00:00:00Z") } }), new Set([mid.id]));
  });
}

/** Filters (part 2 of 2). */
function searchFiltersCasesB<S extends SearchStore>({ c }: SearchKit<S>): void {
  c("filters by metadata: exact, typed match on top-level keys", async (store) => {
    const a = makeMemory({ metadata: { project: "apollo", priority: 5, done: false }, content: "meta grape" });
    const b = makeMemory({ metadata: { project: "apollo", priority: "5" }, content: "meta grape" });
    const c2 = makeMemory({ metadata: { project: "gemini" }, content: "meta grape" });
    for (const m of [a, b, c2]) await store.index(m);
    const q = (metadata: Record<string, unknown>) => store.search({ query: "grape", filters: { metadata } }).then((r) => new Set(ids(r)));
    assert.deepEqual(await q({ project: "apollo" }), new Set([a.id, b.id]));
    assert.deepEqual(await q({ priority: 5 }), new Set([a.id]));
    assert.deepEqual(await q({ priority: "5" }), new Set([b.id]));
    assert.deepEqual(await q({ project: "apollo", done: false }), new Set([a.id]));
    assert.deepEqual(await q({ missing: "x" }), new Set());
    assert.deepEqual(await q({ project: "Apollo" }), new Set(), "case-sensitive");
  });
}

/** Structured search, paging. */
function searchStructuredSearchPagingCases<S extends SearchStore>({ c, bulkLoad }: SearchKit<S>): void {
  c("without text: every match, score 1, ['structured'], newest updatedAt first", async (store) => {
    const base = Date.UTC(2026, 0, 1);
    const ms = [3, 1, 2].map((i) => makeMemory({ namespace: "st", updatedAt: new Date(base + i * 1000), content: `item ${i}` }));
    for (const m of ms) await store.index(m);
    await store.index(makeMemory({ namespace: "other", content: "item 9" }));
    const results = await store.search({ namespace: "st" });
    assert.deepEqual(ids(results), [ms[0]!.id, ms[2]!.id, ms[1]!.id]);
    for (const r of results) {
      assert.equal(r.score, 1);
      assert.deepEqual(r.matchedSignals, ["structured"]);
    }
    assert.deepEqual(ids(await store.search({ namespace: "st", filters: { type: "none" } })), []);
  });

  c("default limit is 20; limit and offset page through the results", async (store) => {
    const base = Date.UTC(2026, 0, 1);
    const ms = Array.from({ length: 25 }, (_, i) => makeMemory({ namespace: "pg", updatedAt: new Date(base + i * 1000), content: `page word ${i}` }));
    await bulkLoad(store, ms);
    const newest = ms.slice().reverse().map((m) => m.id);
    assert.deepEqual(ids(await store.search({ namespace: "pg" })), newest.slice(0, 20));
    assert.deepEqual(ids(await store.search({ namespace: "pg", limit: 5, offset: 5 })), newest.slice(5, 10));
    assert.deepEqual(ids(await store.search({ namespace: "pg", limit: 10, offset: 20 })), newest.slice(20));
    assert.equal((await store.search({ namespace: "pg", query: "page word", limit: 3 })).length, 3);
    assert.equal((await store.search({ namespace: "pg", query: "page word", limit: 30 })).length, 25);
    assert.equal((await store.search({ namespace: "pg", query: "page word", offset: 24 })).length, 1);
  });
}

/** Records. */
function searchRecordsCases<S extends SearchStore>({ c, bulkLoad }: SearchKit<S>): void {
  c("round-trips every field of a memory, with real Dates", async (store) => {
    const full = makeMemory({
      tenantId: "tenant-1",
      namespace: "users",
      subjectId: "user-7",
      type: "preference",
      content: "prefers dark roast coffee",
      state: "superseded",
      importance: 0.73,
      confidence: 0.41,
      source: "chat",
      metadata: { nested: { a: [1, "two", null] }, flag: true, n: 1.5 },
      createdAt: new Date("2025-03-04T05:06:07.089Z"),
      updatedAt: new Date("2025-03-05T05:06:07.089Z"),
      lastAccessedAt: new Date("2025-03-06T05:06:07.089Z"),
      accessCount: 12,
      expiresAt: new Date("2027-01-01T00:00:00.000Z"),
      version: 4,
      supersededBy: "m-new",
      supersedes: "m-old",
      mergedFrom: ["m-x", "m-y"],
    });
    const bare = makeMemory({ content: "bare coffee" });
    await store.index(full);
    await store.index(bare);
    const [hit] = await store.search({ tenantId: "tenant-1", query: "coffee" });
    assert.deepEqual(hit?.memory, full);
    assert.ok(hit?.memory.createdAt instanceof Date && hit.memory.expiresAt instanceof Date);
    const [b] = await store.search({ query: "bare" });
    assert.deepEqual(b?.memory, bare);
    assert.equal(b?.memory.expiresAt, null);
    assert.ok(!("tenantId" in (b?.memory ?? {})), "an absent optional field stays absent");
  });

  c("deleting an unknown id is a no-op", async (store) => {
    const m = makeMemory({ content: "survivor melon" });
    await store.index(m);
    await store.delete("never-indexed-id");
    assert.deepEqual(ids(await store.search({ query: "melon" })), [m.id]);
  });

  c("listIds lists every id, past 10,000", async (store) => {
    assert.ok(store.listIds, "listIds is implemented");
    const ms = Array.from({ length: 10_050 }, (_, i) => makeMemory({ id: `bulk-${i}`, content: `bulk ${i}` }));
    await bulkLoad(store, ms);
    await store.delete("bulk-17");
    const listed = await store.listIds!();
    assert.equal(listed.length, 10_049);
    assert.deepEqual(new Set(listed), new Set(ms.map((m) => m.id).filter((id) => id !== "bulk-17")));
  });
}
