// Filters the stores do not understand are errors that name the problem, never dropped (issue 52): on real nodes,
// a search store of 25 memories of one tenant (5 of importance 0.5) and a vector store of 3 entries. Before the
// check, each bad filter below returned every memory of the tenant (the search store) or [] (the vector store)
// without an error. Memorie's filter shape (`@memorie/types` MemoryFilters) types importance/confidence/createdAt/
// updatedAt as a RangeFilter only, with equality spelled {eq: v}; a bare value is not part of it, so it is refused
// with the {eq: ...} to write instead. Also the messages that quote what was given (issue 52, item 3).
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { before, describe, it } from "node:test";

import { makeMemory, rejectsWithCode } from "../src/contract/common.js";
import { searchQueryProblem, vectorFilterProblem } from "../src/filter-check.js";
import { createSearchStore, createVectorStore, type OpenSearchStore, type OpenSearchVectorStore } from "../src/index.js";
import type { SearchQuery } from "../src/types.js";
import { dropAfterSuite, freshPrefix, targets } from "./targets.js";

/** Each bad query with the exact message `search` rejects it with. */
const BAD_QUERIES: [string, unknown, string][] = [
  [
    "a bare number where a range is expected",
    { importance: 0.5 },
    "search: filters.importance must be a range such as {eq: 0.5} or {gte: 0.2, lt: 0.8}, not 0.5; for equality write {eq: 0.5}",
  ],
  [
    "a string where a range is expected",
    { importance: "high" },
    'search: filters.importance must be a range such as {eq: 0.5} or {gte: 0.2, lt: 0.8}, not "high"',
  ],
  [
    "an unknown bound",
    { importance: { between: [0, 1] } },
    "search: filters.importance.between is not a bound: a range takes eq, gte, gt, lte, lt (e.g. {eq: 0.5} or {gte: 0.2, lt: 0.8})",
  ],
  [
    "a misspelt bound",
    { confidence: { gtee: 0.2 } },
    'search: filters.confidence.gtee is not a bound (did you mean "gte"?): a range takes eq, gte, gt, lte, lt (e.g. {eq: 0.5} or {gte: 0.2, lt: 0.8})',
  ],
  [
    "a misspelt filter key",
    { typ: "fact" },
    'search: filters.typ is not a filter (did you mean "type"?): the filters are type, state, importance, confidence, createdAt, updatedAt, metadata',
  ],
  [
    "filters that are a string",
    "fact",
    'search: filters must be an object such as {type: "fact", importance: {gte: 0.5}, metadata: {topic: "tea"}}, not "fact"',
  ],
  [
    "filters that are an array",
    ["fact"],
    'search: filters must be an object such as {type: "fact", importance: {gte: 0.5}, metadata: {topic: "tea"}}, not the array ["fact"]',
  ],
  [
    "a Date where a date range is expected",
    { createdAt: new Date("2026-01-01T00:00:00Z") },
    'search: filters.createdAt must be a range such as {gte: new Date("2026-01-01")}, not Date 2026-01-01T00:00:00.000Z; for equality write {eq: <the Date>}',
  ],
  ["a number type", { type: 5 }, "search: filters.type must be a string or an array of strings, not 5"],
  ["a number in the states", { state: ["active", 1] }, "search: filters.state must be a string or an array of strings, filters.state[1] is 1"],
  [
    "metadata that is a string",
    { metadata: "tea" },
    'search: filters.metadata must be an object of top-level metadata key -> exact value, such as {topic: "tea"}, not "tea"',
  ],
  [
    "a metadata value without a JSON form",
    { metadata: { n: Number.NaN } },
    "search: filters.metadata.n is NaN, which has no JSON form to match",
  ],
];

const BAD_VECTOR_FILTERS: [string, unknown, string][] = [
  ["an array", ["acme"], 'search: filter must be an object of metadata key -> exact value, such as {tenantId: "acme"}, not the array ["acme"]'],
  [
    "the SearchStore's shape",
    { metadata: "x" },
    "search: filter.metadata: the filter is matched against the entries' metadata itself, so give its keys directly " +
      '(an object of metadata key -> exact value, such as {tenantId: "acme"}), not {metadata: ...}',
  ],
  ["a string", "acme", 'search: filter must be an object of metadata key -> exact value, such as {tenantId: "acme"}, not "acme"'],
  ["a number", 42, 'search: filter must be an object of metadata key -> exact value, such as {tenantId: "acme"}, not 42'],
  ["null", null, 'search: filter must be an object of metadata key -> exact value, such as {tenantId: "acme"}, not null'],
  [
    "a Map",
    new Map([["tenantId", "acme"]]),
    'search: filter must be an object of metadata key -> exact value, such as {tenantId: "acme"}, not a Map {}',
  ],
  [
    "a function value",
    { tenantId: () => "acme" },
    "search: filter.tenantId is a function: an exact match takes a string, number, boolean, null, Date, or an array or plain object of those",
  ],
];

describe("filter shapes (no node)", () => {
  it("a filter with undefined keys, Memorie's full shape, and metadata objects are accepted", () => {
    const ok: SearchQuery = {
      tenantId: "t",
      filters: {
        type: ["fact"],
        state: undefined,
        importance: { gte: 0.1, lt: 0.9 },
        confidence: {},
        createdAt: { gte: new Date(0) },
        updatedAt: { eq: new Date(0) },
        metadata: { a: [1, "x", null, { b: true }], gone: undefined },
      },
    };
    assert.equal(searchQueryProblem(ok), undefined);
    assert.equal(vectorFilterProblem({ tenantId: "t", tags: ["a"], gone: undefined }), undefined);
    assert.equal(vectorFilterProblem(undefined), undefined);
  });

  it("scope keys must be strings", () => {
    assert.equal(searchQueryProblem({ tenantId: 42 }), "tenantId must be a string, not 42");
    assert.equal(searchQueryProblem({ namespace: null }), "namespace must be a string, not null");
  });
});

for (const { engine, url } of targets) {
  describe(`filters the stores do not understand on ${engine} ${url}`, () => {
    const track = dropAfterSuite();
    let search: OpenSearchStore;
    let vectors: OpenSearchVectorStore;

    before(async () => {
      search = track(await createSearchStore({ url, indexPrefix: freshPrefix("filters"), refresh: "false" }));
      const memories = Array.from({ length: 25 }, (_, i) =>
        makeMemory({ id: `acme-${i}`, tenantId: "acme", content: `note ${i}`, importance: i % 5 === 0 ? 0.5 : 0.9 }),
      );
      memories.push(makeMemory({ id: "globex-0", tenantId: "globex", importance: 0.5 }));
      await search.indexMany(memories, { refresh: "true" });
      vectors = track(await createVectorStore({ url, indexPrefix: freshPrefix("filters-v"), refresh: "true" }));
      await vectors.upsert("a", [1, 0, 0], { tenantId: "acme" });
      await vectors.upsert("b", [0, 1, 0], { tenantId: "globex" });
      await vectors.upsert("c", [0, 0, 1], { tenantId: "acme", metadata: "x" });
    });

    it("a range filter applies: {eq: 0.5} gives the 5 of 25, as the baseline of the bad filters", async () => {
      const hits = await search.search({ tenantId: "acme", filters: { importance: { eq: 0.5 } }, limit: 100 });
      assert.deepEqual(hits.map((h) => h.memory.id).sort(), ["acme-0", "acme-10", "acme-15", "acme-20", "acme-5"]);
      assert.equal((await search.search({ tenantId: "acme", limit: 100 })).length, 25);
    });

    for (const [what, filters, message] of BAD_QUERIES) {
      it(`search: ${what} is an error that names it`, async () => {
        const query = { tenantId: "acme", filters, limit: 100 } as unknown as SearchQuery;
        const err = await rejectsWithCode(() => search.search(query), "SEARCH_ERROR");
        assert.equal(err.message, message);
      });
    }

    it("search: a tenantId that is not a string is an error, not an unscoped search", async () => {
      const err = await rejectsWithCode(() => search.search({ tenantId: 7 } as unknown as SearchQuery), "SEARCH_ERROR");
      assert.equal(err.message, "search: tenantId must be a string, not 7");
    });

    it("vector search: a metadata filter applies ({tenantId: acme} gives a and c)", async () => {
      const hits = await vectors.search([1, 0, 0], { filter: { tenantId: "acme" } });
      assert.deepEqual(hits.map((h) => h.id), ["a", "c"]);
    });

    for (const [what, filter, message] of BAD_VECTOR_FILTERS) {
      it(`vector search: a filter that is ${what} is an error that names it`, async () => {
        const options = { filter } as unknown as { filter: Record<string, unknown> };
        const err = await rejectsWithCode(() => vectors.search([1, 0, 0], options), "VECTOR_STORE_ERROR");
        assert.equal(err.message, message);
      });
    }

    it("upsertMany: an entry refused before sending rejects the call; its page and later ones are not sent", async () => {
      const entries = [
        { id: "ok-1", embedding: [1, 1, 0] },
        { id: "bad", embedding: [1, Number.NaN, 0] },
        { id: "ok-2", embedding: [0, 1, 1] },
      ];
      const store = track(await createVectorStore({ url, indexPrefix: freshPrefix("upsert-many"), refresh: "true", dimensions: 3 }));
      const err = await rejectsWithCode(() => store.upsertMany(entries), "VECTOR_STORE_ERROR");
      assert.equal(err.message, "upsert bad: embedding[1] is NaN, not a finite number");
      assert.deepEqual(await store.listIds(), []); // one page (1000 entries): nothing sent
      await rejectsWithCode(() => store.upsertMany(entries, { pageSize: 1, concurrency: 1 }), "VECTOR_STORE_ERROR");
      await store.refresh();
      assert.deepEqual(await store.listIds(), ["ok-1"]); // the page before the bad entry was stored, none after
    });

    it("vector search: messages quote what was given (a string is not a number)", async () => {
      const cases: [() => Promise<unknown>, string][] = [
        [() => vectors.search([1, "-2", 0] as unknown as number[]), 'search: embedding[1] is "-2", not a finite number'],
        [() => vectors.search([1, 0, 0], { topK: "10" as unknown as number }), 'search: topK must be a whole number from 0 to 10000, not "10"'],
        [() => vectors.search([1, 0, 0], { topK: 2.5 }), "search: topK must be a whole number from 0 to 10000, not 2.5"],
        [
          () => vectors.search([1, 0, 0], { threshold: "0.5" as unknown as number }),
          'search: threshold must be a number in [0, 1], not "0.5"',
        ],
        [() => vectors.upsert("d", [Number.NaN, 0, 0]), "upsert d: embedding[0] is NaN, not a finite number"],
      ];
      for (const [call, message] of cases) {
        const err = await rejectsWithCode(call, "VECTOR_STORE_ERROR");
        assert.equal(err.message, message);
      }
    });
  });
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("a closed port", () => {
  it("says the retries ran out, with the attempts, not that the time did", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const err = await rejectsWithCode(
      () => createSearchStore({ url, indexPrefix: "p", retry: { retries: 2, baseMs: 1 } }),
      "SEARCH_ERROR",
    );
    assert.match(err.message, /^ask \S+ for its version failed: the node could not be reached after 3 attempt\(s\) in \d+ ms \(last: .*ECONNREFUSED.*\); is it running\?$/);
    assert.doesNotMatch(err.message, /no success within/);
  });

  it("when the next backoff would pass callTimeoutMs, says so, with the attempts made", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const options = { url, indexPrefix: "p", callTimeoutMs: 900, retry: { retries: 6, baseMs: 2000, capMs: 2000 } };
    const err = await rejectsWithCode(() => createVectorStore(options), "VECTOR_STORE_ERROR");
    assert.match(
      err.message,
      /^ask \S+ for its version failed: the node could not be reached after 1 attempt\(s\) in \d+ ms \(last: .*ECONNREFUSED.*\); the next retry's backoff would pass callTimeoutMs \(900 ms\), so it stopped there; is it running\?$/,
    );
  });
});
