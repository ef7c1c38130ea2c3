#!/usr/bin/env node
// Memorie loaded the way a user loads it (issue 53, item 5), on each node given, per size, into fresh indices:
// - load: indexMany + upsertMany of the same part at once, parts of 2,000 one after another (`refresh: "false"`), then
//   refresh() on both stores; memories/s = size / (load + refresh). Short memories from a Zipf vocabulary (the `zipf`
//   shape of data.mjs), 256-d hash vectors (hash256). "first search": the first vector search at once after the load
//   (it calibrates the k-NN width once when due, issue 53), not counted in memories/s.
// - recall@10 of topK 50 (Memorie's depth for limit 10) after the load, no calibrate() call: 6-word queries drawn from
//   the vocabulary on their own (from outside the corpus), against brute force computed here (ties counted).
// - add: searchStore.index(m) then vectorStore.upsert (what engine.add() sends), one at a time, memories of both
//   shapes (zipf, topics) alternating, p50 of each; read-your-writes
//   misses of adds followed at once by a keyword and a vector search.
// - keyword: the store's search() against the same body (Memorie's, dialect.searchBody) sent bare (node:http, one
//   kept-alive socket) to the same node, alternating, p50 of each and their ratio (issue 53 target: <= 1.2x).
//
//   node bench/memorie/load.mjs --urls http://127.0.0.1:9403,http://127.0.0.1:9404 [--sizes 10000,100000]
//     [--queries 100] [--adds 200] [--part 2000] [--quick] [--out bench/results/memorie_load.json]
//   --quick: sizes 4000, 40 queries, 40 adds (a smoke of the chain, seconds)
// Quote timing figures from a quiet machine only; recall does not depend on the load of the machine.
import { mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import { loadavg } from "node:os";
import { dirname } from "node:path";

import { createSearchStore, createVectorStore } from "../../memorie/dist/src/index.js";
import { searchBody } from "../../memorie/dist/src/dialect.js";
import { embedder, makeMemory, queryWords, rng, zipfQuery } from "./data.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const quick = "quick" in args;
const urls = (args.urls ?? [process.env.REME_ES_MEMORIE_OPENSEARCH_URL, process.env.REME_ES_MEMORIE_ELASTICSEARCH_URL]
  .filter(Boolean).join(",")).split(",").filter(Boolean);
if (urls.length === 0) throw new Error("--urls: give one node URL or more (comma-separated), or set REME_ES_MEMORIE_OPENSEARCH_URL");
const sizes = (args.sizes ?? (quick ? "4000" : "10000,100000")).split(",").map(Number);
const queries = Number(args.queries ?? (quick ? 40 : 100));
const adds = Number(args.adds ?? (quick ? 40 : 200));
const part = Number(args.part ?? 2000);
const out = args.out ?? "bench/results/memorie_load.json";
const embed = embedder("hash256");
const ms = () => performance.now();
const p50 = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const scopeOf = (m) => ({ tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId });

/** The exact scores of `q` against every stored vector (Float32Array rows), and the 10th best. */
function exactTenth(rows, q) {
  const scores = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const v = rows[i];
    let s = 0;
    for (let d = 0; d < v.length; d++) s += v[d] * q[d];
    scores[i] = s;
  }
  const tenth = Float64Array.from(scores).sort().reverse()[9];
  return { scores, tenth };
}

function recallAt10(rows, qs, found) {
  let hit = 0;
  for (const [i, q] of qs.entries()) {
    const { scores, tenth } = exactTenth(rows, q);
    hit += found[i].slice(0, 10).filter((id) => scores[Number(id.slice(1))] >= tenth - 1e-6).length;
  }
  return hit / (10 * qs.length);
}

// The bare request: node:http on one kept-alive socket, the body JSON.stringify'd and the answer JSON.parse'd, nothing
// else (the cheapest client Node has; fetch spends more of the client's CPU per request than the store does).
const agents = new Map();
function bare(url, alias, body) {
  const u = new URL(url);
  if (!agents.has(url)) agents.set(url, new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const text = JSON.stringify(body);
  const headers = { "content-type": "application/json", "content-length": Buffer.byteLength(text) };
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: `/${alias}/_search`, method: "POST", agent: agents.get(url), headers }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const answer = JSON.parse(Buffer.concat(chunks).toString());
        if (res.statusCode !== 200) reject(new Error(`bare keyword search: HTTP ${res.statusCode} ${JSON.stringify(answer).slice(0, 300)}`));
        else resolve(answer.hits.hits);
      });
    });
    req.on("error", reject);
    req.end(text);
  });
}

async function loadParts(search, vectors, size) {
  let t = ms();
  for (let start = 0; start < size; start += part) {
    const batch = Array.from({ length: Math.min(part, size - start) }, (_, k) => makeMemory(start + k, "zipf"));
    const entries = batch.map((m) => ({ id: m.id, embedding: embed(m.content), metadata: scopeOf(m) }));
    await Promise.all([search.indexMany(batch, { refresh: "false" }), vectors.upsertMany(entries, { refresh: "false" })]);
  }
  const loadS = (ms() - t) / 1000;
  t = ms();
  await Promise.all([search.refresh(), vectors.refresh()]);
  return { loadS, refreshS: (ms() - t) / 1000 };
}

async function runOne(url, size) {
  const prefix = `bench-load-${process.pid}-${size}`;
  const search = await createSearchStore({ url, indexPrefix: prefix });
  const vectors = await createVectorStore({ url, indexPrefix: prefix, dimensions: embed.dims });
  const engine = search.engine;
  try {
    const { loadS, refreshS } = await loadParts(search, vectors, size);
    const counted = await fetch(`${url}/${prefix}-memorie-vectors,${prefix}-memorie-memories/_count`).then((r) => r.json());
    if (counted.count !== 2 * size) throw new Error(`after refresh() ${counted.count} documents are searchable, not ${2 * size}`);
    const r = rng(size + 53);
    const qs = Array.from({ length: queries }, () => embed(zipfQuery(r, 6)));
    let t = ms();
    const found = [(await vectors.search(qs[0], { topK: 50 })).map((h) => h.id)];
    const firstS = (ms() - t) / 1000;
    for (const q of qs.slice(1)) found.push((await vectors.search(q, { topK: 50 })).map((h) => h.id));
    const rows = [];
    for (let i = 0; i < size; i++) rows.push(Float32Array.from(embed(makeMemory(i, "zipf").content)));
    const recall = recallAt10(rows, qs, found);

    // add, then add followed at once by the engine's two searches (read-your-writes)
    const addMs = { zipf: [], topics: [] };
    let misses = 0;
    for (let i = 0; i < adds; i++) {
      const shape = i % 2 ? "topics" : "zipf"; // both shapes of data.mjs, alternating
      const m = makeMemory(size + i, shape);
      t = ms();
      await search.index(m);
      await vectors.upsert(m.id, embed(m.content), scopeOf(m));
      addMs[shape].push(ms() - t);
      if (i % 4 > 1) continue; // every other add of each shape is read at once
      const kh = await search.search({ tenantId: m.tenantId, namespace: m.namespace, query: queryWords(m, 3, r), limit: 10 });
      const vh = await vectors.search(embed(m.content), { topK: 50 });
      if (!kh.some((h) => h.memory.id === m.id) || !vh.some((h) => h.id === m.id)) misses++;
    }

    // keyword: the store against the same body sent bare, alternating (two words of a stored memory, its scope)
    const kq = Array.from({ length: queries + 10 }, () => {
      const m = makeMemory(Math.floor(r() * size), "zipf");
      return { tenantId: m.tenantId, namespace: m.namespace, query: queryWords(m, 2, r), limit: 10 };
    });
    const alias = search.info.alias;
    const kStore = [];
    const kBare = [];
    for (const [i, q] of kq.entries()) {
      const order = i % 2 ? ["bare", "store"] : ["store", "bare"];
      for (const which of order) {
        t = ms();
        if (which === "store") await search.search(q);
        else await bare(url, alias, searchBody(q).body);
        if (i >= 10) (which === "store" ? kStore : kBare).push(ms() - t);
      }
    }
    return {
      engine, url, size, part, loadS, refreshS, rate: size / (loadS + refreshS), firstSearchS: firstS, recall,
      calibration: vectors.calibration ? { width: vectors.calibration.width, recall: vectors.calibration.recall } : null,
      addP50: p50(addMs.zipf), addTopicsP50: p50(addMs.topics), rywMisses: misses, rywChecks: Array.from({ length: adds }, (_, i) => i % 4 < 2).filter(Boolean).length,
      keywordStoreP50: p50(kStore), keywordBareP50: p50(kBare), loadAvg: loadavg()[0],
    };
  } finally {
    await search.drop();
    await vectors.drop();
    await search.close();
    await vectors.close();
  }
}

const f = (x, d = 2) => (x >= 100 ? x.toFixed(0) : x.toFixed(d));
const HEADER =
  "| engine | memories | memories/s | load s + refresh s | first search s | recall@10 | width | add p50 ms zipf / topics | " +
  "RYW misses | keyword store / bare p50 ms | ratio | load avg |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|";
const line = (x) =>
  `| ${x.engine} | ${x.size.toLocaleString("en")} | ${Math.round(x.rate).toLocaleString("en")} | ${f(x.loadS, 1)} + ${f(x.refreshS, 1)} | ` +
  `${f(x.firstSearchS)} | ${x.recall.toFixed(3)} | ${x.calibration?.width ?? "rule"} | ${f(x.addP50)} / ${f(x.addTopicsP50)} | ${x.rywMisses} of ${x.rywChecks} | ` +
  `${f(x.keywordStoreP50)} / ${f(x.keywordBareP50)} | ${(x.keywordStoreP50 / x.keywordBareP50).toFixed(2)}x | ${x.loadAvg.toFixed(1)} |`;

console.log(`Memorie loaded as a user loads it: parts of ${part} (indexMany + upsertMany, refresh "false"), refresh(), ` +
  `search at once; zipf memories, hash256 vectors; ${queries} queries, ${adds} adds\n`);
console.log(HEADER);
const results = [];
for (const url of urls) {
  for (const size of sizes) {
    const x = await runOne(url, size);
    results.push(x);
    console.log(line(x));
  }
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify({ part, queries, adds, rows: results }, null, 1));
for (const a of agents.values()) a.destroy();
console.error(`wrote ${out}`);
