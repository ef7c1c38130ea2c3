/**
 * The cluster settings this package shares with the Python side (`reme_es/engine_settings.json`): the vector
 * mapping of each engine, the HNSW defaults, the statuses worth retrying, the k-NN candidate rule and the
 * index-prefix rule. Both test suites check them against `tests/unit/golden/engine_settings.json`.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url)); // dist/src

/** Where the data files are: dist/templates (built or packed), then the source folders of the repository. */
export const dataDirs: readonly string[] = [
  join(here, "..", "templates"),
  join(here, "..", "..", "templates"),
  join(here, "..", "..", "..", "reme_es"),
];

/** A JSON data file of this package, from the first of `dataDirs` that holds it. */
export function readDataFile(name: string): any {
  for (const dir of dataDirs) {
    try {
      return JSON.parse(readFileSync(join(dir, name), "utf8"));
    } catch (exc) {
      if ((exc as NodeJS.ErrnoException).code !== "ENOENT") throw exc;
    }
  }
  throw new Error(`${name} not found in ${dataDirs.join(" or ")}; run \`npm run build\``);
}

interface EngineSettings {
  hnsw: { m: number; ef_construction: number };
  knn_candidates: { factor: number; min: number; max: number };
  retried_statuses: number[];
  index_prefix: { pattern: string };
  vector_mapping: Record<"opensearch" | "elasticsearch", Record<string, unknown>>;
}

export const SETTINGS: EngineSettings = readDataFile("engine_settings.json");

export const HNSW = { m: SETTINGS.hnsw.m, efConstruction: SETTINGS.hnsw.ef_construction } as const;

export const INDEX_PREFIX = new RegExp(SETTINGS.index_prefix.pattern);

const RETRIED = new Set(SETTINGS.retried_statuses);

/** Statuses worth sending again: the node was busy or failing, not the request wrong. */
export function isRetryableStatus(status: number | undefined): boolean {
  return status !== undefined && RETRIED.has(status);
}

/** How many candidates an HNSW search keeps per segment for the k nearest: factor × k, within [min, max]. */
export function knnCandidates(k: number): number {
  const rule = SETTINGS.knn_candidates;
  return Math.min(rule.max, Math.max(rule.min, rule.factor * k));
}

/** The vector field mapping of one engine with its placeholders (`$dims`, `$m`, `$ef_construction`) filled. */
export function vectorMapping(
  engine: "opensearch" | "elasticsearch",
  dims: number,
  m: number = HNSW.m,
  efConstruction: number = HNSW.efConstruction,
): Record<string, unknown> {
  const values: Record<string, number> = { $dims: dims, $m: m, $ef_construction: efConstruction };
  const fill = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(fill);
    if (node !== null && typeof node === "object") {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, fill(v)]));
    }
    return typeof node === "string" && Object.hasOwn(values, node) ? values[node] : node;
  };
  return fill(SETTINGS.vector_mapping[engine]) as Record<string, unknown>;
}
