// `forget` (one tenant, optionally one namespace/subject, out of all three stores in one call each, no 10,000 cap,
// optional expunge) and the shards/replicas of the indices the stores create, on real nodes. Tenants share one index
// and have identical texts, vectors and relations, so only the scope tells them apart.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  createGraphStore,
  createSearchStore,
  createVectorStore,
  type ForgetResult,
  type Memory,
  type OpenSearchGraphStore,
  type OpenSearchStore,
  type OpenSearchVectorStore,
} from "../src/index.js";
import { makeMemory, rejectsWithCode } from "../src/contract/common.js";
import { loadTemplate } from "../src/dialect.js";
import { dropAfterSuite, freshPrefix, http, targets } from "./targets.js";

const TENANTS = ["t-a", "t-b", "t-c"];
const NAMESPACES = ["n1", "n2"];
const SUBJECTS = ["s1", "s2"];
const PER_GROUP = 3;
const DIMS = 4;

/** Memories of one tenant: PER_GROUP per namespace x subject, ids `<tenant>.<ns>.<subject>.<i>`, same text for all. */
function memoriesOf(tenant: string): Memory[] {
  const out: Memory[] = [];
  for (const namespace of NAMESPACES) {
    for (const subjectId of SUBJECTS) {
      for (let i = 0; i < PER_GROUP; i++) {
        out.push(makeMemory({ id: `${tenant}.${namespace}.${subjectId}.${i}`, tenantId: tenant, namespace, subjectId,
          content: `shared words number ${i}` }));
      }
    }
  }
  return out;
}

/** Relations of one tenant: a chain inside each namespace x subject, and one from n1.s1 to n2.s2 (across both). */
function relationsOf(tenant: string) {
  const out: { id: string; from: string; to: string }[] = [];
  for (const namespace of NAMESPACES) {
    for (const subjectId of SUBJECTS) {
      for (let i = 0; i + 1 < PER_GROUP; i++) {
        out.push({ id: `r.${tenant}.${namespace}.${subjectId}.${i}`, from: `${tenant}.${namespace}.${subjectId}.${i}`,
          to: `${tenant}.${namespace}.${subjectId}.${i + 1}` });
      }
    }
  }
  out.push({ id: `r.${tenant}.cross`, from: `${tenant}.n1.s1.0`, to: `${tenant}.n2.s2.0` });
  return out;
}

const sorted = (xs: string[]) => [...xs].sort();

interface Stores {
  search: OpenSearchStore;
  vectors: OpenSearchVectorStore;
  graph: OpenSearchGraphStore;
  all: Memory[];
}

/** The three stores of one prefix, filled with the memories, vectors and relations of every tenant. */
async function filled(url: string, label: string, track: ReturnType<typeof dropAfterSuite>): Promise<Stores> {
  const indexPrefix = freshPrefix(label);
  const all = TENANTS.flatMap(memoriesOf);
  const canonical = new Map(all.map((m) => [m.id, m]));
  const search = track(await createSearchStore({ url, indexPrefix }));
  const vectors = track(await createVectorStore({ url, indexPrefix, dimensions: DIMS }));
  const graph = track(await createGraphStore({ url, indexPrefix, resolveMemory: (id) => canonical.get(id) ?? null }));
  await search.indexMany(all);
  await vectors.upsertMany(all.map((m, i) => ({ id: m.id, embedding: [1, (i % PER_GROUP) + 1, 0.5, 0.25],
    metadata: { tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId } })));
  for (const r of TENANTS.flatMap(relationsOf)) {
    await graph.createRelation({ id: r.id, fromMemoryId: r.from, toMemoryId: r.to, type: "related_to", createdAt: new Date() });
  }
  return { search, vectors, graph, all };
}

async function relationIds(graph: OpenSearchGraphStore): Promise<string[]> {
  return sorted((await graph.listRelations()).map((r) => r.id));
}

/** Whether the node has `_delete_by_query` (the reindex module): a node without it has no handler for the path. */
async function nodeHasDeleteByQuery(url: string): Promise<boolean> {
  const r = await http(url, "POST", "/reme-es-no-such-index/_delete_by_query", { query: { match_all: {} } });
  return !(r.status === 405 || (r.status === 400 && /no handler found/i.test(JSON.stringify(r.body))));
}

async function deletedDocs(url: string, index: string): Promise<number> {
  const r = await http(url, "GET", `/${index}/_stats/docs`);
  return r.body._all.primaries.docs.deleted;
}

for (const { engine, url } of targets) {
  describe(`forget on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it("forgets one tenant among three with identical content, in all three stores, and nothing else", async () => {
      const s = await filled(url, "forget-tenant", track);
      const expected = (await nodeHasDeleteByQuery(url)) ? "delete_by_query" : "scan";
      const results = await Promise.all([
        s.search.forget({ tenantId: "t-b" }),
        s.vectors.forget({ tenantId: "t-b" }),
        s.graph.forget({ tenantId: "t-b" }),
      ]);
      const perTenant = NAMESPACES.length * SUBJECTS.length * PER_GROUP;
      const relationsPerTenant = relationsOf("t-b").length;
      assert.deepEqual(results.map((r) => [r.deleted, r.expunged, r.method]), [
        [perTenant, false, expected],
        [perTenant, false, expected],
        [relationsPerTenant, false, expected],
      ]);
      for (const r of results) assert.ok(r.seconds > 0 && r.seconds < 60, `seconds ${r.seconds}`);
      // Read by other store objects: the forget refreshed, so every reader sees it at once.
      const kept = s.all.filter((m) => m.tenantId !== "t-b").map((m) => m.id);
      assert.deepEqual(sorted(await s.search.listIds()), sorted(kept));
      assert.deepEqual(sorted(await s.vectors.listIds()), sorted(kept));
      assert.deepEqual(await relationIds(s.graph), sorted(["t-a", "t-c"].flatMap(relationsOf).map((r) => r.id)));
      const hits = await s.search.search({ query: "shared words", limit: 100 });
      assert.deepEqual(sorted([...new Set(hits.map((h) => h.memory.tenantId!))]), ["t-a", "t-c"]);
      assert.equal(hits.length, kept.length);
      // The other tenants' neighbours are untouched: the same vector still finds both of them.
      const near = await s.vectors.search([1, 1, 0.5, 0.25], { topK: 100 });
      assert.equal(near.length, kept.length);
      assert.deepEqual(sorted(near.map((h) => h.id)), sorted(kept));
      // Forgetting again finds nothing.
      assert.deepEqual((await s.search.forget({ tenantId: "t-b" })).deleted, 0);
    });

    it("narrows to a namespace, a subject, or both; a relation goes when either of its memories is in scope", async () => {
      const s = await filled(url, "forget-narrow", track);
      const ids = (pred: (m: Memory) => boolean) => sorted(s.all.filter(pred).map((m) => m.id));
      let gone = (m: Memory) => m.tenantId === "t-a" && m.namespace === "n1";
      let r = await s.search.forget({ tenantId: "t-a", namespace: "n1" });
      assert.equal(r.deleted, SUBJECTS.length * PER_GROUP);
      assert.deepEqual(sorted(await s.search.listIds()), ids((m) => !gone(m)));
      assert.equal((await s.vectors.forget({ tenantId: "t-a", namespace: "n1" })).deleted, SUBJECTS.length * PER_GROUP);
      assert.deepEqual(sorted(await s.vectors.listIds()), ids((m) => !gone(m)));
      // n1's two chains (2 relations each) and the cross relation, which starts in n1
      assert.equal((await s.graph.forget({ tenantId: "t-a", namespace: "n1" })).deleted, 2 * (PER_GROUP - 1) + 1);
      const left = ["t-b", "t-c"].flatMap(relationsOf).map((x) => x.id);
      left.push(...relationsOf("t-a").filter((x) => x.id.startsWith("r.t-a.n2.")).map((x) => x.id));
      assert.deepEqual(await relationIds(s.graph), sorted(left));

      const before = gone;
      gone = (m: Memory) => before(m) || (m.tenantId === "t-c" && m.subjectId === "s2");
      r = await s.search.forget({ tenantId: "t-c", subjectId: "s2" });
      assert.equal(r.deleted, NAMESPACES.length * PER_GROUP);
      assert.deepEqual(sorted(await s.search.listIds()), ids((m) => !gone(m)));
      assert.equal((await s.vectors.forget({ tenantId: "t-c", subjectId: "s2" })).deleted, NAMESPACES.length * PER_GROUP);
      assert.deepEqual(sorted(await s.vectors.listIds()), ids((m) => !gone(m)));
      // s2's chains in n1 and n2, and the cross relation (its `to` is n2.s2)
      assert.equal((await s.graph.forget({ tenantId: "t-c", subjectId: "s2" })).deleted, 2 * (PER_GROUP - 1) + 1);

      const both = (m: Memory) => m.tenantId === "t-b" && m.namespace === "n2" && m.subjectId === "s1";
      const all3 = (m: Memory) => gone(m) || both(m);
      assert.equal((await s.search.forget({ tenantId: "t-b", namespace: "n2", subjectId: "s1" })).deleted, PER_GROUP);
      assert.deepEqual(sorted(await s.search.listIds()), ids((m) => !all3(m)));
      assert.equal((await s.vectors.forget({ tenantId: "t-b", namespace: "n2", subjectId: "s1" })).deleted, PER_GROUP);
      assert.deepEqual(sorted(await s.vectors.listIds()), ids((m) => !all3(m)));
      // n2.s1's chain only: the cross relation joins n1.s1 and n2.s2, neither end is n2.s1
      assert.equal((await s.graph.forget({ tenantId: "t-b", namespace: "n2", subjectId: "s1" })).deleted, PER_GROUP - 1);
      assert.ok((await relationIds(s.graph)).includes("r.t-b.cross"));
    });

    it("a scoped vector store forgets within its scope and refuses another tenant", async () => {
      const s = await filled(url, "forget-scoped", track);
      const scoped = s.vectors.scoped({ tenantId: "t-a", namespace: "n2" });
      assert.equal((await scoped.forget({ tenantId: "t-a" })).deleted, SUBJECTS.length * PER_GROUP);
      const kept = s.all.filter((m) => !(m.tenantId === "t-a" && m.namespace === "n2")).map((m) => m.id);
      assert.deepEqual(sorted(await s.vectors.listIds()), sorted(kept));
      await rejectsWithCode(() => scoped.forget({ tenantId: "t-b" }), "VECTOR_STORE_ERROR", /scoped to "t-a"/);
      assert.deepEqual(sorted(await s.vectors.listIds()), sorted(kept));
    });

    it("refuses an empty tenant (and other bad options) before sending anything", async () => {
      const s = await filled(url, "forget-refuse", track);
      const count = s.all.length;
      for (const bad of [{ tenantId: "" }, { tenantId: "  " }, {}, undefined, { tenantId: 5 }]) {
        await rejectsWithCode(() => s.search.forget(bad as any), "SEARCH_ERROR", /tenantId must be a non-empty string.*never all/);
        await rejectsWithCode(() => s.vectors.forget(bad as any), "VECTOR_STORE_ERROR", /tenantId must be a non-empty string/);
        await rejectsWithCode(() => s.graph.forget(bad as any), "GRAPH_STORE_ERROR", /tenantId must be a non-empty string/);
      }
      await rejectsWithCode(() => s.search.forget({ tenantId: "t-a", namespace: "" }), "SEARCH_ERROR", /namespace must be/);
      await rejectsWithCode(() => s.search.forget({ tenantId: "t-a", expunge: "yes" as any }), "SEARCH_ERROR", /expunge must be/);
      await rejectsWithCode(() => s.search.forget({ tenantId: "t-a", method: "fast" as any }), "SEARCH_ERROR", /method must be/);
      assert.equal((await s.search.listIds()).length, count);
      assert.equal((await s.vectors.listIds()).length, count);
      assert.equal((await relationIds(s.graph)).length, TENANTS.length * relationsOf("x").length);
    });

    it("forgets past the result window in one call: 250 documents with max_result_window 100, by either method", async () => {
      const indexPrefix = freshPrefix("forget-window");
      const search = track(await createSearchStore({ url, indexPrefix }));
      const mk = (tenant: string, n: number) =>
        Array.from({ length: n }, (_, i) => makeMemory({ id: `${tenant}-${String(i).padStart(4, "0")}`, tenantId: tenant }));
      await http(url, "PUT", `/${search.info.index}/_settings`, { index: { max_result_window: 100 } });
      const window = await http(url, "GET", `/${search.info.index}/_settings/index.max_result_window`);
      assert.equal(Object.values(window.body as Record<string, any>)[0].settings.index.max_result_window, "100");
      const native = (await nodeHasDeleteByQuery(url)) ? "delete_by_query" : "scan";
      for (const method of ["auto", "scan"] as const) {
        await search.indexMany([...mk("big", 250), ...mk("small", 30)]);
        const r = await search.forget({ tenantId: "big", method });
        assert.equal(r.deleted, 250, `method ${method}`);
        assert.equal(r.method, method === "scan" ? "scan" : native);
        const left = await search.search({ tenantId: "small", limit: 100 });
        assert.equal(left.length, 30);
        assert.equal((await search.search({ tenantId: "big", limit: 100 })).length, 0);
      }
    });

    it("forgets more than 10,000 memories of one tenant in one call", async () => {
      const indexPrefix = freshPrefix("forget-10k");
      const search = track(await createSearchStore({ url, indexPrefix }));
      const many = Array.from({ length: 10_500 }, (_, i) => makeMemory({ id: `big-${i}`, tenantId: "big", content: "x" }));
      const few = Array.from({ length: 20 }, (_, i) => makeMemory({ id: `other-${i}`, tenantId: "other", content: "x" }));
      await search.indexMany([...many, ...few]);
      const r = await search.forget({ tenantId: "big" });
      assert.equal(r.deleted, 10_500);
      assert.deepEqual(sorted(await search.listIds()), sorted(few.map((m) => m.id)));
    });

    it("expunge rewrites the segments: docs.deleted is 0 after it (and is not without it)", async () => {
      const s = await filled(url, "forget-expunge", track);
      const names = await Promise.all(["memories", "vectors", "relations"].map(async (kind) => {
        const a = await http(url, "GET", `/_alias/${(s.search.info.alias).replace(/memories$/, kind)}`);
        return Object.keys(a.body)[0] as string;
      }));
      // Without expunge the deleted documents stay in their segments.
      await Promise.all([s.search.forget({ tenantId: "t-c" }), s.vectors.forget({ tenantId: "t-c" }), s.graph.forget({ tenantId: "t-c" })]);
      for (const index of names) assert.ok((await deletedDocs(url, index)) > 0, `${index}: nothing deleted to expunge`);
      // The memories index as an older template made it: the node's default 10% of deletes before a segment is expunged.
      const memoriesIndex = names[0]!;
      await http(url, "PUT", `/${memoriesIndex}/_settings`, { index: { merge: { policy: { expunge_deletes_allowed: null } } } });
      const results: ForgetResult[] = await Promise.all([
        s.search.forget({ tenantId: "t-a", expunge: true }),
        s.vectors.forget({ tenantId: "t-a", expunge: true }),
        s.graph.forget({ tenantId: "t-a", expunge: true }),
      ]);
      assert.deepEqual(results.map((r) => [r.deleted, r.expunged]),
        [[s.all.length / 3, true], [s.all.length / 3, true], [relationsOf("t-a").length, true]]);
      for (const index of names) assert.equal(await deletedDocs(url, index), 0, `${index} still holds deleted documents`);
      const setting = await http(url, "GET", `/${memoriesIndex}/_settings/index.merge.policy.expunge_deletes_allowed?flat_settings=true`);
      assert.equal(setting.body[memoriesIndex].settings["index.merge.policy.expunge_deletes_allowed"], "0");
      assert.deepEqual(sorted(await s.search.listIds()), sorted(s.all.filter((m) => m.tenantId === "t-b").map((m) => m.id)));
    });

    it("relations of an index of template version 1 (no scope fields) are upgraded in place", async () => {
      const indexPrefix = freshPrefix("forget-v1");
      const alias = `${indexPrefix}-memorie-relations`;
      const template = loadTemplate("relations");
      const properties = Object.fromEntries(Object.entries(template.mappings.properties)
        .filter(([name]) => !/^(from|to)_(tenant_id|namespace|subject_id)$/.test(name)));
      const made = await http(url, "PUT", `/${alias}-v1`, {
        settings: { index: { number_of_shards: 1, number_of_replicas: 0 } },
        aliases: { [alias]: {} },
        mappings: { dynamic: "strict", properties, _meta: { reme_es: { kind: "memorie-relations", template_version: 1 } } },
      });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      await http(url, "PUT", `/${alias}/_doc/old?refresh=true`, { id: "old", from_id: "t-a.n1.s1.0", to_id: "t-a.n1.s1.1",
        type: "supports", weight: null, created_at: new Date().toISOString(), metadata: null });
      const canonical = new Map(memoriesOf("t-a").map((m) => [m.id, m]));
      const graph = track(await createGraphStore({ url, indexPrefix, resolveMemory: (id) => canonical.get(id) ?? null }));
      const mapping = (await http(url, "GET", `/${alias}-v1/_mapping`)).body[`${alias}-v1`].mappings;
      assert.equal(mapping._meta.reme_es.template_version, template.version);
      assert.equal(mapping.properties.from_tenant_id.type, "keyword");
      await graph.createRelation({ id: "new", fromMemoryId: "t-a.n1.s1.0", toMemoryId: "t-a.n1.s1.2", type: "supports", createdAt: new Date() });
      // The relation written before the upgrade has no scope: forget does not find it (documented).
      assert.equal((await graph.forget({ tenantId: "t-a" })).deleted, 1);
      assert.deepEqual(await relationIds(graph), ["old"]);
    });
  });

  describe(`shards and replicas on ${engine} ${url}`, () => {
    const track = dropAfterSuite();
    const settingsOf = async (index: string) =>
      (await http(url, "GET", `/${index}/_settings`)).body[index].settings.index;
    const aliasIndex = async (alias: string) => Object.keys((await http(url, "GET", `/_alias/${alias}`)).body)[0] as string;

    it("by default every index has one shard and auto_expand_replicas 0-1 (one node: no replica, green)", async () => {
      const indexPrefix = freshPrefix("layout-default");
      track(await createSearchStore({ url, indexPrefix }));
      track(await createVectorStore({ url, indexPrefix, dimensions: DIMS }));
      track(await createGraphStore({ url, indexPrefix, resolveMemory: () => null }));
      for (const kind of ["memories", "vectors", "relations"]) {
        const index = await aliasIndex(`${indexPrefix}-memorie-${kind}`);
        const s = await settingsOf(index);
        assert.equal(s.auto_expand_replicas, "0-1", kind);
        assert.equal(s.number_of_shards, "1", kind);
        assert.equal(s.number_of_replicas, "0", kind); // a single node
        assert.equal(s.merge.policy.expunge_deletes_allowed, "0", kind);
        const health = await http(url, "GET", `/_cluster/health/${index}?wait_for_status=green&timeout=10s`);
        assert.equal(health.body.status, "green", kind);
      }
    });

    it("replicas and shards given: number_of_replicas N, auto_expand_replicas false, number_of_shards N", async () => {
      const indexPrefix = freshPrefix("layout-set");
      const o = { url, indexPrefix, replicas: 1, shards: 2 };
      track(await createSearchStore(o));
      track(await createVectorStore({ ...o, dimensions: DIMS }));
      track(await createGraphStore({ ...o, resolveMemory: () => null }));
      for (const kind of ["memories", "vectors", "relations"]) {
        const s = await settingsOf(await aliasIndex(`${indexPrefix}-memorie-${kind}`));
        assert.deepEqual([s.number_of_replicas, s.auto_expand_replicas, s.number_of_shards], ["1", "false", "2"], kind);
      }
      // Reopening with the same values is fine; with others it fails and says what to do.
      track(await createSearchStore(o));
      await rejectsWithCode(() => createSearchStore({ ...o, shards: 1 }), "SEARCH_ERROR",
        /shards is 1 but the index has 2.*fixed at creation.*new indexPrefix/);
      await rejectsWithCode(() => createVectorStore({ ...o, replicas: 0 }), "VECTOR_STORE_ERROR",
        /replicas is 0 but the index has 1.*PUT \/.*_settings.*"number_of_replicas": 0, "auto_expand_replicas": false/);
      track(await createGraphStore({ url, indexPrefix, replicas: 1, resolveMemory: () => null }));
      // Left out: the index is opened as it is.
      track(await createSearchStore({ url, indexPrefix }));
    });

    it("an index with auto_expand_replicas is not one of a fixed replica count", async () => {
      const indexPrefix = freshPrefix("layout-auto");
      track(await createSearchStore({ url, indexPrefix }));
      await rejectsWithCode(() => createSearchStore({ url, indexPrefix, replicas: 0 }), "SEARCH_ERROR",
        /expands its replicas automatically \(auto_expand_replicas 0-1\)/);
    });

    it("refuses bad replicas and shards with a message naming the option and what to use", async () => {
      const indexPrefix = freshPrefix("layout-bad");
      for (const [key, value] of [["replicas", -1], ["replicas", 1.5], ["replicas", "1"], ["shards", 0], ["shards", NaN]] as const) {
        await rejectsWithCode(() => createSearchStore({ url, indexPrefix, [key]: value } as any), "SEARCH_ERROR",
          new RegExp(`^\`${key}\` must be a whole number from ${key === "shards" ? 1 : 0} to 1024, not .*: `));
      }
      await rejectsWithCode(() => createVectorStore({ url, indexPrefix, replicas: -1 }), "VECTOR_STORE_ERROR", /`replicas`/);
      await rejectsWithCode(() => createGraphStore({ url, indexPrefix, shards: 0, resolveMemory: () => null }), "GRAPH_STORE_ERROR", /`shards`/);
      const none = await http(url, "GET", `/_alias/${indexPrefix}-memorie-*`);
      assert.ok(none.status === 404 || Object.keys(none.body).length === 0, "no index was created");
    });
  });
}
