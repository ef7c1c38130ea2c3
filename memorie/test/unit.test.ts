// Pure functions and the retry logic, without a server: request bodies, score formulas, metadata terms, redaction,
// retry/backoff decisions (a scripted sender stands in for the node; real-node behaviour is in the other files).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { checkAnswer, ClusterGuard, compareUuid, identityRequest } from "../src/cluster.js";
import {
  backoffDelay,
  Connection,
  engineFromNode,
  isRetryableStatus,
  policiesOf,
  type RequestParams,
  validateOptions,
} from "../src/connection.js";
import type { SendParams } from "../src/transport.js";
import {
  canonicalJson,
  forgetQuery,
  InvalidQuery,
  keywordScore,
  knnBody as knnClause,
  layoutMismatches,
  layoutSettings,
  matchingIdsBody,
  metadataTerms,
  neighbourBody as neighbourClause,
  num_candidates,
  relationDoc,
  renderIndex,
  searchBody as searchClause,
  vectorDoc,
  vectorFilter,
  vectorMapping,
  vectorScore,
} from "../src/dialect.js";
import { GraphStoreError, redact, SearchError, serverReason } from "../src/errors.js";
import { checkForgetOptions } from "../src/forget.js";
import { CLUSTER_CHECK, HNSW, knnCandidates, RETRY } from "../src/settings.js";

// The builders type their bodies as `Clause` (JSON of the engine's); these tests read into them.
const knnBody = (...a: Parameters<typeof knnClause>): any => knnClause(...a);
const neighbourBody = (...a: Parameters<typeof neighbourClause>): any => neighbourClause(...a);
const searchBody = (...a: Parameters<typeof searchClause>): { body: any; withText: boolean } => searchClause(...a);

// The golden file the Python suite checks too (tests/unit/test_engine_settings.py); this file runs from dist/test.
const GOLDEN = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "unit", "golden", "engine_settings.json"), "utf8"),
);

describe("engine settings shared with the Python side (tests/unit/golden/engine_settings.json)", () => {
  it("HNSW defaults", () => {
    assert.deepEqual({ m: HNSW.m, ef_construction: HNSW.efConstruction }, GOLDEN.hnsw);
  });
  it("the vector mapping of each engine", () => {
    for (const engine of ["opensearch", "elasticsearch"] as const) {
      assert.deepEqual(vectorMapping(engine, 3, HNSW), GOLDEN.vector_mapping_dims_3[engine], engine);
      const body = renderIndex("vectors", engine, "p-memorie-vectors", { dims: 3, hnsw: HNSW });
      assert.deepEqual(body.mappings.properties.embedding, GOLDEN.vector_mapping_dims_3[engine], engine);
    }
  });
  it("k-NN candidates", () => {
    for (const [k, expected] of GOLDEN.knn_candidates as [number, number][]) {
      assert.equal(num_candidates(k), expected, `k ${k}`);
      assert.equal(knnBody("elasticsearch", [1, 0], k, undefined).knn.num_candidates, expected, `k ${k}`);
    }
  });
  it("retried statuses", () => {
    for (const [status, retried] of GOLDEN.retryable_statuses as [number, boolean][]) {
      assert.equal(isRetryableStatus(status), retried, `status ${status}`);
    }
  });
  it("the retry policies and the backoff", () => {
    for (const kind of ["request", "bulk"] as const) {
      const p = RETRY[kind];
      const got = { tries: p.retries + 1, base_s: p.baseMs / 1000, max_s: p.capMs / 1000, deadline_s: p.callTimeoutMs / 1000, try_timeout_s: p.requestTimeoutMs / 1000 };
      assert.deepEqual(got, GOLDEN.retry_policies[kind], kind);
    }
    for (const [kind, retry, rand, delay] of GOLDEN.backoff_delays as ["request" | "bulk", number, number, number][]) {
      const got = backoffDelay(retry, RETRY[kind], () => rand);
      assert.ok(Math.abs(got - delay * 1000) < 1e-6, `${kind} ${retry} ${rand}: ${got}`);
    }
    assert.equal(CLUSTER_CHECK.idleMs, GOLDEN.cluster_check_idle_s * 1000);
  });
  it("what a cluster check's error status means", () => {
    for (const [status, meaning] of GOLDEN.cluster_check_answers as [number, string][]) {
      assert.equal(checkAnswer(status), meaning, `status ${status}`);
    }
  });
  it("what a cluster check's UUID means (_na_: not formed yet)", () => {
    for (const [recorded, answered, verdict] of GOLDEN.cluster_check_uuids as [string, string, string][]) {
      assert.equal(compareUuid(recorded, answered), verdict, `${recorded} then ${answered}`);
    }
  });
  it("the bulk try timeout, from the request try timeout in force", () => {
    for (const [request, bulk] of GOLDEN.bulk_try_timeouts as [number, number][]) {
      const p = policiesOf({ url: "http://127.0.0.1:9200", indexPrefix: "p", requestTimeoutMs: request * 1000 });
      assert.deepEqual([p.limits.requestTimeoutMs, p.bulk.requestTimeoutMs], [request * 1000, bulk * 1000], `request ${request} s`);
    }
  });
  it("the index-prefix rule", () => {
    const cases = [
      ...(GOLDEN.index_prefixes as [string, boolean][]),
      ...(GOLDEN.index_prefix_lengths as [number, boolean][]).map(([n, ok]) => ["p".repeat(n), ok] as [string, boolean]),
    ];
    for (const [prefix, valid] of cases) {
      const check = () => validateOptions({ url: "http://127.0.0.1:9200", indexPrefix: prefix }, SearchError);
      if (valid) assert.doesNotThrow(check, JSON.stringify(prefix));
      else assert.throws(check, /is not a valid index name prefix: use 1-200 characters/, JSON.stringify(prefix));
    }
  });
});

describe("search bodies", () => {
  it("text: every word required with match/and, never query_string; scope and filters as filter clauses", () => {
    const { body, withText } = searchBody({
      tenantId: "t",
      namespace: "n",
      query: "a OR b*",
      filters: { type: ["fact"], state: "active", importance: { gte: 0.5, eq: 0.7 }, metadata: { k: 5, gone: undefined } },
    });
    assert.equal(withText, true);
    assert.deepEqual(body.query.bool.must, [{ match: { content: { query: "a OR b*", operator: "and" } } }]);
    assert.ok(!JSON.stringify(body).includes("query_string"));
    assert.deepEqual(body.query.bool.filter, [
      { term: { tenant_id: "t" } },
      { term: { namespace: "n" } },
      { terms: { type: ["fact"] } },
      { terms: { state: ["active"] } },
      { term: { importance: 0.7 } },
      { range: { importance: { gte: 0.5 } } },
      { term: { meta_kv: "k\u001f5" } },
    ]);
    assert.deepEqual(body.query.bool.must_not, [{ term: { meta_keys: "gone" } }]);
    assert.equal(body.size, 20);
    assert.equal(body.from, 0);
  });

  it("no text: filters only, newest updatedAt first", () => {
    const { body, withText } = searchBody({ subjectId: "s", limit: 5, offset: 10 });
    assert.equal(withText, false);
    assert.equal(body.query.bool.must, undefined);
    assert.deepEqual(body.sort[0], { updated_at: { order: "desc", missing: "_last" } });
    assert.equal(body.size, 5);
    assert.equal(body.from, 10);
  });

  it("rejects blank queries, bad limits, bad ranges, windows past 10,000", () => {
    assert.throws(() => searchBody({ query: " \t" }), InvalidQuery);
    assert.throws(() => searchBody({ limit: -1 }), /limit/);
    assert.throws(() => searchBody({ limit: 1.5 }), /limit/);
    assert.throws(() => searchBody({ offset: 9990, limit: 20 }), /10000/);
    assert.throws(() => searchBody({ filters: { importance: { gt: Number.NaN } } }), /importance.gt/);
    assert.throws(() => searchBody({ filters: { createdAt: { gt: "2020" as unknown as Date } } }), /createdAt.gt/);
  });
});

describe("scores", () => {
  it("keyword: s / (s + 1)", () => {
    assert.equal(keywordScore(0), 0);
    assert.equal(keywordScore(1), 0.5);
    assert.equal(keywordScore(3), 0.75);
    assert.equal(keywordScore(-2), 0);
  });
  it("vector: the engine's (1 + cos) / 2, clamped into [0, 1]", () => {
    assert.equal(vectorScore(0.8535534), 0.8535534);
    assert.equal(vectorScore(1.0000001), 1);
    assert.equal(vectorScore(-1e-7), 0);
  });
});

describe("metadata terms", () => {
  it("are typed and key-order independent", () => {
    assert.notDeepEqual(metadataTerms({ n: 5 }).meta_kv, metadataTerms({ n: "5" }).meta_kv);
    assert.equal(canonicalJson({ b: 1, a: [1, { d: 2, c: 3 }] }), '{"a":[1,{"c":3,"d":2}],"b":1}');
    assert.deepEqual(metadataTerms({ a: 1, skip: undefined }), { meta_keys: ["a"], meta_kv: ["a\u001f1"] });
  });
});

describe("vector bodies", () => {
  it("OpenSearch: lucene HNSW cosinesimil; the filter inside the knn clause", () => {
    assert.deepEqual(vectorMapping("opensearch", 3), {
      type: "knn_vector",
      dimension: 3,
      method: { name: "hnsw", engine: "lucene", space_type: "cosinesimil", parameters: { m: 32, ef_construction: 150 } },
    });
    const filter = vectorFilter({ tenantId: "a" });
    const body = knnBody("opensearch", [1, 0], 5, filter);
    // lucene's k is the candidate count per segment (knnCandidates); size cuts to the 5 asked for
    assert.deepEqual(body.query.bool.should[0].knn.embedding, { vector: [1, 0], k: knnCandidates(5), filter });
    assert.equal(body.size, 5);
    assert.equal(knnBody("opensearch", [1, 0], 5000, undefined).query.bool.should[0].knn.embedding.k, knnCandidates(5000));
  });
  it("Elasticsearch: float dense_vector with explicit hnsw index_options; the filter inside knn", () => {
    const mapping = vectorMapping("elasticsearch", 3) as { index_options: unknown; similarity: string };
    assert.deepEqual(mapping.index_options, { type: "hnsw", m: 32, ef_construction: 150 });
    assert.equal(mapping.similarity, "cosine");
    const filter = vectorFilter(undefined, { tenantId: "a" });
    const body = knnBody("elasticsearch", [1, 0], 7, filter);
    assert.deepEqual(body.knn, { field: "embedding", query_vector: [1, 0], k: 7, num_candidates: knnCandidates(7), filter });
  });
  it("zero vectors are stored flagged, without a vector; a zero query is a constant 0.5", () => {
    assert.deepEqual(vectorDoc("z", [0, 0]), { id: "z", zero: true, has_meta: false, meta_keys: [], meta_kv: [], metadata: null });
    assert.equal(knnBody("opensearch", [0, 0], 3, undefined).query.constant_score.boost, 0.5);
  });
  it("an index body carries its alias and _meta", () => {
    const body = renderIndex("vectors", "opensearch", "p-memorie-vectors", { dims: 4 });
    assert.deepEqual(body.aliases, { "p-memorie-vectors": {} });
    assert.deepEqual(body.mappings._meta, { reme_es: { kind: "memorie-vectors", template_version: 1, dims: 4, hnsw: { m: 32, ef_construction: 150 } } });
    assert.equal(body.settings.index.knn, true);
    assert.equal(renderIndex("vectors", "elasticsearch", "a", { dims: 4 }).settings.index.knn, undefined);
  });
  it("graph neighbours: direction picks the side, a missing weight passes minWeight <= 0", () => {
    const out = neighbourBody(["a"], "outgoing", 10);
    assert.deepEqual(out.query.bool.filter[0].bool.should, [{ terms: { from_id: ["a"] } }]);
    const both = neighbourBody(["a"], "both", 10, ["supports"], 0);
    assert.equal(both.query.bool.filter[0].bool.should.length, 2);
    assert.deepEqual(both.query.bool.filter[1], { terms: { type: ["supports"] } });
    assert.ok(JSON.stringify(both.query.bool.filter[2]).includes('"exists"'));
    assert.deepEqual(neighbourBody(["a"], "incoming", 10, undefined, 0.5).query.bool.filter[1], { range: { weight: { gte: 0.5 } } });
  });
});

describe("errors", () => {
  it("redact removes URL user-info and secrets", () => {
    assert.equal(redact("GET http://bob:pw@host:9200/x failed: pw", ["pw"]), "GET http://***@host:9200/x failed: ***");
  });
  it("serverReason reads type and reason", () => {
    assert.equal(
      serverReason({ error: { type: "mapper_parsing_exception", reason: "bad", caused_by: { type: "x", reason: "y" } } }),
      "mapper_parsing_exception: bad (caused by x: y)",
    );
  });
  it("engine detection uses X-elastic-product", () => {
    for (const [node, engine] of GOLDEN.engine_detection as [Record<string, unknown>, string][]) {
      assert.equal(engineFromNode(node), engine, JSON.stringify(node));
    }
  });
});

function scripted(answers: (Error | { status: number; body?: unknown })[]) {
  const seen: RequestParams[] = [];
  const delays: number[] = [];
  const send = async (p: RequestParams) => {
    seen.push(p);
    const a = answers.shift();
    if (!a) throw new Error("no more scripted answers");
    if (a instanceof Error) throw a;
    return { status: a.status, body: a.body };
  };
  const conn = new Connection({
    engine: "opensearch", version: "2.19.1", refresh: "true", send, errorClass: SearchError, secrets: ["s3cret"],
    retry: { retries: 3, baseMs: 100, capMs: 1000 }, sleep: async (ms) => void delays.push(ms),
  });
  return { conn, seen, delays };
}

describe("retries", () => {
  it("429 and 5xx are retried with growing backoff; 4xx are not", async () => {
    const { conn, seen, delays } = scripted([{ status: 429 }, { status: 503 }, { status: 200, body: { ok: 1 } }]);
    assert.deepEqual((await conn.request({ method: "GET", path: "/", what: "x" })).body, { ok: 1 });
    assert.equal(seen.length, 3);
    assert.ok(delays[0]! >= 50 && delays[0]! < 150 && delays[1]! >= 100 && delays[1]! < 300, String(delays));
    const bad = scripted([{ status: 400, body: { error: { type: "parse_exception", reason: "nope" } } }]);
    await assert.rejects(bad.conn.request({ method: "GET", path: "/", what: "x" }), (e: SearchError) => {
      assert.equal(e.code, "SEARCH_ERROR");
      assert.equal(e.status, 400);
      assert.equal(e.reason, "parse_exception: nope");
      return true;
    });
    assert.equal(bad.seen.length, 1);
  });

  it("gives up after the retries, with the last status; connection errors are retried and redacted", async () => {
    const { conn, seen } = scripted([{ status: 502 }, { status: 502 }, { status: 502 }, { status: 502 }]);
    await assert.rejects(conn.request({ method: "GET", path: "/", what: "x" }), (e: SearchError) => e.status === 502);
    assert.equal(seen.length, 4);
    const down = scripted([new Error("connect ECONNREFUSED http://u:s3cret@h"), { status: 200, body: {} }]);
    await down.conn.request({ method: "GET", path: "/", what: "x" });
    assert.equal(down.seen.length, 2);
    const dead = scripted(Array.from({ length: 4 }, () => new Error("connect ECONNREFUSED http://u:s3cret@h")));
    await assert.rejects(dead.conn.request({ method: "GET", path: "/", what: "x" }), (e: Error) => !e.message.includes("s3cret"));
  });

  it("bulk resends only the items that failed with 429/5xx and reports every final failure", async () => {
    const item = (status: number) => ({ index: { status, error: status >= 300 ? { type: `t${status}`, reason: "r" } : undefined } });
    const { conn, seen } = scripted([
      { status: 200, body: { items: [item(201), item(429), item(400), item(503)] } },
      { status: 200, body: { items: [item(200), item(200)] } },
    ]);
    const ops = ["a", "b", "c", "d"].map((id) => ({ action: "index" as const, id, doc: { id } }));
    const failures = await conn.bulk("i", ops, "load");
    assert.deepEqual(failures, [{ id: "c", action: "index", status: 400, reason: "t400: r" }]);
    assert.throws(() => conn.throwBulkFailures("load", failures, 4), (e: SearchError) => {
      assert.deepEqual(e.details?.failures, failures);
      assert.match(e.message, /1 of 4 items failed/);
      return true;
    });
    assert.equal(seen.length, 2);
    const second = String(seen[1]!.body).trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(second.filter((l) => l.index).map((l) => l.index._id), ["b", "d"]);
  });

  it("backoff is capped and jittered", () => {
    const policy = { retries: 9, baseMs: 100, capMs: 1000 };
    assert.equal(backoffDelay(0, policy, () => 0), 50);
    assert.ok(Math.abs(backoffDelay(10, policy, () => 0.999999) - 1499.999) < 1e-6);
    assert.equal(isRetryableStatus(429), true);
    assert.equal(isRetryableStatus(500), true);
    assert.equal(isRetryableStatus(501), false);
    assert.equal(isRetryableStatus(409), false);
  });
});

describe("messages", () => {
  it("an invalid Date in a range filter is called that, not null", () => {
    assert.throws(
      () => searchBody({ filters: { createdAt: { gte: new Date("nope") } } }),
      (e: Error) => e.message === "filters.createdAt.gte must be a valid Date, not an invalid Date (new Date() of an unparseable value)",
    );
    assert.throws(() => searchBody({ filters: { importance: { lt: Number.NaN } } }), /importance.lt must be a finite number, not NaN/);
  });

  it("redact masks Authorization values a server echoes (Basic, ApiKey, Bearer)", () => {
    const basic = Buffer.from("alice:pw-Secret").toString("base64");
    assert.equal(
      redact(`security_exception: unable to authenticate with [Basic ${basic}] or ApiKey aWQ6a2V5, bearer abc.def-ghi`, []),
      "security_exception: unable to authenticate with [Basic ***] or ApiKey ***, bearer ***",
    );
  });
});

describe("time limits", () => {
  it("a call gives up at callTimeoutMs, each try's timeout cut to the time left", async () => {
    let clock = 0;
    const timeouts: number[] = [];
    const send = async (p: SendParams) => {
      timeouts.push(p.timeoutMs);
      clock += p.timeoutMs; // a node that never answers: each try runs into its timeout
      throw Object.assign(new Error("Request timed out"), { name: "TimeoutError" });
    };
    const conn = new Connection({
      engine: "opensearch", version: "2.19.1", refresh: "true", send, errorClass: SearchError, secrets: [],
      retry: { retries: 50, baseMs: 10, capMs: 10 }, limits: { requestTimeoutMs: 120, callTimeoutMs: 300 },
      sleep: async (ms) => void (clock += ms), now: () => clock,
    });
    await assert.rejects(conn.request({ method: "GET", path: "/", what: "ping" }), (e: SearchError) => {
      assert.match(e.message, /^ping failed: no success within 300 ms \(callTimeoutMs\) after 3 attempt\(s\); last: TimeoutError/);
      return true;
    });
    assert.ok(clock <= 300, `gave up after ${clock} ms`);
    assert.equal(timeouts.length, 3);
    assert.deepEqual(timeouts.slice(0, 2), [120, 120]);
    assert.ok(timeouts[2]! < 120 && timeouts[2]! > 0, `last try limited to the time left: ${timeouts}`);
  });
});

describe("cluster check", () => {
  function guarded(uuids: string[], intervalMs: number) {
    const sent: string[] = [];
    let clock = 0;
    const failNext = { value: false };
    const send = async (p: SendParams) => {
      sent.push(p.path);
      if (failNext.value) {
        failNext.value = false;
        throw Object.assign(new Error("socket hang up"), { name: "ConnectionError" });
      }
      if (p.path.startsWith("/_cluster/state")) return { status: 200, body: { metadata: { cluster_uuid: uuids.shift() } } };
      return { status: 201, body: {} };
    };
    const guard = new ClusterGuard("A", intervalMs, () => clock);
    const conn = new Connection({
      engine: "opensearch", version: "2.19.1", refresh: "true", send, errorClass: SearchError, secrets: [],
      retry: { retries: 3, baseMs: 1, capMs: 1 }, urls: ["http://127.0.0.1:9200"],
      cluster: { guard, identity: identityRequest("p", "opensearch") }, sleep: async () => {},
    });
    return { conn, sent, failNext, tick: (ms: number) => void (clock += ms) };
  }
  const write = { method: "PUT" as const, path: "/p-memorie-memories/_doc/1", what: "index memory 1" };

  it("costs no request while the interval lasts, one after it, one after a connection failure", async () => {
    const { conn, sent, failNext, tick } = guarded(["A", "A"], 1000);
    for (let i = 0; i < 5; i++) await conn.request(write);
    assert.deepEqual(sent, Array(5).fill(write.path));
    tick(1000);
    sent.length = 0;
    await conn.request(write);
    await conn.request(write);
    assert.deepEqual(sent, ["/_cluster/state/metadata/p-memorie-*", write.path, write.path]);
    sent.length = 0;
    failNext.value = true;
    await conn.request(write);
    assert.deepEqual(sent, [write.path, "/_cluster/state/metadata/p-memorie-*", write.path]);
  });

  it("reads the UUID from the store's own indices' metadata; `local` only where it is not deprecated", () => {
    const query = { filter_path: "metadata.cluster_uuid" };
    assert.deepEqual(identityRequest("p", "opensearch"), { path: "/_cluster/state/metadata/p-memorie-*", query: { ...query, local: "true" } });
    assert.deepEqual(identityRequest("p", "elasticsearch"), { path: "/_cluster/state/metadata/p-memorie-*", query });
  });

  it("another cluster's UUID stops the request before it is sent", async () => {
    const { conn, sent, tick } = guarded(["B"], 1000);
    tick(1000);
    await assert.rejects(conn.request(write), (e: SearchError) => {
      assert.match(e.message, /^http:\/\/127.0.0.1:9200 now reaches cluster B, not cluster A where this store was opened/);
      assert.deepEqual(e.details, { openedClusterUuid: "A", answeringClusterUuid: "B" });
      return true;
    });
    assert.deepEqual(sent, ["/_cluster/state/metadata/p-memorie-*"]);
  });
});

describe("shards and replicas", () => {
  it("the templates expand replicas 0-1 and keep one shard; given values replace that", () => {
    for (const kind of ["memories", "vectors", "relations"] as const) {
      const index = renderIndex(kind, "opensearch", "a", { dims: 2 }).settings.index;
      assert.equal(index.auto_expand_replicas, "0-1", kind);
      assert.equal(index.number_of_replicas, undefined, kind);
      assert.equal(index.number_of_shards, 1, kind);
      assert.deepEqual(index.merge, { policy: { expunge_deletes_allowed: 0 } }, kind);
      const set = renderIndex(kind, "elasticsearch", "a", { dims: 2, replicas: 2, shards: 3 }).settings.index;
      assert.deepEqual([set.number_of_replicas, set.auto_expand_replicas, set.number_of_shards], [2, false, 3], kind);
    }
    assert.deepEqual(layoutSettings({}), {});
    assert.deepEqual(layoutSettings({ replicas: 0 }), { number_of_replicas: 0, auto_expand_replicas: false });
  });
  it("an existing index is compared with what was asked (the node reports strings)", () => {
    const auto = { number_of_shards: "1", number_of_replicas: "0", auto_expand_replicas: "0-1" };
    assert.deepEqual(layoutMismatches({}, auto), []);
    assert.deepEqual(layoutMismatches({ shards: 1 }, auto), []);
    assert.deepEqual(layoutMismatches({ shards: 2 }, auto), ["shards is 2 but the index has 1"]);
    assert.deepEqual(layoutMismatches({ replicas: 0 }, auto),
      ["replicas is 0 but the index expands its replicas automatically (auto_expand_replicas 0-1)"]);
    const fixed = { number_of_shards: "2", number_of_replicas: "1", auto_expand_replicas: "false" };
    assert.deepEqual(layoutMismatches({ replicas: 1, shards: 2 }, fixed), []);
    assert.deepEqual(layoutMismatches({ replicas: 1 }, { number_of_shards: "2", number_of_replicas: "1" }), []);
    assert.deepEqual(layoutMismatches({ replicas: 2 }, fixed), ["replicas is 2 but the index has 1"]);
  });
  it("bad values are refused naming the option", () => {
    const base = { url: "http://127.0.0.1:9200", indexPrefix: "p" };
    for (const [key, value] of [["replicas", -1], ["replicas", 0.5], ["replicas", "2"], ["replicas", 1025], ["shards", 0], ["shards", Infinity]]) {
      assert.throws(() => validateOptions({ ...base, [key as string]: value } as any, SearchError),
        new RegExp(`\`${key}\` must be a whole number from ${key === "shards" ? 1 : 0} to 1024`));
    }
    validateOptions({ ...base, replicas: 0, shards: 1 }, SearchError);
  });
});

describe("forget bodies", () => {
  it("memories: the scope fields; vectors: the metadata keys the engine writes", () => {
    assert.deepEqual(forgetQuery("memories", { tenantId: "t" }), { bool: { filter: [{ term: { tenant_id: "t" } }] } });
    assert.deepEqual(forgetQuery("memories", { tenantId: "t", namespace: "n", subjectId: "s" }), {
      bool: { filter: [{ term: { tenant_id: "t" } }, { term: { namespace: "n" } }, { term: { subject_id: "s" } }] },
    });
    assert.deepEqual(forgetQuery("vectors", { tenantId: "t", subjectId: "s" }), {
      bool: { filter: [{ term: { meta_kv: 'tenantId\u001f"t"' } }, { term: { meta_kv: 'subjectId\u001f"s"' } }] },
    });
  });
  it("relations: either end in the scope, all given keys on the same end", () => {
    assert.deepEqual(forgetQuery("relations", { tenantId: "t", namespace: "n" }), {
      bool: {
        should: [
          { bool: { filter: [{ term: { from_tenant_id: "t" } }, { term: { from_namespace: "n" } }] } },
          { bool: { filter: [{ term: { to_tenant_id: "t" } }, { term: { to_namespace: "n" } }] } },
        ],
        minimum_should_match: 1,
      },
    });
  });
  it("a relation keeps the scope of both its memories", () => {
    const r = { id: "r", fromMemoryId: "a", toMemoryId: "b", type: "supports", createdAt: new Date(0) };
    const doc = relationDoc(r, { from: { tenantId: "t", namespace: "n", subjectId: "s" }, to: null });
    assert.deepEqual([doc.from_tenant_id, doc.from_namespace, doc.from_subject_id], ["t", "n", "s"]);
    assert.deepEqual([doc.to_tenant_id, doc.to_namespace, doc.to_subject_id], [null, null, null]);
  });
  it("the scan pages by id after the last one, without counting hits", () => {
    assert.deepEqual(matchingIdsBody({ match_all: {} }, 100, "k"), {
      query: { match_all: {} }, sort: [{ id: "asc" }], size: 100, _source: false, track_total_hits: false, search_after: ["k"],
    });
  });
  it("an empty tenant is refused; forget never deletes across tenants", () => {
    for (const bad of [undefined, {}, { tenantId: "" }, { tenantId: " " }, { tenantId: 1 }, { tenantId: null }]) {
      assert.throws(() => checkForgetOptions(bad as any, GraphStoreError), (e: any) =>
        e.code === "GRAPH_STORE_ERROR" && /tenantId must be a non-empty string.*never all of them.*drop\(\)/.test(e.message));
    }
    assert.throws(() => checkForgetOptions({ tenantId: "t", subjectId: "" }, SearchError), /subjectId must be/);
    assert.deepEqual(checkForgetOptions({ tenantId: "t", expunge: true }, SearchError), { tenantId: "t", expunge: true });
  });
});
