// Writes that could go astray, on real nodes: every write requires the store's alias (a deleted index is an error
// that says what to do, never a dynamically mapped index under the alias name), a concrete index holding the alias
// name is reported as such, and a URL that comes to reach another cluster is refused (cluster UUID of the open).
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";

import { createGraphStore, createSearchStore, createVectorStore } from "../src/index.js";
import { makeMemory, makeRelation, rejectsWithCode } from "../src/contract/common.js";
import { indexNames } from "../src/dialect.js";
import { Forwarder } from "./forwarder.js";
import { dropAfterSuite, freshPrefix, http, targets } from "./targets.js";

const KINDS = ["memories", "vectors", "relations"] as const;

for (const { engine, url } of targets) {
  describe(`writes that could go astray on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it("a write after another process deleted the index is refused, says what to do, and creates no index", async () => {
      const prefix = freshPrefix("gone");
      const s = track(await createSearchStore({ url, indexPrefix: prefix }));
      const v = track(await createVectorStore({ url, indexPrefix: prefix, dimensions: 2 }));
      const g = track(await createGraphStore({ url, indexPrefix: prefix, resolveMemory: () => null }));
      for (const kind of KINDS) assert.equal((await http(url, "DELETE", `/${indexNames(prefix, kind).index}`)).status, 200);
      const gone = (kind: string) =>
        new RegExp(`index ${prefix}-memorie-${kind} does not exist .*the write was refused, no index created\\. ` +
          "Create the store again");
      await rejectsWithCode(() => s.index(makeMemory()), "SEARCH_ERROR", gone("memories"));
      await rejectsWithCode(() => s.indexMany([makeMemory()], { refresh: "false" }), "SEARCH_ERROR", gone("memories"));
      await rejectsWithCode(() => s.delete("m1"), "SEARCH_ERROR", gone("memories"));
      await rejectsWithCode(() => v.upsert("a", [1, 0]), "VECTOR_STORE_ERROR", gone("vectors"));
      const entries = [{ id: "a", embedding: [1, 0] }];
      await rejectsWithCode(() => v.upsertMany(entries, { refresh: "false" }), "VECTOR_STORE_ERROR", gone("vectors"));
      await rejectsWithCode(() => g.createRelation(makeRelation()), "GRAPH_STORE_ERROR", gone("relations"));
      const search = await rejectsWithCode(() => s.search({ query: "x" }), "SEARCH_ERROR", /does not exist/);
      assert.doesNotMatch(search.message, /write/);
      for (const kind of KINDS) {
        assert.equal((await http(url, "HEAD", `/${prefix}-memorie-${kind}`)).status, 404, `no ${kind} index`);
      }
      // Creating the store again gives an empty index behind the alias; both store objects write to it.
      const again = track(await createSearchStore({ url, indexPrefix: prefix }));
      const m = makeMemory({ content: "recreated quince" });
      const old = makeMemory({ content: "old handle quince" });
      await again.index(m);
      await s.index(old);
      assert.deepEqual(new Set((await again.search({ query: "quince" })).map((r) => r.memory.id)), new Set([m.id, old.id]));
    });

    it("creating a store where a concrete index holds the alias name says so and what to do", async () => {
      const prefix = freshPrefix("concrete");
      const alias = `${prefix}-memorie-memories`;
      // What an older version's write did after the index was deleted: a dynamically mapped index under the alias.
      assert.equal((await http(url, "PUT", `/${alias}/_doc/x?refresh=true`, { id: "x", importance: 5 })).status, 201);
      try {
        await rejectsWithCode(
          () => createSearchStore({ url, indexPrefix: prefix }),
          "SEARCH_ERROR",
          new RegExp(`an index named ${alias} exists \\(not an alias\\).*delete that index \\(DELETE /${alias}\\), ` +
            "then create the store again"),
        );
        assert.equal((await http(url, "HEAD", `/${alias}-v1`)).status, 404);
      } finally {
        await http(url, "DELETE", `/${alias}`);
      }
    });
  });
}

const [first, second] = targets;
describe("a URL that comes to reach another cluster", { skip: second ? false : "needs both nodes (two clusters)" }, () => {
  const a = first!;
  const b = second!;
  const cleanup: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const f of cleanup.reverse()) await f().catch(() => {});
  });

  /**
   * A store opened through a forwarder on cluster A, and a store of the same prefix on cluster B, so that B has the
   * alias too and requiring the alias alone would let writes through.
   */
  async function setUp(label: string, clusterCheckMs?: number) {
    const prefix = freshPrefix(label);
    const onB = await createSearchStore({ url: b.url, indexPrefix: prefix });
    cleanup.push(async () => (await onB.drop(), await onB.close()));
    const forwarder = await Forwarder.start(a.url);
    cleanup.push(() => forwarder.close());
    // refresh "true": onA (another store object) lists m1 at once; this suite is about where writes go, not refresh
    const store = await createSearchStore({
      url: forwarder.url, indexPrefix: prefix, retry: { baseMs: 50 }, clusterCheckMs, refresh: "true",
    });
    cleanup.push(() => store.close());
    const onA = await createSearchStore({ url: a.url, indexPrefix: prefix });
    cleanup.push(async () => (await onA.drop(), await onA.close()));
    const m1 = makeMemory({ content: "first fig" });
    await store.index(m1);
    assert.deepEqual(await onA.listIds(), [m1.id]);
    return { store, onA, onB, forwarder, m1 };
  }
  const moved = /now reaches cluster \S+, not cluster \S+ where this store was opened .*nothing was sent/;

  it("after the node went away (connection failures), the first answer from another cluster stops the write", async () => {
    const { store, onA, onB, forwarder, m1 } = await setUp("moved");
    forwarder.switchTo(null);
    const later = setTimeout(() => forwarder.switchTo(b.url), 300);
    try {
      await rejectsWithCode(() => store.index(makeMemory({ content: "second fig" })), "SEARCH_ERROR", moved);
      await rejectsWithCode(() => store.search({ query: "fig" }), "SEARCH_ERROR", moved);
    } finally {
      clearTimeout(later);
    }
    assert.deepEqual(await onB.listIds(), [], "nothing written into the other cluster");
    assert.deepEqual(await onA.listIds(), [m1.id]);
  });

  it("while idle past clusterCheckMs (no failure seen), the next call checks first and stops the write", async () => {
    const { store, onA, onB, forwarder, m1 } = await setUp("idle", 100);
    forwarder.switchTo(b.url);
    await new Promise((r) => setTimeout(r, 300));
    await rejectsWithCode(() => store.index(makeMemory({ content: "third fig" })), "SEARCH_ERROR", moved);
    assert.deepEqual(await onB.listIds(), [], "nothing written into the other cluster");
    forwarder.switchTo(a.url);
    const back = makeMemory({ content: "back fig" });
    await store.index(back);
    assert.deepEqual(new Set(await onA.listIds()), new Set([m1.id, back.id]), "the first cluster again: writes go on");
  });
});
