// The golden request bodies of tests/unit/golden/, replayed by the TypeScript dialects as the behaviour cases are
// (tests/golden/behaviour_cases.json, behaviour.test.ts): a body both languages send is pinned by one file that both
// suites compare with, so the two cannot drift. Every golden file is either replayed here (or by the test named
// below) or named as a body only the Python side sends, with why; a new golden file fails until it is one of them.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { dialectOf, ENGINES } from "../src/engine-dialect.js";

const GOLDEN = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "unit", "golden");
const read = (name: string) => JSON.parse(readFileSync(join(GOLDEN, name), "utf8"));

/** Golden files both languages replay, and where TypeScript does. */
const SHARED: Record<string, string> = {
  "calibration_bodies.json": "this file",
  "engine_settings.json": "unit.test.ts, knn-width.test.ts",
  "access_roles.json": "access-query.test.ts",
};

/** Bodies only the Python side sends: ReMe's index set (chunks, files, links), its write protocol and search. */
const PYTHON_ONLY: Record<string, string> = {
  "chunks_index_elasticsearch.json": "ReMe's chunks index; Memorie's indices are memorie/templates/*.json",
  "chunks_index_opensearch.json": "ReMe's chunks index",
  "filter_clauses.json": "ReMe's SearchFilter; Memorie's filters are metadataClauses (dialect.ts)",
  "hybrid_body_elasticsearch.json": "ReMe's native hybrid search",
  "hybrid_body_opensearch.json": "ReMe's native hybrid search",
  "keyword_body.json": "ReMe's chunk text search",
  "knn_body_elasticsearch.json": "ReMe's chunk k-NN (Memorie's knnBody adds zero-vector entries)",
  "knn_body_opensearch.json": "ReMe's chunk k-NN",
  "pipeline_minmax.json": "ReMe's hybrid search pipelines",
  "pipeline_rrf.json": "ReMe's hybrid search pipelines",
  "pipeline_rrf_weighted.json": "ReMe's hybrid search pipelines",
  "protocol_changed_file.json": "ReMe's file write protocol",
  "protocol_delete.json": "ReMe's file write protocol",
  "protocol_failed_chunks.json": "ReMe's file write protocol",
  "protocol_lost_conditional_write.json": "ReMe's file write protocol",
  "protocol_new_file.json": "ReMe's file write protocol",
  "protocol_unchanged_chunks.json": "ReMe's file write protocol",
  "search_answer_lookups.json": "ReMe's search answer look-ups",
  "store_lookups.json": "ReMe's store look-ups",
  "memorie_tenant.json": "reme-es ui's listing and search of a Memorie tenant (Python's, read-only)",
};

describe("golden bodies shared with the Python side (tests/unit/golden/)", () => {
  it("every golden file is replayed here or named as Python's own", () => {
    const files = readdirSync(GOLDEN).filter((f) => f.endsWith(".json")).sort();
    const unplaced = files.filter((f) => !(f in SHARED) && !(f in PYTHON_ONLY));
    assert.deepEqual(unplaced, []);
    assert.deepEqual([...Object.keys(SHARED), ...Object.keys(PYTHON_ONLY)].filter((f) => !files.includes(f)), []);
  });

  const bodies = read("calibration_bodies.json");
  for (const engine of ENGINES) {
    it(`the k-NN width calibration's sample and exact bodies on ${engine} (calibration_bodies.json)`, () => {
      const d = dialectOf(engine);
      const given = bodies.input;
      assert.deepEqual(d.sampleBody(given.filter, given.sample, given.seed), bodies[engine].sample);
      assert.deepEqual(d.exactBody(given.vector, given.filter, given.exact_size), bodies[engine].exact);
    });
  }
});
