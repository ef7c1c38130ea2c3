// k-NN width calibration on Memorie's vector store (issue 40): recall@10 of topK 50 (Memorie's depth for limit 10)
// with today's width rule (knn-width.ts) and with the width calibrated on the index, per data shape, plus the
// calibration's cost, and the held-out recall at every width of the ladder beside the probes' (how well the probes
// predict real queries). Exact neighbours of the held-out queries are computed here by brute force.
//
//   cd memorie && npm run build && node scripts/calibration-bench.mjs --url http://127.0.0.1:9431 --sizes 10000
//     [--engine elasticsearch] [--shapes zipf-hash,zipf-memory,clustered,uniform] [--merge] [--m 16]
//     [--probe-sets '[[0.75,0.1],[0.85,0.1]]'] [--sample-seeds 1,2,3]
//
// --probe-sets: probe sets of one group each ([dropout, noise], 128 probes of one sample) measured at every width up
// to 6,400 beside the held-out queries (how a probe design stands for real queries). --sample-seeds: the rule's probe
// groups drawn from other samples, each group climbed alone (the width each would record; the rule takes the wider).
//
// Recall does not depend on the CPU; times do (a shared 2-core machine: medians of one run, noisy).
import { createVectorStore } from "../dist/src/index.js";
import { knnWidth } from "../dist/src/knn-width.js";
import { ladder, CALIBRATION, probeQueries } from "../dist/src/knn-calibration.js";
import { dialectOf } from "../dist/src/engine-dialect.js";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? dflt : process.argv[i + 1];
};
const URL_ = arg("url", "http://127.0.0.1:9431");
const SIZES = arg("sizes", "10000").split(",").map(Number);
const SHAPES = arg("shapes", "zipf-hash,zipf-memory,clustered,uniform").split(",");
const MERGE = process.argv.includes("--merge");
const M = arg("m") ? Number(arg("m")) : undefined;
const QUERIES = Number(arg("queries", "200"));
const PROBE_SETS = JSON.parse(arg("probe-sets", "[]"));
const SAMPLE_SEEDS = arg("sample-seeds", "").split(",").filter((x) => x !== "").map(Number);

/** `size` stored vectors of a random sample drawn with `seed` (the calibration's sample request). */
async function sampleVectors(alias, engine, size, seed) {
  const body = JSON.stringify(dialectOf(engine).sampleBody(undefined, size, seed));
  const r = await (await fetch(`${URL_}/${alias}/_search`, { method: "POST", headers: { "content-type": "application/json" }, body })).json();
  return r.hits.hits.map((h) => h._source.embedding);
}

function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x9e3779b9) >>> 0;
    let t = Math.imul(a ^ (a >>> 16), 0x21f0aaad);
    t = Math.imul(t ^ (t >>> 15), 0x735a2d97);
    return ((t ^ (t >>> 15)) >>> 0) / 4294967296;
  };
}
const unit = (v) => {
  const n = Math.hypot(...v);
  return n === 0 ? v : v.map((x) => x / n);
};
function zipf(vocab, r) {
  const cdf = [];
  let sum = 0;
  for (let k = 1; k <= vocab; k++) cdf.push((sum += 1 / k ** 1.07));
  return () => {
    const u = r() * sum;
    let lo = 0, hi = vocab - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
function embed(words, dims) {
  const v = new Array(dims).fill(0);
  for (const w of words) {
    let h = 0x811c9dc5;
    for (const ch of `w${w}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    v[h % dims] += (h >>> 20) & 1 ? 1 : -1;
  }
  return unit(v);
}
function gauss(r) {
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}
/** Stored vectors and held-out queries of one shape (the Python shapes' rules: reme_es/testing/shapes.py). */
function shape(name, n) {
  const r = random(n + name.length);
  if (name === "zipf-hash" || name === "zipf-memory") {
    const word = zipf(5000, r);
    const memories = Array.from({ length: n }, () => Array.from({ length: 20 }, word));
    const queries = Array.from({ length: QUERIES }, () => {
      if (name === "zipf-hash") return embed(Array.from({ length: 6 }, word), 256); // from outside the corpus
      const m = memories[Math.floor(r() * n)]; // 3 words of a stored memory (the project's own shape)
      return embed([0, 1, 2].map(() => m[Math.floor(r() * m.length)]), 256);
    });
    return { vectors: memories.map((m) => embed(m, 256)), queries };
  }
  const dims = 128;
  if (name === "clustered") {
    const centres = Array.from({ length: 50 }, () => unit(Array.from({ length: dims }, () => gauss(r))));
    const point = () => unit(centres[Math.floor(r() * 50)].map((x) => x + (gauss(r) * 0.6) / Math.sqrt(dims)));
    return { vectors: Array.from({ length: n }, point), queries: Array.from({ length: QUERIES }, point) };
  }
  const point = () => unit(Array.from({ length: dims }, () => gauss(r)));
  return { vectors: Array.from({ length: n }, point), queries: Array.from({ length: QUERIES }, point) };
}

const dot = (a, b) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};
function truths(vectors, queries) {
  return queries.map((q) => {
    const scores = vectors.map((v) => dot(q, v));
    const tenth = scores.slice().sort((a, b) => b - a)[9];
    return new Set(scores.flatMap((s, i) => (s >= tenth - 1e-6 ? [`m${i}`] : [])));
  });
}
const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];

async function heldOut(url, prefix, width, queries, good) {
  const s = await createVectorStore({ url, indexPrefix: prefix, knnCandidates: width });
  let hit = 0;
  const ms = [];
  for (const [i, q] of queries.entries()) {
    const t = performance.now();
    const found = await s.search(q, { topK: 50 });
    ms.push(performance.now() - t);
    hit += found.slice(0, 10).filter((h) => good[i].has(h.id)).length;
  }
  await s.close();
  return { recall: hit / (10 * queries.length), ms: median(ms) };
}

for (const n of SIZES) {
  for (const name of SHAPES) {
    const { vectors, queries } = shape(name, n);
    const prefix = `calbench-mjs-${name}-${n}${MERGE ? "-merged" : ""}${M ? `-m${M}` : ""}`;
    const store = await createVectorStore({ url: URL_, indexPrefix: prefix, dimensions: vectors[0].length, ...(M ? { hnsw: { m: M, efConstruction: 64 } } : {}) });
    const t0 = performance.now();
    await store.upsertMany(vectors.map((embedding, i) => ({ id: `m${i}`, embedding })), { calibrate: false });
    const loadS = (performance.now() - t0) / 1000;
    const alias = `${prefix}-memorie-vectors`;
    if (MERGE) await fetch(`${URL_}/${alias}/_forcemerge?max_num_segments=1`, { method: "POST" });
    await store.refresh();
    const stats = await (await fetch(`${URL_}/${alias}/_stats/docs,segments`)).json();
    const sh = { docs: stats._all.primaries.docs.count, segments: stats._all.primaries.segments.count };
    const good = truths(vectors, queries);
    const oldWidth = knnWidth(50, sh, M ?? 32, store.engine);
    const old = await heldOut(URL_, prefix, oldWidth, queries, good);
    const cal = await store.calibrate();
    const now = await heldOut(URL_, prefix, cal.width, queries, good);
    const curve = [];
    for (const w of ladder(50).filter((w) => w <= Math.max(cal.width * 2, 600))) {
      const probe = cal.steps.find((s) => s[0] === w);
      curve.push([w, probe ? probe[1] : null, (await heldOut(URL_, prefix, w, queries, good)).recall]);
    }
    const probeSets = [];
    if (PROBE_SETS.length > 0) {
      const sample = await sampleVectors(alias, store.engine, 128, 11);
      const held = new Map(); // width -> held-out recall, measured once
      for (const [dropout, noise] of PROBE_SETS) {
        const probes = probeQueries(sample, CALIBRATION.seed, [{ dropout, noise }]);
        const c = await store.calibrate({ queries: probes, target: 1.01, budgetMs: 1e9, maxWidth: 6400, record: false });
        const curve = [];
        for (const [w, probe] of c.steps) {
          if (!held.has(w)) held.set(w, (await heldOut(URL_, prefix, w, queries, good)).recall);
          curve.push([w, probe, held.get(w)]);
        }
        probeSets.push({ dropout, noise, curve_width_probe_heldout: curve });
      }
    }
    const samples = [];
    for (const seed of SAMPLE_SEEDS) {
      const probes = probeQueries(await sampleVectors(alias, store.engine, CALIBRATION.sample, seed), seed);
      const groups = [];
      for (let g = 0; g < CALIBRATION.probes.length; g++) {
        const c = await store.calibrate({ queries: probes.filter((_, i) => i % CALIBRATION.probes.length === g), record: false });
        groups.push([c.width, c.recall]);
      }
      samples.push({ seed, groups, width: Math.max(...groups.map(([w]) => w)) });
    }
    console.log(JSON.stringify({
      engine: store.engine, shape: name, n, ...sh, m: M ?? 32, load_s: Math.round(loadS * 10) / 10,
      old_width: oldWidth, old_recall: old.recall, old_ms: Math.round(old.ms * 10) / 10,
      width: cal.width, probe_recall: cal.recall, stopped: cal.stopped, reference: cal.reference,
      recall: now.recall, ms: Math.round(now.ms * 10) / 10, cal_s: cal.seconds, cal_requests: cal.requests,
      curve_width_probe_heldout: curve,
      ...(probeSets.length ? { probe_sets: probeSets } : {}),
      ...(samples.length ? { sample_seeds: samples } : {}),
    }));
    if (!process.argv.includes("--keep")) await store.drop();
    await store.close();
  }
}
