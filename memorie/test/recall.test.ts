// Recall of the vector store on a hard shape, on real nodes: bag-of-words memories over a Zipf-distributed vocabulary
// embedded with a hash-trick embedder (the shape of Memorie's HashEmbeddingProvider), one segment (an index at rest
// after merging). recall@10 of the engine's topK-50 search against brute force computed here. Beside it the same
// vectors in an index built with the shared graph settings (m 16 / ef_construction 64) searched with the shared rule's
// width show the shape is hard: what the store gains over them, not the data, lifts recall to 0.97.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { createVectorStore } from "../src/index.js";
import { knnWidth } from "../src/knn-width.js";
import { shapeOfStats } from "../src/port-indices.js";
import { CALIBRATION } from "../src/knn-calibration.js";
import { HNSW } from "../src/settings.js";
import { dropAfterSuite, freshPrefix, http, targets } from "./targets.js";
import { random, zipf } from "./zipf.js";

const SIZE = Number(process.env.REME_ES_MEMORIE_RECALL_SIZE ?? 20000);
const QUERIES = 60;
const DIMS = 256;
const VOCAB = 5000;

const zipfRank = zipf(VOCAB);

/** A signed hash-trick vector of word ranks: each word adds ±1 to one of DIMS buckets; unit length. */
function embed(words: number[]): number[] {
  const v = new Array<number>(DIMS).fill(0);
  for (const w of words) {
    let h = 0x811c9dc5;
    for (const ch of `w${w}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    v[h % DIMS] = (v[h % DIMS] as number) + ((h >>> 20) & 1 ? 1 : -1);
  }
  const n = Math.hypot(...v);
  return n === 0 ? v : v.map((x) => x / n);
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * (b[i] as number), 0);

/** recall@10 against brute force; an id whose exact score reaches the exact 10th score counts (bag-of-words ties). */
function recallAt10(vectors: number[][], queries: number[][], found: string[][]): number {
  let hit = 0;
  for (const [qi, q] of queries.entries()) {
    const scores = vectors.map((v) => dot(q, v));
    const tenth = scores.slice().sort((a, b) => b - a)[9] as number;
    hit += (found[qi] ?? []).slice(0, 10).filter((id) => (scores[Number(id.slice(1))] as number) >= tenth - 1e-6).length;
  }
  return hit / (10 * queries.length);
}

for (const { engine, url } of targets) {
  describe(`vector recall on a hard shape on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it(`recall@10 of topK 50 >= 0.97 over ${SIZE} Zipf bag-of-words vectors in one segment`, async (t) => {
      const prefix = freshPrefix("recall");
      const sharedPrefix = freshPrefix("recall-shared");
      const store = track(await createVectorStore({ url, indexPrefix: prefix, dimensions: DIMS }));
      const narrow = track(await createVectorStore({
        url, indexPrefix: sharedPrefix, dimensions: DIMS, hnsw: HNSW, knnCandidates: knnWidth(50, undefined),
      }));
      const r = random(7);
      const memories = Array.from({ length: SIZE }, () => Array.from({ length: 6 + Math.floor(r() * 13) }, () => zipfRank(r())));
      const vectors = memories.map(embed);
      for (const [p, s] of [[prefix, store], [sharedPrefix, narrow]] as const) {
        await s.upsertMany(vectors.map((embedding, i) => ({ id: `m${i}`, embedding })));
        const merged = await http(url, "POST", `/${p}-memorie-vectors/_forcemerge?max_num_segments=1`);
        assert.equal(merged.status, 200, JSON.stringify(merged.body));
        await s.refresh();
        const stats = await http(url, "GET", `/${p}-memorie-vectors/_stats/docs,segments`);
        assert.deepEqual(shapeOfStats(stats.body), { docs: SIZE, segments: 1 });
      }
      const queries = Array.from({ length: QUERIES }, () => {
        const words = memories[Math.floor(r() * SIZE)] as number[];
        return embed([0, 1, 2].map(() => words[Math.floor(r() * words.length)] as number));
      });
      const found: string[][] = [];
      const narrowFound: string[][] = [];
      for (const q of queries) {
        found.push((await store.search(q, { topK: 50 })).map((h) => h.id));
        narrowFound.push((await narrow.search(q, { topK: 50 })).map((h) => h.id));
      }
      const recall = recallAt10(vectors, queries, found);
      const narrowRecall = recallAt10(vectors, queries, narrowFound);
      t.diagnostic(`recall@10 ${recall.toFixed(3)}, shared graph and rule ${narrowRecall.toFixed(3)}`);
      t.diagnostic(`width calibrated after the load: ${JSON.stringify(store.calibration)}`);
      assert.ok(narrowRecall < 0.97, `the shape is not hard here: the shared graph and rule already reach ${narrowRecall}`);
      assert.ok(recall >= 0.97, `recall@10 ${recall.toFixed(3)} < 0.97 (the shared graph and rule: ${narrowRecall.toFixed(3)})`);
    });
  });
}

/** Calibration requests a store sends (a sample of stored vectors opens every calibration), counted on its connection. */
function countCalibrations(store: object): { count: number } {
  const conn = (store as any).idx.conn;
  const counted = { count: 0 };
  const request = conn.request.bind(conn);
  conn.request = (r: { what?: string }) => {
    if (/^sample vectors of /.test(r.what ?? "")) counted.count++;
    return request(r);
  };
  return counted;
}

/** recall@10 of the store's topK-50 answers to `queries` (its own width unless the store fixes one), against brute force. */
async function measured(store: { search: (q: number[], o: { topK: number }) => Promise<{ id: string }[]> }, vectors: number[][], queries: number[][]) {
  const found: string[][] = [];
  for (const q of queries) found.push((await store.search(q, { topK: 50 })).map((h) => h.id));
  return recallAt10(vectors, queries, found);
}

const gauss = (r: () => number) => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
const unitRandom = (r: () => number, dims: number) => {
  const v = Array.from({ length: dims }, () => gauss(r));
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};

// The width calibrated on the index (issues 40, 53): a load of enough entries in parts calibrates nothing while it
// runs; the first search after it measures the width, and a store opened later reads it from the index's `_meta`.
// Held-out short queries from outside the corpus, measured here against brute force, reach the target with it.
for (const { engine, url } of targets) {
  describe(`k-NN width calibrated on the index on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it("a load in parts calibrates nothing; the first search records a width reaching the target", async (t) => {
      const prefix = freshPrefix("calibrate");
      const r = random(11);
      const memories = Array.from({ length: 3000 }, () => Array.from({ length: 20 }, () => zipfRank(r())));
      const vectors = memories.map(embed);
      const store = track(await createVectorStore({ url, indexPrefix: prefix, dimensions: DIMS, hnsw: HNSW }));
      const calibrations = countCalibrations(store);
      for (let part = 0; part < 3; part++) {
        const ids = Array.from({ length: 1000 }, (_, i) => part * 1000 + i);
        await store.upsertMany(ids.map((i) => ({ id: `m${i}`, embedding: vectors[i] as number[] })), { refresh: "false" });
        assert.equal(calibrations.count, 0, `part ${part}: a calibration inside the load`);
        assert.equal(store.calibration, undefined, `part ${part}: a width recorded inside the load`);
      }
      await store.refresh();
      const meta = await http(url, "GET", `/${prefix}-memorie-vectors/_mapping`);
      const recorded = Object.values(meta.body as Record<string, any>)[0]?.mappings?._meta?.reme_es?.[CALIBRATION.meta_key];
      assert.equal(recorded, undefined, "the load recorded a width in the index");
      const queries = Array.from({ length: 40 }, () => embed(Array.from({ length: 6 }, () => zipfRank(r()))));
      const first = await store.search(queries[0] as number[], { topK: 50 });
      assert.equal(first.length, 50);
      assert.equal(calibrations.count, 1, "the first search after the load calibrated once");
      const c = store.calibration;
      assert.ok(c, "the first search recorded no width");
      t.diagnostic(JSON.stringify(c));
      assert.equal(c.reached, true);
      assert.ok(c.recall >= CALIBRATION.target_recall && c.docs === 3000 && c.sample === CALIBRATION.sample);
      assert.ok(c.groups?.length === CALIBRATION.probes.length && Math.min(...c.groups) === c.recall, "the worst group decides");
      assert.deepEqual(c.steps.map((s) => s[0]), CALIBRATION.widths.filter((w) => w <= c.width));
      assert.ok(c.steps.slice(0, -1).every((s) => s[1] < CALIBRATION.target_recall), "not the smallest width");
      const recall = await measured(store, vectors, queries);
      assert.equal(calibrations.count, 1, "later searches do not calibrate again");
      const again = track(await createVectorStore({ url, indexPrefix: prefix }));
      assert.deepEqual(again.calibration, c);
      t.diagnostic(`held-out recall@10 ${recall.toFixed(3)} at width ${c.width}`);
      assert.ok(recall >= CALIBRATION.target_recall, `held-out recall@10 ${recall} at width ${c.width}`);
      // The recorded recall is the calibration's measurement: the test's own of the same at the first width is lower.
      const narrow = track(await createVectorStore({ url, indexPrefix: prefix, knnCandidates: c.steps[0]![0] }));
      const atFirst = await measured(narrow, vectors, queries);
      t.diagnostic(`held-out recall@10 ${atFirst.toFixed(3)} at the first width ${c.steps[0]![0]}`);
      assert.ok(atFirst <= recall, `the first width ${c.steps[0]![0]} (${atFirst}) beats the recorded one (${recall})`);
      const capped = await again.calibrate({ maxWidth: 75, target: 1.01, record: false });
      assert.deepEqual([capped.reached, capped.stopped, capped.steps.map((s) => s[0])], [false, "max_width", [50, 75]]);
      assert.deepEqual(again.calibration, c, "record: false keeps the recorded width");
    });

    it("on uniform random vectors the climb goes past the first width, and its recall is the test's own", async (t) => {
      const prefix = freshPrefix("calibrate-uniform");
      const r = random(5);
      const dims = 128;
      const vectors = Array.from({ length: 3000 }, () => unitRandom(r, dims));
      const queries = Array.from({ length: 40 }, () => unitRandom(r, dims));
      // a sparse graph (m 4) in one segment over isotropic directions: the narrowest width does not find the ten
      const store = track(await createVectorStore({ url, indexPrefix: prefix, dimensions: dims, hnsw: { m: 4, efConstruction: 32 } }));
      await store.upsertMany(vectors.map((embedding, i) => ({ id: `m${i}`, embedding })), { calibrate: false });
      const merged = await http(url, "POST", `/${prefix}-memorie-vectors/_forcemerge?max_num_segments=1`);
      assert.equal(merged.status, 200, JSON.stringify(merged.body));
      const c = await store.calibrate({ queries });
      t.diagnostic(JSON.stringify(c));
      const first = c.steps[0]!;
      const narrow = track(await createVectorStore({ url, indexPrefix: prefix, knnCandidates: first[0] }));
      const atFirst = await measured(narrow, vectors, queries);
      const atRecorded = await measured(store, vectors, queries);
      t.diagnostic(`the test's own recall@10: ${atFirst.toFixed(3)} at ${first[0]}, ${atRecorded.toFixed(3)} at ${c.width}`);
      assert.ok(atFirst < CALIBRATION.target_recall, `the first width already reaches ${atFirst}: not a shape that needs more`);
      assert.ok(c.steps.length >= 2 && c.width > first[0], `the climb stopped at the first width: ${JSON.stringify(c.steps)}`);
      assert.ok(Math.abs(first[1] - atFirst) <= 0.02, `first step recorded ${first[1]}, measured here ${atFirst}`);
      assert.ok(Math.abs(c.recall - atRecorded) <= 0.02, `recorded recall ${c.recall}, measured here ${atRecorded} at ${c.width}`);
      assert.ok(atRecorded >= CALIBRATION.target_recall - 0.01 || !c.reached, `reached per the record, ${atRecorded} here`);
    });
  });
}
