// The vector search width from the index's shape (pure), and the cache that reads the shape (a scripted reader).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";

import { knnWidth, MAX_CANDIDATES, ShapeCache, WIDE_GRAPH_SCALE, WIDTH_FRACTION } from "../src/knn-width.js";
import { shapeOfStats } from "../src/port-indices.js";
import { knnCandidates } from "../src/settings.js";
import {
  CALIBRATION,
  calibratedWidth,
  calibrationDue,
  calibrationOfMeta,
  climb,
  groupRecalls,
  ladder,
  probeQueries,
  recallAt,
} from "../src/knn-calibration.js";

describe("knnWidth", () => {
  it("is the shared rule without a shape, and for small segments", () => {
    assert.equal(knnWidth(50, undefined), knnCandidates(50));
    assert.equal(knnWidth(50, { docs: 0, segments: 0 }), knnCandidates(50));
    assert.equal(knnWidth(50, { docs: 1000, segments: 1 }), knnCandidates(50));
  });

  it("grows with the entries per segment, up to the engines' limit, never below k", () => {
    assert.equal(knnWidth(50, { docs: 100000, segments: 6 }), Math.ceil((WIDTH_FRACTION * 100000) / 6));
    assert.equal(knnWidth(50, { docs: 100000, segments: 6 }), 2000);
    assert.equal(knnWidth(50, { docs: 10000, segments: 2 }), 600);
    assert.ok(knnWidth(50, { docs: 100000, segments: 1 }) > knnWidth(50, { docs: 100000, segments: 6 }));
    assert.equal(knnWidth(50, { docs: 10_000_000, segments: 1 }), MAX_CANDIDATES);
    assert.equal(knnWidth(10000, { docs: 10, segments: 1 }), 10000);
  });

  it("for a graph of m 32 or more, grows with the root of the entries per segment, wider on Elasticsearch", () => {
    assert.equal(knnWidth(50, { docs: 100000, segments: 1 }, 32), Math.ceil(WIDE_GRAPH_SCALE.opensearch * Math.sqrt(100000)));
    assert.equal(knnWidth(50, { docs: 100000, segments: 1 }, 32), 1265);
    assert.equal(knnWidth(50, { docs: 100000, segments: 6 }, 32), 517);
    assert.equal(knnWidth(50, { docs: 100000, segments: 1 }, 32, "elasticsearch"), 1898);
    assert.equal(knnWidth(50, { docs: 6000, segments: 2 }, 48), knnCandidates(50), "small segments: the shared rule");
    assert.equal(knnWidth(50, { docs: 100000, segments: 6 }, 16), 2000, "an index of m 16 keeps its rule");
    assert.equal(knnWidth(50, { docs: 100000, segments: 6 }, undefined), 2000, "so does one whose m is not known");
    assert.equal(knnWidth(50, { docs: 100_000_000, segments: 1 }, 32), MAX_CANDIDATES);
  });

  it("reads docs and segments from an index-stats answer", () => {
    const body = { _all: { primaries: { docs: { count: 12 }, segments: { count: 3 } } } };
    assert.deepEqual(shapeOfStats(body), { docs: 12, segments: 3 });
    assert.equal(shapeOfStats({}), undefined);
  });
});

describe("ShapeCache", () => {
  it("waits for the first read only, reads again when stale, keeps the last shape when a read fails", async () => {
    let clock = 0;
    const answers: (() => Promise<any>)[] = [
      async () => ({ docs: 1, segments: 1 }),
      async () => {
        throw new Error("node busy");
      },
      async () => ({ docs: 3, segments: 1 }),
      async () => ({ docs: 5, segments: 2 }),
    ];
    let reads = 0;
    const cache = new ShapeCache(() => (answers[reads++] as () => Promise<any>)(), 100, () => clock);
    assert.deepEqual(await cache.get(), { docs: 1, segments: 1 });
    assert.deepEqual(await cache.get(), { docs: 1, segments: 1 });
    assert.equal(reads, 1, "fresh: no second read");
    clock = 100;
    assert.deepEqual(await cache.get(), { docs: 1, segments: 1 }, "stale: the last shape, read again behind");
    await new Promise((r) => setImmediate(r));
    assert.equal(reads, 2);
    assert.deepEqual(await cache.get(), { docs: 1, segments: 1 }, "the failed read kept the shape");
    clock = 200;
    await cache.get();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(await cache.get(), { docs: 3, segments: 1 });
    cache.reset();
    assert.deepEqual(await cache.get(), { docs: 5, segments: 2 }, "after reset the next get waits for a new read");
    assert.equal(reads, 4);
  });
});

describe("the calibrated width (knn-calibration.ts)", () => {
  const record = {
    width: 400, recall: 0.98, target: 0.97, reached: true, stopped: "target", depth: 50, at: 10, docs: 10000, segments: 4,
    sample: 64, reference: "exact", measured_at: "2026-12-04T08:00:00Z", seconds: 1, requests: 9, steps: [] as [number, number, number][],
  };
  it("grows with k above the depth and with the entries per segment, never narrower than measured", () => {
    assert.equal(calibratedWidth(record, 50), 400);
    assert.equal(calibratedWidth(record, 100), 800);
    assert.equal(calibratedWidth(record, 50, { docs: 20000, segments: 4 }), 800);
    assert.equal(calibratedWidth(record, 50, { docs: 5000, segments: 4 }), 400);
    assert.equal(calibratedWidth(record, 5000), CALIBRATION.max_width);
  });
  it("is due unrecorded from min_docs, and when the shape moved by the ratio", () => {
    assert.equal(calibrationDue(undefined, { docs: CALIBRATION.min_docs - 1, segments: 1 }), false);
    assert.equal(calibrationDue(undefined, { docs: CALIBRATION.min_docs, segments: 1 }), true);
    assert.equal(calibrationDue(record, { docs: 12000, segments: 4 }), false);
    assert.equal(calibrationDue(record, { docs: 10000, segments: 1 }), true);
  });
  it("climbs to the first width reaching the target, keeps the best within the budget or the ladder", async () => {
    const table: Record<number, [number, number]> = { 50: [0.9, 4], 75: [0.94, 8], 100: [0.99, 12] };
    const measure = async (w: number) => ({ width: w, recall: table[w]![0], tookMs: table[w]![1] });
    const full = await climb([50, 75, 100], measure, 0.97, undefined);
    assert.equal(full.chosen.width, 100);
    // each step keeps the recall its measurement gave (a climb reporting 1 unmeasured would stop at 50)
    assert.deepEqual([full.steps.map((s) => [s.width, s.recall]), full.chosen.recall], [[[50, 0.9], [75, 0.94], [100, 0.99]], 0.99]);
    const budget = await climb([50, 75, 100], measure, 0.97, 10);
    assert.deepEqual([budget.chosen.width, budget.stopped], [75, "latency_budget"]);
    const capped = await climb([50, 75], measure, 0.97, undefined);
    assert.deepEqual([capped.chosen.width, capped.stopped], [75, "max_width"]);
    assert.equal(recallAt(["a", "c"], [["a", 0.9], ["b", 0.8], ["c", 0.8]], 2), 1);
    assert.deepEqual(calibrationOfMeta({ knn_width: record }), record);
    assert.equal(calibrationOfMeta({}), undefined);
  });
  it("deals the probes to a light and a heavy group in turn", () => {
    const groups = CALIBRATION.probes;
    assert.ok(groups.length >= 2 && new Set(groups.map((g) => g.dropout)).size === groups.length, "dropout levels that differ");
    const dims = 4000;
    const probes = probeQueries(Array.from({ length: 2 * groups.length }, () => new Array(dims).fill(1)), 3);
    probes.forEach((q, i) => {
      const kept = q.reduce((s, x) => s + x, 0) / dims; // noise is centred: the mean coordinate is the share kept
      assert.ok(Math.abs(kept - (1 - groups[i % groups.length]!.dropout)) < 0.05, `probe ${i}: ${kept}`);
    });
  });
  it("lets the worst probe group decide the step", async () => {
    // the mean of all probes (0.975) reaches 0.97, the heavy group (0.95) does not: the width is not enough
    const recalls = Array.from({ length: 4 }, () => [1, 0.9, 1, 1]).flat();
    const { worst, means } = groupRecalls(recalls, 2);
    assert.ok(Math.abs(worst - 0.95) < 1e-9 && Math.abs(means[0]! - 1) < 1e-9, JSON.stringify(means));
    assert.ok(Math.abs(groupRecalls(recalls, 1).worst - 0.975) < 1e-9, "the callers' own queries: one group");
    const table: Record<number, number[]> = { 50: [1, 0.9, 1, 0.9], 75: [1, 0.95, 1, 0.95], 100: [1, 1, 1, 1] };
    const measure = async (w: number) => {
      const g = groupRecalls(table[w]!, 2);
      return { width: w, recall: g.worst, tookMs: 1, groups: g.means };
    };
    const out = await climb([50, 75, 100], measure, 0.97, undefined);
    assert.deepEqual([out.chosen.width, out.stopped, out.chosen.groups], [100, "target", [1, 1]]);
  });
});

// The same decisions as the Python side (tests/unit/test_knn_calibration.py reads these cases too).
describe("calibration golden cases (tests/unit/golden/engine_settings.json knn_calibration_cases)", () => {
  const CASES = JSON.parse(
    readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "unit", "golden", "engine_settings.json"), "utf8"),
  ).knn_calibration_cases;
  const record = {
    ...CASES.record, recall: 0.98, target: 0.97, reached: true, stopped: "target", at: 10, sample: 64, reference: "exact",
    measured_at: "", seconds: 0, requests: 0, steps: [] as [number, number, number][],
  };
  it("widths", () => {
    for (const [k, docs, segments, expected] of CASES.widths) {
      const shape = docs === null ? undefined : { docs, segments };
      assert.equal(calibratedWidth(record, k, shape), expected, JSON.stringify([k, docs, segments]));
    }
  });
  it("due", () => {
    for (const [recorded, docs, segments, expected] of CASES.due) {
      assert.equal(calibrationDue(recorded ? record : undefined, { docs, segments }), expected, JSON.stringify([recorded, docs, segments]));
    }
  });
  it("climb", async () => {
    for (const c of CASES.climb) {
      const table = new Map<number, [number, number]>(c.steps.map(([w, r, t]: number[]) => [w, [r, t]]));
      const measure = async (w: number) => ({ width: w, recall: table.get(w)![0], tookMs: table.get(w)![1] });
      const out = await climb([...table.keys()], measure, c.target, c.budget_ms ?? undefined);
      assert.deepEqual([out.chosen.width, out.stopped, out.steps.length], c.expect);
    }
  });
  it("ladder", () => {
    for (const [depth, top, expected] of CASES.ladder) assert.deepEqual(ladder(depth, top ?? undefined), expected);
  });
  it("groups", () => {
    const round = (x: number) => Math.round(x * 10000) / 10000;
    for (const [recalls, groups, worst, means] of CASES.groups.cases) {
      const got = groupRecalls(recalls, groups);
      assert.deepEqual([round(got.worst), got.means.map(round)], [worst, means], JSON.stringify([recalls, groups]));
    }
  });
});
