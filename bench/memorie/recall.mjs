#!/usr/bin/env node
// Recall and latency of the vector store's search strategies on one data shape, vectors only: load N memories'
// vectors (upsertMany), then send the same topK-50 queries with each strategy, alternating query by query, and
// report recall@10 against brute force (ties counted as hits) and p50/p95 ms. Strategies:
//   store          VectorStore.search as shipped (whatever rule the package applies)
//   knn:<C>        one HNSW search keeping C candidates per segment (OpenSearch `k`, Elasticsearch `num_candidates`)
//   ef:<C>         OpenSearch only: k 50 with `method_parameters.ef_search` C (the same search width, 50 results a segment)
//   exact          brute force on the node (OpenSearch: the k-NN plugin's `knn_score` script; Elasticsearch: a
//                  script_score with cosineSimilarity, needs painless)
//
//   node bench/memorie/recall.mjs --url http://127.0.0.1:9403 --shape zipf --size 100000 \
//     --strategies store,knn:250,knn:1000,exact [--queries 200] [--segments 1] [--keep]
// --segments N: force-merge to N segments before the queries (default: as the load left it).
// --reuse <prefix>: keep the index under this prefix and, when it already holds --size vectors, skip the load.
// --hnsw 32,200: build the index with HNSW m 32, ef_construction 200 (default: the package's).
import { loadavg } from "node:os";

import { createVectorStore } from "../../memorie/dist/src/index.js";
import { knnBody } from "../../memorie/dist/src/dialect.js";
import { BruteForceVectorStore } from "./baselines.mjs";
import { embedder, makeMemory, queryWords, rng } from "./data.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = args.url ?? process.env.REME_ES_MEMORIE_OPENSEARCH_URL ?? "http://127.0.0.1:9403";
const shape = args.shape ?? "zipf";
const size = Number(args.size ?? 10000);
const queries = Number(args.queries ?? 200);
const strategies = (args.strategies ?? "store,knn:250,knn:1000,exact").split(",");
const embed = embedder(args.set ?? "hash256");

const q = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const ms = () => performance.now();

async function post(path, body) {
  const init = body === undefined ? { method: "POST" } : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  const r = await fetch(url + path, init);
  const out = await r.json();
  if (!r.ok) throw new Error(`${path}: ${JSON.stringify(out).slice(0, 400)}`);
  return out;
}

function exactBody(engine, vector, k) {
  if (engine === "opensearch") {
    return {
      size: k, _source: false, track_total_hits: false,
      query: { script_score: { query: { exists: { field: "embedding" } }, script: {
        source: "knn_score", lang: "knn", params: { field: "embedding", query_value: vector, space_type: "cosinesimil" } } } },
    };
  }
  return {
    size: k, _source: false, track_total_hits: false,
    query: { script_score: { query: { exists: { field: "embedding" } }, script: {
      source: "(cosineSimilarity(params.v, 'embedding') + 1) / 2", params: { v: vector } } } },
  };
}

const hnsw = args.hnsw ? { m: Number(args.hnsw.split(",")[0]), efConstruction: Number(args.hnsw.split(",")[1]) } : undefined;
const prefix = args.reuse ?? `bench-recall-${process.pid}`;
const store = await createVectorStore({ url, indexPrefix: prefix, dimensions: embed.dims, hnsw });
const alias = `${prefix}-memorie-vectors`;
const brute = new BruteForceVectorStore();
try {
  const entries = [];
  for (let i = 0; i < size; i++) {
    const m = makeMemory(i, shape);
    entries.push({ id: m.id, embedding: embed(m.content), metadata: { tenantId: m.tenantId } });
  }
  for (const e of entries) await brute.upsert(e.id, e.embedding, e.metadata);
  let t = ms();
  const count = (await (await fetch(`${url}/${alias}/_count`)).json()).count;
  if (count !== size) await store.upsertMany(entries);
  await store.refresh();
  const loadS = (ms() - t) / 1000;
  if (args.segments) await post(`/${alias}/_forcemerge?max_num_segments=${args.segments}`);
  const segs = (await (await fetch(`${url}/_cat/segments/${alias}?format=json`)).json()).length;
  const r = rng(size + 11);
  const vq = Array.from({ length: queries + 10 }, () => embed(queryWords(makeMemory(Math.floor(r() * size), shape), 3, r)));
  const exact = [];
  for (const v of vq) exact.push(await brute.search(v, { topK: 50 }));
  const run = {
    store: (v) => store.search(v, { topK: 50 }).then((hits) => hits.map((h) => h.id)),
    ef: (v, c) => {
      const body = knnBody(store.engine, v, 50, undefined, 50);
      body.query.bool.should[0].knn.embedding.method_parameters = { ef_search: c };
      return post(`/${alias}/_search`, body).then((b) => b.hits.hits.map((h) => h._id));
    },
    knn: (v, c) => post(`/${alias}/_search`, knnBody(store.engine, v, 50, undefined, c)).then((b) => b.hits.hits.map((h) => h._id)),
    exact: (v) => post(`/${alias}/_search`, exactBody(store.engine, v, 50)).then((b) => b.hits.hits.map((h) => h._id)),
  };
  const fns = strategies.map((s) => {
    const [name, c] = s.split(":");
    return (i) => run[name](vq[i], Number(c));
  });
  const got = fns.map(() => []);
  const times = fns.map(() => []);
  for (let i = 0; i < vq.length; i++) {
    for (const j of i % 2 ? [...fns.keys()].reverse() : [...fns.keys()]) {
      t = ms();
      got[j][i] = await fns[j](i);
      if (i >= 10) times[j].push(ms() - t);
    }
  }
  console.log(`${store.engine} ${url}, ${shape} shape, ${size.toLocaleString("en")} vectors (${embed.dims}-d) in ${segs} ` +
    `segments, loaded in ${loadS.toFixed(1)} s${hnsw ? ` (HNSW m ${hnsw.m}, ef_construction ${hnsw.efConstruction})` : ""}; ${queries} topK-50 queries; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}\n`);
  console.log("| strategy | recall@10 | p50 ms | p95 ms |\n|---|--:|--:|--:|");
  for (const [j, s] of strategies.entries()) {
    let hit = 0;
    let total = 0;
    for (let i = 10; i < vq.length; i++) {
      const tenth = exact[i][Math.min(9, exact[i].length - 1)].score;
      hit += Math.min(10, got[j][i].slice(0, 10).filter((id) => brute.score(vq[i], id) >= tenth - 1e-6).length);
      total += Math.min(10, exact[i].length);
    }
    console.log(`| ${s} | ${(hit / total).toFixed(3)} | ${q(times[j], 0.5).toFixed(2)} | ${q(times[j], 0.95).toFixed(2)} |`);
  }
} finally {
  if (!args.keep && !args.reuse) await store.drop();
  await store.close();
}
