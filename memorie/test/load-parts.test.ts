// A load the way a user loads it (issue 53, item 5), on real nodes: indexMany + upsertMany of the same part at once,
// parts of 2,000 with `refresh: "false"`, then refresh() on both stores, then search at once. The scheduled refresh is
// turned off once for the whole load and put back by refresh(); every memory is searchable after refresh() (exact
// counts and ids); the first search calibrates once and recall@10 of 6-word queries from outside the corpus reaches
// 0.97 with no calibrate() call; single adds after it are read at once (read-your-writes).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { makeMemory } from "../src/contract/common.js";
import { CALIBRATION } from "../src/knn-calibration.js";
import { createSearchStore, createVectorStore } from "../src/index.js";
import { dropAfterSuite, freshPrefix, http, targets } from "./targets.js";
import { random, zipf } from "./zipf.js";

const SIZE = 6000;
const PART = 2000;
const DIMS = 256;
const VOCAB = 5000;

const zipfRank = zipf(VOCAB);

/** A word of a Zipf-distributed vocabulary (rank r has probability ~ 1/r), as letters only ("w" + rank). */
function zipfWord(u: number): string {
  const lo = zipfRank(u);
  return `w${lo.toString(26).replace(/[0-9]/g, (d) => "qrstuvwxyz"[Number(d)] as string)}`;
}

/** A signed hash-trick vector of the words (Memorie's HashEmbeddingProvider's kind); unit length. */
function embed(text: string): number[] {
  const v = new Array<number>(DIMS).fill(0);
  for (const w of text.split(" ")) {
    let h = 0x811c9dc5;
    for (const ch of w) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    v[h % DIMS] = (v[h % DIMS] as number) + ((h >>> 20) & 1 ? 1 : -1);
  }
  const n = Math.hypot(...v);
  return n === 0 ? v : v.map((x) => x / n);
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * (b[i] as number), 0);

/** Settings requests a store sends (the refresh interval read or set), counted on its connection. */
function countSettings(conn: any): { count: number } {
  const counted = { count: 0 };
  const request = conn.request.bind(conn);
  conn.request = (r: { what?: string }, ...rest: unknown[]) => {
    if (/refresh interval/.test(r.what ?? "")) counted.count++;
    return request(r, ...rest);
  };
  return counted;
}

async function intervalOf(url: string, alias: string): Promise<unknown> {
  const r = await http(url, "GET", `/${alias}/_settings/index.refresh_interval`);
  return (Object.values(r.body)[0] as any)?.settings?.index?.refresh_interval ?? null;
}

for (const { engine, url } of targets) {
  describe(`a load in parts on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it(`${SIZE} memories in parts of ${PART}: all searchable after refresh(), recall >= 0.97 with no calibrate(), adds read at once`, async (t) => {
      const prefix = freshPrefix("parts");
      const search = track(await createSearchStore({ url, indexPrefix: prefix }));
      const vectors = track(await createVectorStore({ url, indexPrefix: prefix, dimensions: DIMS }));
      const vAlias = `${prefix}-memorie-vectors`;
      const settings = [countSettings((search as any).conn), countSettings((vectors as any).idx.conn)];
      const r = random(53);
      const memories = Array.from({ length: SIZE }, (_, i) =>
        makeMemory({
          id: `m${i}`, tenantId: `t${i % 3}`, namespace: "ns",
          content: Array.from({ length: 6 + Math.floor(r() * 13) }, () => zipfWord(r())).join(" "),
        }),
      );
      const vecs = memories.map((m) => embed(m.content));
      for (let start = 0; start < SIZE; start += PART) {
        const part = memories.slice(start, start + PART);
        const entries = part.map((m, k) => ({ id: m.id, embedding: vecs[start + k] as number[], metadata: { tenantId: m.tenantId } }));
        await Promise.all([search.indexMany(part, { refresh: "false" }), vectors.upsertMany(entries, { refresh: "false" })]);
        assert.deepEqual([await intervalOf(url, search.info.alias), await intervalOf(url, vAlias)], ["-1", "-1"], `after part ${start}`);
      }
      assert.deepEqual(settings.map((s) => s.count), [2, 2], "one read and one switch-off per index for the whole load");
      await Promise.all([search.refresh(), vectors.refresh()]);
      assert.deepEqual(settings.map((s) => s.count), [3, 3], "switched back on once, by refresh()");
      assert.deepEqual([await intervalOf(url, search.info.alias), await intervalOf(url, vAlias)], ["1s", "1s"]);
      const ids = memories.map((m) => m.id).sort();
      for (const alias of [search.info.alias, vAlias]) {
        const counted = await http(url, "GET", `/${alias}/_count`);
        assert.equal(counted.body.count, SIZE, `${alias} after refresh()`);
      }
      assert.deepEqual((await search.listIds()).sort(), ids);
      assert.deepEqual((await vectors.listIds()).sort(), ids);

      // at once: the first search calibrates once; recall of held-out 6-word queries against brute force
      const queries = Array.from({ length: 40 }, () => embed(Array.from({ length: 6 }, () => zipfWord(r())).join(" ")));
      let hit = 0;
      for (const q of queries) {
        const found = (await vectors.search(q, { topK: 50 })).map((h) => h.id);
        const scores = vecs.map((v) => dot(q, v));
        const tenth = scores.slice().sort((a, b) => b - a)[9] as number;
        hit += found.slice(0, 10).filter((id) => (scores[Number(id.slice(1))] as number) >= tenth - 1e-6).length;
      }
      const recall = hit / (10 * queries.length);
      t.diagnostic(`recall@10 ${recall.toFixed(3)}; calibration ${JSON.stringify(vectors.calibration)}`);
      assert.ok(vectors.calibration?.docs === SIZE, "the first search after the load calibrated on all of it");
      assert.ok(recall >= CALIBRATION.target_recall, `recall@10 ${recall} after the load, no calibrate() call`);

      // single adds after the load: read at once (the default deferred policy), keyword and vector
      for (let i = 0; i < 3; i++) {
        const m = makeMemory({ id: `add${i}`, tenantId: "t0", namespace: "ns", content: `freshly added walnut ${i} quokka` });
        await search.index(m);
        await vectors.upsert(m.id, embed(m.content), { tenantId: "t0" });
        const kh = await search.search({ tenantId: "t0", namespace: "ns", query: `walnut quokka ${i}`, limit: 10 });
        assert.deepEqual(kh.map((h) => h.memory.id), [m.id]);
        const vh = await vectors.search(embed(m.content), { topK: 1 });
        assert.deepEqual(vh.map((h) => h.id), [m.id]);
      }
      assert.equal(settings[0]!.count + settings[1]!.count, 6, "single adds touch no settings");
    });
  });
}
