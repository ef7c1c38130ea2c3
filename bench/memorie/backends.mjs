#!/usr/bin/env node
// reme-es-memorie side by side with the stores a Memorie user runs today, measured the way Memorie's engine calls
// them, in one run: our own FTS5 SearchStore (better-sqlite3, `porter unicode61`, bm25, every word required, scope
// and type/state filters in SQL) plus a brute-force in-process cosine VectorStore, against reme-es's SearchStore +
// VectorStore on one node. Baselines: bench/memorie/baselines.mjs.
//
//   ./run bench-memorie [--sizes 10000,100000] [--sets hash256,minilm384] [--shapes topics,zipf] [--adds 300] [--queries 200]
//   ./run bench-memorie --quick      (10k only, hash256 on both shapes, 100 queries and 100 adds)
//   (= cd memorie && npm ci && npm run build; cd bench && npm ci; start a node; this script; the plot)
//   node bench/memorie/backends.mjs --url http://127.0.0.1:9250 --out bench/results/memorie_backends.json
//
// Per size and embedding set:
// - add: engine.add() = searchStore.index(m) then vectorStore.upsert(id, vec, {tenantId, namespace, subjectId}),
//   one memory at a time, default options (reme-es: the deferred refresh); p50/p95 ms and adds/s. "add+search":
//   an add followed at once by the engine's two searches (the read that pays the deferred refresh).
// - bulk load of the size: one indexMany + one upsertMany (reme-es, both at once, default options) vs one SQLite transaction plus a
//   loop of in-memory upserts; "merge s": after the load, time until the node reports no merge running.
// - keyword: a two-word query of a stored memory, scoped to its tenant + namespace, limit 10; filters only: tenant +
//   namespace + type + state, limit 10; vector: topK 50 (max(limit x 5, 50) for limit 10), no filter, recall@10
//   against the exact top 10 (the brute-force store). Queries alternate between the backends, one at a time.
// - reopen: new store objects until the first keyword and vector answers (the in-memory store re-upserts all).
// Data shapes (bench/memorie/data.mjs): topics (12 words, topic-skewed) and zipf (6-18 words drawn from a Zipf
// distribution over 5,000 words: no topics, a few very common words; the shape on which HNSW recall is lowest).
// Embedding sets: hash256, a bag-of-words hash-trick embedder like Memorie's HashEmbeddingProvider; minilm384, 384-d
// vectors shaped like sentence-transformer output (a shared mean direction, topic clusters, word components), see
// bench/memorie/data.mjs. Not uniform random vectors: no user has those, and they are HNSW's worst case.
import { writeFileSync, mkdirSync, rmSync, mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { createSearchStore, createVectorStore } from "../../memorie/dist/src/index.js";
import { knnBody } from "../../memorie/dist/src/dialect.js";
import { BruteForceVectorStore, Fts5SearchStore } from "./baselines.mjs";
import { embedder, makeMemory as memoryOf, queryWords, rng, SHAPES } from "./data.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = args.url ?? process.env.REME_ES_MEMORIE_OPENSEARCH_URL ?? "http://127.0.0.1:9250";
const quick = "quick" in args;
const sizes = (args.sizes ?? (quick ? "10000" : "10000,100000")).split(",").map(Number);
const sets = (args.sets ?? (quick ? "hash256" : "hash256,minilm384")).split(",");
const shapes = (args.shapes ?? "topics,zipf").split(",");
for (const shape of shapes) if (!SHAPES.includes(shape)) throw new Error(`--shapes: unknown shape ${shape}: use ${SHAPES.join(",")}`);
const adds = Number(args.adds ?? (quick ? 100 : 300));
const queries = Number(args.queries ?? (quick ? 100 : 200));
const out = args.out ?? "bench/results/memorie_backends.json";
const label = args.label ?? "";
// --tune 50,100,200: also send the vector queries with these HNSW candidate counts (same body otherwise) and report
// recall@10 and p50 of each, to choose KNN in memorie/src/dialect.ts by measurement.
const tune = args.tune ? args.tune.split(",").map(Number) : [];
// --page 1000 --concurrency 2: indexMany/upsertMany options (default: the package's)
// --hnsw 32,200: create the vector index with HNSW m 32, ef_construction 200 (default: the package's)
const hnsw = args.hnsw ? { m: Number(args.hnsw.split(",")[0]), efConstruction: Number(args.hnsw.split(",")[1]) } : undefined;
const loadOptions = { pageSize: args.page ? Number(args.page) : undefined, concurrency: args.concurrency ? Number(args.concurrency) : undefined };

const q = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const stats = (xs) => ({ p50: q(xs, 0.5), p95: q(xs, 0.95), n: xs.length });
const ms = () => performance.now();

/** Time each function on the same inputs, alternating (a b, b a, ...) so all see the same machine load. */
async function alternate(fns, n, warm = 10) {
  for (let i = 0; i < warm; i++) for (const fn of fns) await fn(i);
  const times = fns.map(() => []);
  for (let i = 0; i < n; i++) {
    const order = i % 2 ? [...fns.keys()].reverse() : [...fns.keys()];
    for (const j of order) {
      const t = ms();
      await fns[j](i + warm);
      times[j].push(ms() - t);
    }
  }
  return times.map(stats);
}

async function nodeMerging(alias) {
  const r = await fetch(`${url}/${alias}/_stats/merge`);
  const body = await r.json();
  return body?._all?.primaries?.merges?.current ?? 0;
}

/** After a load: refresh, then wait until neither index has a merge running (polled every 250 ms). */
async function waitMerges(aliases) {
  const t = ms();
  for (const a of aliases) await fetch(`${url}/${a}/_refresh`, { method: "POST" });
  for (;;) {
    const running = (await Promise.all(aliases.map(nodeMerging))).reduce((x, y) => x + y, 0);
    if (running === 0) return (ms() - t) / 1000;
    await new Promise((r) => setTimeout(r, 250));
  }
}

function scopeOf(m) {
  return { tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId };
}

async function openEs(prefix, dims) {
  const search = await createSearchStore({ url, indexPrefix: prefix });
  const vectors = await createVectorStore({ url, indexPrefix: prefix, dimensions: dims, hnsw });
  return { search, vectors };
}

async function runSet(set, shape, row) {
  const embed = embedder(set);
  const dims = embed.dims;
  const makeMemory = (i) => memoryOf(i, shape);
  const prefix = `bench-memorie-${set}-${shape}-${process.pid}`;
  const dbDir = mkdtempSync(join(tmpdir(), "memorie-fts5-"));
  const dbPath = join(dbDir, "memories.db");
  let fts = new Fts5SearchStore(dbPath);
  let brute = new BruteForceVectorStore();
  let es = await openEs(prefix, dims);
  const engine = es.search.engine;
  const allVectors = new Map(); // id -> embedding: what the in-memory store re-upserts at reopen (its lower bound)
  let loaded = 0;
  let next = 0; // memory ids: m0, m1, ...
  const results = [];
  try {
    for (const size of sizes) {
      // ---- bulk load up to `size` (the adds below come on top of it)
      const batch = [];
      while (loaded + batch.length < size) batch.push(makeMemory(next++));
      const entries = batch.map((m) => {
        const v = embed(m.content);
        allVectors.set(m.id, v);
        return { id: m.id, embedding: v, metadata: scopeOf(m) };
      });
      let t = ms();
      fts.indexMany(batch);
      for (const e of entries) await brute.upsert(e.id, e.embedding, e.metadata);
      const baseLoadS = (ms() - t) / 1000;
      t = ms();
      await Promise.all([es.search.indexMany(batch, loadOptions), es.vectors.upsertMany(entries, loadOptions)]);
      const esLoadS = (ms() - t) / 1000;
      const mergeS = await waitMerges([es.search.info.alias, `${prefix}-memorie-vectors`]);
      loaded = size;
      console.error(`${set} ${shape} ${size}: loaded ${batch.length} (baseline ${baseLoadS.toFixed(1)} s, reme-es ${esLoadS.toFixed(1)} s + merges ${mergeS.toFixed(1)} s)`);

      // ---- queries: words of stored memories, scoped to that memory's tenant + namespace
      const r = rng(size + 7);
      const picks = Array.from({ length: queries + 10 }, () => makeMemory(Math.floor(r() * size)));
      const kq = picks.map((m) => ({ tenantId: m.tenantId, namespace: m.namespace, query: queryWords(m, 2, r), limit: 10 }));
      const fq = picks.map((m) => ({ tenantId: m.tenantId, namespace: m.namespace, filters: { type: m.type, state: "active" }, limit: 10 }));
      const vq = picks.map((m) => embed(queryWords(m, 3, r)));
      const [kBase, kEs] = await alternate([(i) => fts.search(kq[i]), (i) => es.search.search(kq[i])], queries);
      const [fBase, fEs] = await alternate([(i) => fts.search(fq[i]), (i) => es.search.search(fq[i])], queries);
      const exact = [];
      const approx = [];
      const [vBase, vEs] = await alternate(
        [
          async (i) => (exact[i] = await brute.search(vq[i], { topK: 50 })),
          async (i) => (approx[i] = await es.vectors.search(vq[i], { topK: 50 })),
        ],
        queries,
      );
      // recall@10 with ties: a returned id counts when its exact score reaches the exact 10th score (bag-of-words
      // vectors tie often; float32 rounding is within 1e-6)
      const recallOf = (lists) => {
        let hit = 0;
        let total = 0;
        for (let i = 10; i < exact.length; i++) {
          const tenth = exact[i][Math.min(9, exact[i].length - 1)].score;
          const good = lists[i].slice(0, 10).filter((id) => brute.score(vq[i], id) >= tenth - 1e-6).length;
          hit += Math.min(10, good);
          total += Math.min(10, exact[i].length);
        }
        return hit / total;
      };
      const recall = recallOf(approx.map((hits) => hits.map((h) => h.id)));
      const tuned = [];
      for (const c of tune) {
        const got = [];
        const [st] = await alternate([async (i) => {
          const resp = await fetch(`${url}/${prefix}-memorie-vectors/_search`, {
            method: "POST", headers: { "content-type": "application/json" },
            body: JSON.stringify(knnBody(engine, vq[i], 50, undefined, c)),
          });
          got[i] = (await resp.json()).hits.hits.map((h) => h._id);
        }], queries);
        const rc = recallOf(got);
        tuned.push({ candidates: c, recall: rc, p50: st.p50, p95: st.p95 });
        console.error(`  tune ${set} ${shape} ${size}: candidates ${c}: recall@10 ${rc.toFixed(3)}, p50 ${st.p50.toFixed(1)} ms`);
      }

      // ---- add: engine.add() one memory at a time, then add + the engine's search right after
      const addOne = async (store, m) => {
        await store.search.index(m);
        await store.vectors.upsert(m.id, embed(m.content), scopeOf(m));
      };
      const newMems = Array.from({ length: 2 * adds + 20 }, () => makeMemory(next++));
      const base = { search: fts, vectors: brute };
      const [aBase, aEs] = await alternate([(i) => addOne(base, newMems[i]), (i) => addOne(es, newMems[i])], adds);
      // The add, then the engine's two searches with three of its words (practically unique in its scope); misses
      // of the memory just added are counted (read-your-writes): keyword by its words, vector by its own vector.
      const misses = [0, 0];
      const searchAfter = async (store, m, j) => {
        await addOne(store, m);
        const words = queryWords(m, 3, r);
        const kh = await store.search.search({ tenantId: m.tenantId, namespace: m.namespace, query: words, limit: 10 });
        const vh = await store.vectors.search(embed(m.content), { topK: 50 });
        if (!kh.some((h) => h.memory.id === m.id) || !vh.some((h) => h.id === m.id)) misses[j]++;
      };
      const off = adds + 10;
      const [asBase, asEs] = await alternate(
        [(i) => searchAfter(base, newMems[off + i], 0), (i) => searchAfter(es, newMems[off + i], 1)],
        Math.min(adds, 100),
        0,
      );
      for (const m of newMems.slice(0, off + Math.min(adds, 100))) allVectors.set(m.id, embed(m.content));
      loaded += off + Math.min(adds, 100);

      // ---- reopen: new store objects until their first keyword and vector answers
      t = ms();
      fts.close();
      fts = new Fts5SearchStore(dbPath);
      await fts.search(kq[0]);
      brute = new BruteForceVectorStore();
      for (const [id, v] of allVectors) await brute.upsert(id, v, undefined);
      await brute.search(vq[0], { topK: 50 });
      const baseReopenS = (ms() - t) / 1000;
      await es.search.close();
      await es.vectors.close();
      t = ms();
      es = await openEs(prefix, dims);
      await es.search.search(kq[0]);
      await es.vectors.search(vq[0], { topK: 50 });
      const esReopenS = (ms() - t) / 1000;

      const common = { set, shape, dims, size, engine, loadN: batch.length, loadAvg: loadavg()[1] };
      results.push(
        { ...common, backend: "fts5 + brute force", add: aBase, addSearch: asBase, loadS: baseLoadS, mergeS: 0, rywMisses: misses[0],
          keyword: kBase, filters: fBase, vector: vBase, recall: 1, reopenS: baseReopenS },
        { ...common, backend: `reme-es (${engine} ${row.version})`, add: aEs, addSearch: asEs, loadS: esLoadS, mergeS,
          keyword: kEs, filters: fEs, vector: vEs, recall, reopenS: esReopenS, rywMisses: misses[1], refreshes: es.search.deferredRefreshes, tuned },
      );
      printRows(results.slice(-2));
    }
  } finally {
    fts.close();
    rmSync(dbDir, { recursive: true, force: true });
    if (!args.keep) {
      await es.search.drop();
      await es.vectors.drop();
    }
    await es.search.close();
    await es.vectors.close();
  }
  return results;
}

const f = (x, d = 2) => (x >= 100 ? x.toFixed(0) : x.toFixed(d));
const HEADER =
  "| set | shape | memories | backend | add p50 / p95 ms (adds/s) | add + search p50 | bulk load s (memories/s) | merge s | " +
  "keyword p50 / p95 | filters only p50 | vector topK 50 p50 / p95 | recall@10 | reopen s | load avg (5 min) |\n" +
  "|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|";
function printRows(rows) {
  for (const r of rows) {
    console.log(
      `| ${r.set} | ${r.shape ?? "topics"} | ${r.size.toLocaleString("en")} | ${r.backend} | ${f(r.add.p50)} / ${f(r.add.p95)} (${Math.round(1000 / r.add.p50).toLocaleString("en")}) | ` +
        `${f(r.addSearch.p50)} | ${f(r.loadS, 1)} (${Math.round(r.loadN / r.loadS || 0).toLocaleString("en")}) | ${f(r.mergeS, 1)} | ` +
        `${f(r.keyword.p50)} / ${f(r.keyword.p95)} | ${f(r.filters.p50)} | ${f(r.vector.p50)} / ${f(r.vector.p95)} | ` +
        `${r.recall.toFixed(3)} | ${f(r.reopenS, 3)} | ${r.loadAvg.toFixed(1)} |`,
    );
  }
}

// The version from _nodes/_local (the root path is not served by every distribution); the engine from the store.
const nodes = await (await fetch(`${url}/_nodes/_local?filter_path=nodes.*.version`)).json();
const row = { version: Object.values(nodes?.nodes ?? {})[0]?.version ?? "?" };
const info = { version: { distribution: (await (await fetch(`${url}/`, { method: "HEAD" })).headers.get("x-elastic-product")) ? "elasticsearch" : "opensearch" } };
console.log(`Memorie stores side by side; node ${url} (${info.version.distribution} ${row.version}); ` +
  `${queries} queries, ${adds} adds per point; ms unless marked${label ? `; ${label}` : ""}\n`);
console.log(HEADER);
const all = [];
for (const set of sets) {
  for (const shape of shapes) all.push(...(await runSet(set, shape, row)));
}
console.log("\nall rows:\n" + HEADER);
printRows(all);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify({ url, version: row.version, distribution: info?.version?.distribution ?? "elasticsearch", queries, adds, rows: all }, null, 1));
console.error(`wrote ${out}`);
