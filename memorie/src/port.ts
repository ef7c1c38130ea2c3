/**
 * Typed requests under the modules that measure and record (as the Python side's `IndexPort`): the REST paths and
 * the answers' layout of the k-NN width calibration, so that `knn-calibration.ts` speaks in ids, scores, sources and
 * times. The bodies come from the engine dialects (`engine-dialect.ts`).
 */
import type { Connection } from "./transport.js";

/** One search of a timed `_msearch`: its server time (ms) and its hits' (id, score), best first. */
export interface Timed {
  tookMs: number;
  ranked: [string, number][];
}

interface Answer {
  took?: number;
  error?: unknown;
  hits?: { hits?: { _id: string; _score: number; _source?: Record<string, unknown> }[] };
}

/**
 * Searches of `alias` in one `_msearch` run one at a time (so each answer's `took` is its own search's): per search
 * its server time and its hits' (id, score). A failed one throws, naming `what`.
 */
export async function timedSearches(conn: Connection, alias: string, bodies: unknown[], what: string): Promise<Timed[]> {
  const lines = bodies.flatMap((b) => [JSON.stringify({ index: alias }), JSON.stringify(b)]).join("\n") + "\n";
  const query = { max_concurrent_searches: "1" };
  const r = await conn.request({ method: "POST", path: "/_msearch", query, body: lines, what });
  const answers: Answer[] = (r.body as { responses?: Answer[] } | undefined)?.responses ?? [];
  for (const a of answers) if (a.error) throw conn.error(`${what}: ${JSON.stringify(a.error).slice(0, 600)}`);
  return answers.map((a) => ({ tookMs: a.took ?? 0, ranked: (a.hits?.hits ?? []).map((h) => [h._id, h._score]) }));
}

/** The `_source` of each hit of one search of `alias`. */
export async function searchSources(conn: Connection, alias: string, body: unknown, what: string): Promise<Record<string, unknown>[]> {
  const r = await conn.request({ method: "POST", path: `/${alias}/_search`, body, what });
  const answer = r.body as Answer | undefined;
  return (answer?.hits?.hits ?? []).map((h) => h._source ?? {});
}

/** Replace the `_meta.reme_es` of the index behind `alias` (its other mappings unchanged). */
export async function putMeta(conn: Connection, alias: string, remeEs: Record<string, unknown>, what: string): Promise<void> {
  await conn.request({ method: "PUT", path: `/${alias}/_mapping`, body: { _meta: { reme_es: remeEs } }, what });
}
