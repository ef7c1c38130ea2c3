#!/usr/bin/env node
// Latency of reme-es-memorie's SearchStore.search and VectorStore.search at 10k and 100k memories, against one
// node, with a raw-request baseline in the same run: the same request body POSTed with fetch (no adapter).
//
//   cd memorie && npm run build && cd ..
//   node bench/memorie/latency.mjs --url http://127.0.0.1:9250 [--sizes 10000,100000] [--dims 256] [--queries 200]
//
// Memories: 10 tenants x 5 namespaces, 12 words each from a 2,000-word vocabulary; vectors: seeded random unit
// vectors (dims 256, the size of Memorie's HashEmbeddingProvider). Keyword query: two words, scoped to a tenant
// and namespace, limit 10 (what engine.search passes). Vector query: topK 50, no filter (what the engine asks).
// Medians and 95th percentiles of wall time per call, after 20 warm-up rounds, one call at a time, adapter and
// raw request alternating so both see the same load.
import { createSearchStore, createVectorStore } from "../../memorie/dist/src/index.js";
import { knnBody, searchBody } from "../../memorie/dist/src/dialect.js";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = args.url ?? process.env.REME_ES_MEMORIE_OPENSEARCH_URL ?? "http://127.0.0.1:9250";
const sizes = (args.sizes ?? "10000,100000").split(",").map(Number);
const dims = Number(args.dims ?? 256);
const queries = Number(args.queries ?? 200);
const prefix = args.prefix ?? `bench-memorie-${process.pid}`;

let seed = 42;
const rand = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
const vocab = Array.from({ length: 2000 }, (_, i) => `w${i.toString(36)}x${(i * 7919).toString(36)}`);
const word = () => vocab[Math.floor(rand() ** 2 * vocab.length)];
function unit() {
  const v = Array.from({ length: dims }, () => rand() * 2 - 1);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}
function memory(i) {
  const now = new Date(Date.UTC(2026, 0, 1) + i * 1000);
  return {
    id: `m${i}`, tenantId: `t${i % 10}`, namespace: `ns${i % 5}`, subjectId: `s${i % 100}`, type: "fact",
    content: Array.from({ length: 12 }, word).join(" "), state: "active", importance: rand(), confidence: rand(),
    metadata: { source: "bench" }, createdAt: now, updatedAt: now, accessCount: 0, expiresAt: null, version: 1,
  };
}

const q = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
/** p50/p95 of two calls measured alternately (a, b, a, b, ...) so both see the same load; 20 warm-up rounds. */
async function timePair(a, b, n) {
  for (let i = 0; i < 20; i++) {
    await a(i);
    await b(i);
  }
  const ta = [];
  const tb = [];
  for (let i = 0; i < n; i++) {
    for (const [fn, out] of i % 2 ? [[b, tb], [a, ta]] : [[a, ta], [b, tb]]) {
      const t = process.hrtime.bigint();
      await fn(i);
      out.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  }
  return [{ p50: q(ta, 0.5), p95: q(ta, 0.95) }, { p50: q(tb, 0.5), p95: q(tb, 0.95) }];
}
async function raw(path, body) {
  const r = await fetch(url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const out = await r.json();
  if (!r.ok) throw new Error(JSON.stringify(out).slice(0, 300));
  return out;
}

const search = await createSearchStore({ url, indexPrefix: prefix, refresh: "false" });
const vectors = await createVectorStore({ url, indexPrefix: prefix, dimensions: dims, refresh: "false" });
const rows = [];
let loaded = 0;
try {
  for (const size of sizes) {
    const t0 = Date.now();
    const batch = [];
    for (let i = loaded; i < size; i++) batch.push(i);
    for (let i = 0; i < batch.length; i += 2000) {
      const part = batch.slice(i, i + 2000).map(memory);
      await search.indexMany(part, { refresh: "false" });
      await vectors.upsertMany(part.map((m) => ({ id: m.id, embedding: unit(), metadata: { tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId } })), { refresh: "false" });
    }
    await search.refresh();
    await vectors.refresh();
    loaded = size;
    const loadS = (Date.now() - t0) / 1000;
    const kq = Array.from({ length: queries + 20 }, (_, i) => ({ tenantId: `t${i % 10}`, namespace: `ns${i % 5}`, query: `${word()} ${word()}`, limit: 10 }));
    const vq = Array.from({ length: queries + 20 }, unit);
    const sAlias = search.info.alias;
    const vAlias = `${prefix}-memorie-vectors`;
    const [ks, kr] = await timePair(
      (i) => search.search(kq[i % kq.length]),
      (i) => raw(`/${sAlias}/_search`, searchBody(kq[i % kq.length]).body),
      queries,
    );
    const [vs, vr] = await timePair(
      (i) => vectors.search(vq[i % vq.length], { topK: 50 }),
      (i) => raw(`/${vAlias}/_search`, knnBody(search.engine, vq[i % vq.length], 50, undefined)),
      queries,
    );
    rows.push({ size, loadS, ks, kr, vs, vr });
    console.error(`loaded ${size} in ${loadS.toFixed(0)} s`);
  }
} finally {
  if (!args.keep) {
    await search.drop();
    await vectors.drop();
  }
  await search.close();
  await vectors.close();
}
const f = (x) => x.toFixed(1);
console.log(`${search.engine} at ${url}, ${dims}-d vectors, ${queries} queries each (ms, p50 / p95)\n`);
console.log("| memories | SearchStore.search | raw _search (same body) | VectorStore.search topK 50 | raw k-NN _search (same body) |");
console.log("|---:|---:|---:|---:|---:|");
for (const r of rows) {
  console.log(`| ${r.size.toLocaleString("en")} | ${f(r.ks.p50)} / ${f(r.ks.p95)} | ${f(r.kr.p50)} / ${f(r.kr.p95)} | ${f(r.vs.p50)} / ${f(r.vs.p95)} | ${f(r.vr.p50)} / ${f(r.vr.p95)} |`);
}
