/**
 * Typed requests under the stores (as the Python side's `IndexPort`): the REST paths and the answers' layout of
 * searches and single documents, and of the k-NN width calibration, so that the stores speak in ids, scores, sources
 * and times. The bodies come from the dialects (`dialect.ts`, `engine-dialect.ts`). The index's own upkeep is in
 * port-indices.ts, forget's in port-upkeep.ts, snapshots in port-snapshots.ts.
 */
import type { Connection } from "./transport.js";
import type { Clause } from "./types.js";

const q = encodeURIComponent;

/** One hit of a search: its id, score (null when the search tracks none), `_source` ({} when not asked), sort key. */
export interface Hit<S = Record<string, unknown>> {
  id: string;
  score: number | null;
  source: S;
  sort: unknown[];
}

interface RawHit {
  _id: string;
  _score?: number | null;
  _source?: unknown;
  sort?: unknown[];
}

/** The hits of one search of `index`, best (or first in its sort) first. */
export async function searchHits<S = Record<string, unknown>>(conn: Connection, index: string, body: Clause, what: string): Promise<Hit<S>[]> {
  const r = await conn.request({ method: "POST", path: `/${q(index)}/_search`, body, what });
  const hits: RawHit[] = (r.body as { hits?: { hits?: RawHit[] } } | undefined)?.hits?.hits ?? [];
  return hits.map((h) => ({ id: h._id, score: h._score ?? null, source: (h._source ?? {}) as S, sort: h.sort ?? [] }));
}

/**
 * The hits of a search of `index` a page of `size` at a time, each page's body from the sort key of the last hit
 * before it (`search_after`: no result window); ends at the first page shorter than `size`.
 */
export async function* searchPages<S = Record<string, unknown>>(
  conn: Connection,
  index: string,
  body: (after: unknown[] | undefined) => Clause,
  size: number,
  what: string,
): AsyncGenerator<Hit<S>[]> {
  let after: unknown[] | undefined;
  for (;;) {
    const hits = await searchHits<S>(conn, index, body(after), what);
    if (hits.length > 0) yield hits;
    if (hits.length < size) return;
    after = hits[hits.length - 1]!.sort;
  }
}

/** How many documents of `index` `query` matches. */
export async function countOf(conn: Connection, index: string, query: Clause, what: string): Promise<number> {
  const r = await conn.request({ method: "POST", path: `/${q(index)}/_count`, body: { query }, what });
  return Number((r.body as { count?: number } | undefined)?.count ?? 0);
}

/** Write the document `id` of `alias` under the store's refresh policy (the target must be an alias). */
export async function putDoc(conn: Connection, alias: string, id: string, doc: Record<string, unknown>, what: string): Promise<void> {
  await conn.write(alias, { method: "PUT", path: `/${q(alias)}/_doc/${q(id)}`, query: conn.indexQuery(), body: doc, what });
}

/** Delete the document `id` of `alias` under the store's refresh policy (a missing one counts as deleted). */
export async function deleteDoc(conn: Connection, alias: string, id: string, what: string): Promise<void> {
  await conn.write(alias, { method: "DELETE", path: `/${q(alias)}/_doc/${q(id)}`, accept: [404], what });
}

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
