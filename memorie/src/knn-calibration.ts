/**
 * The k-NN width measured on the index itself (issue 40; the Python side: reme_es/store/calibration.py). A width rule
 * fitted to one data shape (`knn-width.ts`) does not hold on another, so stored vectors are sampled and turned into
 * probe queries (part of each vector kept, noise added: real queries are not stored vectors; a light and a heavy
 * group, as how much of an entry a real query names differs from one use to another), their exact neighbours come
 * from an exact scoring query on the node (OpenSearch `knn_score`, Elasticsearch painless `cosineSimilarity`; without
 * painless the widest k-NN search stands in), and the approximate k-NN at the callers' depth runs at widths of a
 * ladder until recall@10 reaches the target in every group (the worst group decides). The record (width, recall,
 * what it was measured on) is kept in the index's `_meta.reme_es`; search reads it and falls back to `knnWidth` while
 * none is recorded. The rule and its numbers are shared (`engine_settings.json` `knn_calibration`).
 */
import { type Clause, dialectOf, idsAndScores } from "./engine-dialect.js";
import type { IndexShape } from "./knn-width.js";
import { putMeta, searchSources, type Timed, timedSearches } from "./port.js";
import { SETTINGS } from "./settings.js";
import type { Connection } from "./transport.js";
import { knnBody } from "./vector-dialect.js";

export const CALIBRATION = SETTINGS.knn_calibration;

/** One width tried: recall@`at` of the worst probe group and of each, and the median server time of one search (ms). */
export interface CalibrationStep {
  width: number;
  /** The worst probe group's (what the climb compares with the target). */
  recall: number;
  tookMs: number;
  /** Recall@`at` of each probe group (`knn_calibration.probes`). */
  groups?: number[];
}

/** A measured width and what it was measured on (kept in `_meta.reme_es.knn_width`, snake_case as Python writes it). */
export interface Calibration {
  width: number;
  recall: number;
  target: number;
  reached: boolean;
  /** Why the climb stopped: "target", "max_width" or "latency_budget". */
  stopped: string;
  depth: number;
  at: number;
  docs: number;
  segments: number;
  sample: number;
  /** "exact" (an exact scoring query) or "widest" (the widest k-NN search: no scripts on the node). */
  reference: string;
  measured_at: string;
  seconds: number;
  requests: number;
  /** [width, recall, median took ms] of every width tried. */
  steps: [number, number, number][];
  /** Each probe group's recall at the chosen width (records before the probe groups have none). */
  groups?: number[];
}

export interface CalibrateOptions {
  /** Probe queries to use instead of perturbed stored vectors (e.g. logged real queries). */
  queries?: number[][];
  sample?: number;
  target?: number;
  budgetMs?: number;
  maxWidth?: number;
  depth?: number;
  /** Keep the record in the index's `_meta` (default true). */
  record?: boolean;
}

/** The record in a `_meta.reme_es`, or undefined when there is none (or it is not a record). */
export function calibrationOfMeta(meta: Record<string, any> | undefined): Calibration | undefined {
  const raw = meta?.[CALIBRATION.meta_key];
  return raw && Number.isInteger(raw.width) && raw.width >= 1 ? (raw as Calibration) : undefined;
}

/** The width for the `k` nearest from a record: scaled by k / depth above the depth it was measured for, and in
 * proportion to the growth of entries per segment since (when the shape is known: a merge into larger segments needs
 * about proportionally more, docs/benchmarks.md; wider only costs time). */
export function calibratedWidth(c: Calibration, k: number, shape?: IndexShape): number {
  let width = c.width * Math.max(1, k / Math.max(1, c.depth));
  if (shape && shape.docs > 0 && c.docs > 0) {
    const then = Math.max(1, c.docs / Math.max(1, c.segments));
    width *= Math.max(1, shape.docs / Math.max(1, shape.segments) / then);
  }
  return Math.max(k, Math.min(CALIBRATION.max_width, Math.ceil(width)));
}

/** Whether the index should be calibrated (again): `knn_calibration.due_rule`. */
export function calibrationDue(c: Calibration | undefined, shape: IndexShape): boolean {
  if (!c) return shape.docs >= CALIBRATION.min_docs;
  const ratio = CALIBRATION.recalibrate_ratio;
  const moved = (now: number, then: number) => Math.max(now, then) >= ratio * Math.max(Math.min(now, then), 1e-9);
  return moved(shape.docs, c.docs) || moved(shape.docs / Math.max(1, shape.segments), c.docs / Math.max(1, c.segments));
}

/** A seeded uniform generator in [0, 1) (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Probe queries from stored vectors, dealt in turn to the groups of `knn_calibration.probes` (vector i to group
 * i mod groups): each coordinate kept with probability 1 - the group's dropout, then Gaussian noise of the group's
 * `noise` x the vector's norm spread over the coordinates (the same rule as Python's, not the same numbers; `groups`
 * other than the rule's: for measuring probe sets, scripts/calibration-bench.mjs). */
export function probeQueries(
  vectors: number[][],
  seed = CALIBRATION.seed,
  groups: { dropout: number; noise: number }[] = CALIBRATION.probes,
): number[][] {
  const r = random(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  return vectors.map((v, i) => {
    const group = groups[i % groups.length] as { dropout: number; noise: number };
    const keep = 1 - group.dropout;
    const norm = Math.hypot(...v) || 1;
    const sigma = (group.noise * norm) / Math.sqrt(Math.max(1, v.length));
    return v.map((x) => (r() < keep ? x : 0) + gauss() * sigma);
  });
}

/** The mean recall of each group of queries (query i in group i mod `groups`, as `probeQueries` deals them) and the
 * worst of them, which is what must reach the target (the callers' own queries: one group). */
export function groupRecalls(recalls: number[], groups: number): { worst: number; means: number[] } {
  const g = Math.max(1, groups);
  const means: number[] = [];
  for (let k = 0; k < g; k++) {
    const mine = recalls.filter((_, i) => i % g === k);
    if (mine.length > 0) means.push(mine.reduce((s, x) => s + x, 0) / mine.length);
  }
  return { worst: means.length > 0 ? Math.min(...means) : 1, means };
}

/** Share of the exact top `at` found in the approximate top `at`; entries tied with the `at`-th exact score count. */
export function recallAt(approx: string[], exact: [string, number][], at: number): number {
  if (exact.length === 0) return 1;
  const n = Math.min(at, exact.length);
  const last = (exact[n - 1] as [string, number])[1];
  const floor = last - 1e-6 * Math.max(1, Math.abs(last));
  const good = new Set(exact.filter(([, s]) => s >= floor).map(([id]) => id));
  return Math.min(n, approx.slice(0, at).filter((id) => good.has(id)).length) / n;
}

/** Try `widths` in order until one reaches `target`; a width whose median took passes `budgetMs` stops the climb, as
 * does the end of the ladder. The chosen step: the first reaching the target, else the best recall within budget. */
export async function climb(
  widths: number[],
  measure: (width: number) => Promise<CalibrationStep>,
  target: number,
  budgetMs: number | undefined,
): Promise<{ chosen: CalibrationStep; stopped: string; steps: CalibrationStep[] }> {
  const steps: CalibrationStep[] = [];
  const best = (s: CalibrationStep[]) => s.reduce((a, b) => (b.recall > a.recall ? b : a));
  for (const width of widths) {
    const step = await measure(width);
    if (budgetMs !== undefined && step.tookMs > budgetMs && steps.length > 0) {
      const within = best(steps);
      steps.push(step);
      return { chosen: within, stopped: "latency_budget", steps };
    }
    steps.push(step);
    if (step.recall >= target) return { chosen: step, stopped: "target", steps };
    if (budgetMs !== undefined && step.tookMs > budgetMs) return { chosen: step, stopped: "latency_budget", steps };
  }
  return { chosen: best(steps), stopped: "max_width", steps };
}

/** The widths to try for the callers' depth (none below it: the engines need width >= k). */
export function ladder(depth: number, maxWidth = CALIBRATION.max_width): number[] {
  const widths = CALIBRATION.widths.filter((w) => w >= depth && w <= maxWidth);
  return widths.length > 0 ? widths : [Math.max(depth, Math.min(maxWidth, CALIBRATION.max_width))];
}

const median = (xs: number[]) => {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? 0 : s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** The probe queries: the callers' own (one group), else perturbed stored vectors of a sample (`probeQueries`). */
async function probesOf(
  conn: Connection,
  alias: string,
  filter: Clause | undefined,
  o: CalibrateOptions,
): Promise<{ queries: number[][]; groups: number; requests: number }> {
  if (o.queries) return { queries: o.queries, groups: 1, requests: 0 };
  const body = dialectOf(conn.engine).sampleBody(filter, o.sample ?? CALIBRATION.sample, CALIBRATION.seed);
  const sources = await searchSources(conn, alias, body, `sample vectors of ${alias}`);
  const queries = probeQueries(sources.map((s) => s.embedding).filter((v): v is number[] => Array.isArray(v)));
  return { queries, groups: CALIBRATION.probes.length, requests: 1 };
}

/** The neighbours recall is measured against: exact (a scoring script), else the widest k-NN search of the ladder. */
async function referenceOf(
  conn: Connection,
  alias: string,
  queries: number[][],
  filter: Clause | undefined,
  approx: (q: number[], width: number, size: number) => Clause,
  widest: number,
): Promise<{ exact: Timed[]; reference: string; requests: number }> {
  const exactSize = CALIBRATION.bodies.exact_per_at * CALIBRATION.at;
  const dialect = dialectOf(conn.engine);
  try {
    const bodies = queries.map((q) => dialect.exactBody(q, filter, exactSize));
    return { exact: await timedSearches(conn, alias, bodies, "exact neighbours"), reference: "exact", requests: 1 };
  } catch (exc) {
    if (!/script|painless/.test(String((exc as Error).message))) throw exc;
    const bodies = queries.map((q) => approx(q, widest, exactSize));
    return { exact: await timedSearches(conn, alias, bodies, "widest neighbours"), reference: "widest", requests: 2 };
  }
}

const round4 = (x: number) => Math.round(x * 10000) / 10000;

/**
 * Measure the smallest width whose recall@10 at the callers' depth reaches the target on the index behind `alias`,
 * searching with `filter` (a scoped store's scope) as searches do, and record it in the index's `_meta.reme_es`
 * (`meta`: the index's current `_meta.reme_es`, kept). The index should be refreshed.
 */
export async function calibrateIndex(
  conn: Connection,
  alias: string,
  meta: Record<string, any>,
  shape: IndexShape,
  filter: Clause | undefined,
  o: CalibrateOptions = {},
): Promise<Calibration> {
  const started = Date.now();
  const target = o.target ?? CALIBRATION.target_recall;
  const depth = o.depth ?? CALIBRATION.depth;
  const at = CALIBRATION.at;
  const top = o.maxWidth ?? CALIBRATION.max_width;
  const { queries, groups, requests: sampled } = await probesOf(conn, alias, filter, o);
  if (queries.length === 0) throw conn.error(`index ${alias} holds no vectors to calibrate on`);
  const approx = (q: number[], width: number, size: number) => idsAndScores(knnBody(conn.engine, q, depth, filter, width), size);
  const { exact, reference, requests: referred } = await referenceOf(conn, alias, queries, filter, approx, ladder(depth, top).at(-1) as number);
  let requests = sampled + referred;
  const truth = exact.map((a) => a.ranked);
  const measure = async (width: number): Promise<CalibrationStep> => {
    const out = await timedSearches(conn, alias, queries.map((q) => approx(q, width, at)), `k-NN at width ${width}`);
    requests++;
    const found = out.map((a, i) => recallAt(a.ranked.map(([id]) => id), truth[i] ?? [], at));
    const { worst, means } = groupRecalls(found, groups);
    return { width, recall: worst, tookMs: median(out.map((a) => a.tookMs)), groups: means };
  };
  const { chosen, stopped, steps } = await climb(ladder(depth, top), measure, target, o.budgetMs ?? CALIBRATION.latency_budget_ms);
  const result: Calibration = {
    width: chosen.width,
    recall: round4(chosen.recall),
    target,
    reached: chosen.recall >= target,
    stopped,
    depth,
    at,
    docs: shape.docs,
    segments: shape.segments,
    sample: queries.length,
    reference,
    measured_at: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    seconds: Math.round((Date.now() - started) / 10) / 100,
    // its cost as measured up to here, the request that records it counted
    requests: requests + (o.record !== false ? 1 : 0),
    steps: steps.map((s) => [s.width, round4(s.recall), Math.round(s.tookMs * 10) / 10]),
    groups: (chosen.groups ?? []).map(round4),
  };
  if (o.record !== false) {
    await putMeta(conn, alias, { ...meta, [CALIBRATION.meta_key]: result }, `record the k-NN width of ${alias}`);
  }
  return result;
}
