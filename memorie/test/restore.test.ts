// `createSnapshot` and `restoreTenant` on real nodes whose path.repo is set (`reme-es server start --snapshot-repo`;
// `./run test-memorie` starts its nodes so): two tenants in one prefix, a snapshot, then both tenants change (a
// memory added, one deleted, one rewritten, with their vectors and relations); restoring one tenant gives it exactly
// its snapshot documents (vectors included) and leaves the other's later state as it is, with no temporary index
// left, also when a restore is refused. The plan's pure parts are checked without a node.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  createGraphStore,
  createSearchStore,
  createSnapshot,
  createVectorStore,
  type Memory,
  restoreTenant,
} from "../src/index.js";
import { makeMemory, rejectsWithCode } from "../src/contract/common.js";
import { dialectOf } from "../src/engine-dialect.js";
import { countMismatches, planRestore } from "../src/restore-plan.js";
import { dropAfterSuite, freshPrefix, http, targets } from "./targets.js";

const TENANTS = ["t-a", "t-b"];
const KINDS = ["memories", "vectors", "relations"] as const;

describe("restore plan", () => {
  it("takes the prefix's index of each kind from the snapshot, under temporary names outside the prefix", () => {
    const plan = planRestore(["p-memorie-vectors-v1", "p-memorie-memories-v1", "other-memorie-memories-v1", "p-chunks-1"], "p", "ab12");
    assert.deepEqual(plan.kinds, [
      { kind: "memories", source: "p-memorie-memories-v1", version: 1, temp: "restore-ab12-p-memorie-memories-v1", alias: "p-memorie-memories" },
      { kind: "vectors", source: "p-memorie-vectors-v1", version: 1, temp: "restore-ab12-p-memorie-vectors-v1", alias: "p-memorie-vectors" },
    ]);
    assert.deepEqual(plan.rename, ["(.+)", "restore-ab12-$1"]);
    assert.throws(() => planRestore(["q-memorie-memories-v1"], "p", "ab12"), /holds no index of prefix p .*Nothing was changed/);
    assert.throws(() => planRestore(["p-memorie-relations-v1", "p-memorie-relations-v2"], "p", "ab12"), /more than one index/);
    assert.throws(() => planRestore(["p-memorie-memories-v1"], "p", "AB"), /lowercase letters and digits/);
    assert.deepEqual(countMismatches({ memories: 3, vectors: 2 }, { memories: 3, vectors: 1 }), ["vectors: 1 live, 2 in the snapshot"]);
    assert.deepEqual(dialectOf("elasticsearch").sourceWithVectors("9.3.2"), { exclude_vectors: false });
    assert.equal(dialectOf("elasticsearch").sourceWithVectors("9.1.5"), true);
    assert.equal(dialectOf("elasticsearch").sourceWithVectors("8.19.0"), true);
    assert.equal(dialectOf("opensearch").sourceWithVectors("3.5.0"), true);
  });
});

/** The node's path.repo (first folder), or null when it has none. */
async function pathRepo(url: string): Promise<string | null> {
  const r = await http(url, "GET", "/_nodes/settings?filter_path=nodes.*.settings.path.repo");
  const repo = (Object.values(r.body?.nodes ?? {})[0] as { settings?: { path?: { repo?: string | string[] } } } | undefined)
    ?.settings?.path?.repo;
  return repo === undefined ? null : Array.isArray(repo) ? (repo[0] ?? null) : repo;
}

type Docs = Record<string, Record<string, unknown>>;

/** Per kind, one tenant's documents in the live indices: id -> `_source`, vectors included. */
async function tenantDocs(url: string, engine: string, prefix: string, tenant: string): Promise<Record<string, Docs>> {
  const queries = {
    memories: { term: { tenant_id: tenant } },
    vectors: { term: { meta_kv: `tenantId\u001f${JSON.stringify(tenant)}` } },
    relations: { bool: { should: [{ term: { from_tenant_id: tenant } }, { term: { to_tenant_id: tenant } }] } },
  };
  const out: Record<string, Docs> = {};
  for (const kind of KINDS) {
    await http(url, "POST", `/${prefix}-memorie-${kind}/_refresh`);
    const source = engine === "elasticsearch" ? { exclude_vectors: false } : true;
    const r = await http(url, "POST", `/${prefix}-memorie-${kind}/_search`, { query: queries[kind], size: 1000, _source: source });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    out[kind] = Object.fromEntries(r.body.hits.hits.map((h: { _id: string; _source: Record<string, unknown> }) => [h._id, h._source]));
  }
  return out;
}

async function tempIndices(url: string): Promise<string[]> {
  const r = await http(url, "GET", "/_cat/indices/restore-*?format=json&h=index");
  return (r.body as { index: string }[]).map((i) => i.index);
}

for (const { engine, url } of targets) {
  describe(`restore one tenant on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it("gives one tenant its snapshot state back, leaves the other's later writes, and no temporary index", async (t) => {
      const repoDir = await pathRepo(url);
      if (repoDir === null) {
        t.skip("the node has no path.repo: start it with `reme-es server start --snapshot-repo DIR`");
        return;
      }
      const indexPrefix = freshPrefix("restore");
      const options = { url, indexPrefix };
      const memories = new Map<string, Memory>();
      const search = track(await createSearchStore(options));
      const vectors = track(await createVectorStore({ ...options, dimensions: 4 }));
      const graph = track(await createGraphStore({ ...options, resolveMemory: (id) => memories.get(id) ?? null }));
      const meta = (m: Memory) => ({ tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId });
      const put = async (m: Memory, embedding: number[]) => {
        memories.set(m.id, m);
        await search.index(m);
        await vectors.upsert(m.id, embedding, meta(m));
      };
      const relate = (id: string, from: string, to: string) =>
        graph.createRelation({ id, fromMemoryId: from, toMemoryId: to, type: "related_to", createdAt: new Date("2026-05-01T00:00:00Z") });
      const first = TENANTS.flatMap((tenant, ti) => [0, 1, 2, 3].map((i) => ({
        memory: makeMemory({ id: `${tenant}.m${i}`, tenantId: tenant, content: `${tenant} harbour ledger note ${i}` }),
        embedding: [1, ti, i, 0.5],
      })));
      for (const { memory } of first) memories.set(memory.id, memory);
      await search.indexMany(first.map((x) => x.memory));
      await vectors.upsertMany(first.map((x) => ({ id: x.memory.id, embedding: x.embedding, metadata: meta(x.memory) })), { calibrate: false });
      for (const tenant of TENANTS) {
        for (let i = 0; i < 3; i++) await relate(`${tenant}.r${i}`, `${tenant}.m${i}`, `${tenant}.m${i + 1}`);
      }
      const repository = `r-${indexPrefix}`;
      const snap = { a: await tenantDocs(url, engine, indexPrefix, "t-a"), b: await tenantDocs(url, engine, indexPrefix, "t-b") };
      assert.deepEqual(KINDS.map((k) => Object.keys(snap.a[k]!).length), [4, 4, 3]);
      assert.deepEqual(snap.a.vectors!["t-a.m2"]!.embedding, [1, 0, 2, 0.5]);
      try {
        const info = await createSnapshot(options, { repository, snapshot: "s1", location: `${repoDir}/${repository}` });
        assert.deepEqual([info.state, info.shards.failed, info.indices],
          ["SUCCESS", 0, KINDS.map((k) => `${indexPrefix}-memorie-${k}-v${k === "relations" ? 2 : 1}`).sort()]);

        // After the snapshot, each tenant: one memory added (with its vector and a relation to it), one deleted (its
        // vector and relation too), one rewritten with a new vector.
        for (const [ti, tenant] of TENANTS.entries()) {
          await put(makeMemory({ id: `${tenant}.m9`, tenantId: tenant, content: `${tenant} zebrafinch later` }), [0, 1, ti, 1]);
          await relate(`${tenant}.r9`, `${tenant}.m0`, `${tenant}.m9`);
          await search.delete(`${tenant}.m3`);
          await vectors.delete(`${tenant}.m3`);
          await graph.deleteRelation(`${tenant}.r2`);
          await put(makeMemory({ id: `${tenant}.m1`, tenantId: tenant, content: `${tenant} rewritten kestrel` }), [2, 2, 2, 2]);
        }
        const laterB = await tenantDocs(url, engine, indexPrefix, "t-b");
        assert.notDeepEqual(laterB, snap.b);
        assert.notDeepEqual(await tenantDocs(url, engine, indexPrefix, "t-a"), snap.a);

        // Refused before anything changes: a tenant the snapshot does not hold, a snapshot that does not exist.
        await rejectsWithCode(() => restoreTenant(options, { repository, snapshot: "s1", tenantId: "t-z" }), "RESTORE_ERROR",
          /holds no document of tenant t-z.*Nothing was changed/);
        await rejectsWithCode(() => restoreTenant(options, { repository, snapshot: "nope", tenantId: "t-a" }), "RESTORE_ERROR",
          /holds no snapshot nope/);
        await rejectsWithCode(() => restoreTenant(options, { repository, snapshot: "s1", tenantId: "" }), "RESTORE_ERROR",
          /tenantId must be a non-empty string/);
        assert.deepEqual(await tempIndices(url), []);

        const result = await restoreTenant(options, { repository, snapshot: "s1", tenantId: "t-a" });
        assert.deepEqual(result.kinds, {
          memories: { from: `${indexPrefix}-memorie-memories-v1`, restored: 4, before: 4, removed: 1 },
          vectors: { from: `${indexPrefix}-memorie-vectors-v1`, restored: 4, before: 4, removed: 1 },
          relations: { from: `${indexPrefix}-memorie-relations-v2`, restored: 3, before: 3, removed: 1 },
        });
        assert.deepEqual(result.skipped, []);
        assert.deepEqual(await tenantDocs(url, engine, indexPrefix, "t-a"), snap.a);
        assert.deepEqual(await tenantDocs(url, engine, indexPrefix, "t-b"), laterB);
        assert.deepEqual(await tempIndices(url), []);

        // Through the stores: the deleted memory is found again, the later and rewritten texts are gone for t-a only,
        // and the restored vector is the nearest neighbour of itself.
        const hits = async (tenantId: string, query: string) =>
          (await search.search({ tenantId, query, limit: 10 })).map((h) => h.memory.id).sort();
        assert.deepEqual(await hits("t-a", "harbour ledger"), ["t-a.m0", "t-a.m1", "t-a.m2", "t-a.m3"]);
        assert.deepEqual(await hits("t-a", "zebrafinch"), []);
        assert.deepEqual(await hits("t-b", "zebrafinch"), ["t-b.m9"]);
        assert.deepEqual(await hits("t-b", "kestrel"), ["t-b.m1"]);
        const near = await vectors.search([1, 0, 3, 0.5], { topK: 1 });
        assert.deepEqual(near.map((h) => [h.id, Math.round(h.score * 1e4) / 1e4]), [["t-a.m3", 1]]);
        assert.ok(result.seconds > 0 && result.seconds < 60, `seconds ${result.seconds}`);
      } finally {
        await http(url, "DELETE", `/_snapshot/${repository}/s1`);
        await http(url, "DELETE", `/_snapshot/${repository}`);
      }
    });
  });
}
