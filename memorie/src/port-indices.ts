/**
 * Typed requests of an index's own upkeep (port.ts has searches and documents): aliases, mappings and their
 * `_meta.reme_es`, settings, creation and deletion, the shape the k-NN width reads, and the analysis probe. The REST
 * paths and the answers' layout are here; indices.ts, bulk-load.ts and the stores speak in names and values.
 */
import type { IndexShape } from "./knn-width.js";
import type { Connection } from "./transport.js";

const q = encodeURIComponent;

/** The indices `alias` points at, or null when there is no such alias. */
export async function aliasTargets(conn: Connection, alias: string): Promise<string[] | null> {
  const found = await conn.request({ method: "GET", path: `/_alias/${q(alias)}`, accept: [404], what: `look up alias ${alias}` });
  return found.status === 404 ? null : Object.keys(found.body ?? {});
}

/** The `_meta.reme_es` of `index`'s mapping ({} when it has none). */
export async function remeMeta(conn: Connection, index: string): Promise<Record<string, any>> {
  const mapping = await conn.request({ method: "GET", path: `/${q(index)}/_mapping`, what: `read the mapping of ${index}` });
  return mapping.body?.[index]?.mappings?._meta?.reme_es ?? {};
}

/** Add the fields `properties` to `index`'s mapping and replace its `_meta.reme_es` with `remeEs`. */
export async function addFields(
  conn: Connection,
  index: string,
  properties: Record<string, unknown>,
  remeEs: Record<string, unknown>,
  what: string,
): Promise<void> {
  await conn.request({ method: "PUT", path: `/${q(index)}/_mapping`, body: { properties, _meta: { reme_es: remeEs } }, what });
}

/** `index.number_of_shards`, `number_of_replicas` and `auto_expand_replicas` of `index`, as the node reports them. */
export async function shardSettings(conn: Connection, index: string): Promise<Record<string, unknown>> {
  const r = await conn.request({
    method: "GET",
    path: `/${q(index)}/_settings`,
    query: { filter_path: "*.settings.index.number_of_shards,*.settings.index.number_of_replicas,*.settings.index.auto_expand_replicas" },
    what: `read the shards and replicas of ${index}`,
  });
  return (Object.values(r.body ?? {})[0] as any)?.settings?.index ?? {};
}

/** The index's own refresh_interval setting, or null when it has none (the node's default applies). */
export async function readInterval(conn: Connection, index: string): Promise<string | null> {
  const r = await conn.request({
    method: "GET",
    path: `/${q(index)}/_settings/index.refresh_interval`,
    what: `read the refresh interval of ${index}`,
  });
  const found = Object.values(r.body ?? {})[0] as any;
  const value = found?.settings?.index?.refresh_interval;
  return typeof value === "string" ? value : null;
}

/** Set the refresh_interval of `index` (null: back to the node's default). */
export async function putInterval(conn: Connection, index: string, value: string | null): Promise<void> {
  await conn.request({
    method: "PUT",
    path: `/${q(index)}/_settings`,
    body: { index: { refresh_interval: value } },
    what: `set the refresh interval of ${index} to ${value ?? "the default"}`,
  });
}

/** Why the node refused to create an index (HTTP 400): the error's type and reason. */
export interface CreateRefusal {
  type: string | undefined;
  reason: string;
}

/** Create `index` from `body` (settings, mappings, aliases); null when created, else the node's refusal. */
export async function createIndex(conn: Connection, index: string, body: unknown): Promise<CreateRefusal | null> {
  const created = await conn.request({ method: "PUT", path: `/${q(index)}`, body, accept: [400], what: `create index ${index}` });
  if (created.status !== 400) return null;
  const error = created.body?.error;
  return { type: error?.type, reason: String(error?.caused_by?.reason ?? error?.reason ?? "HTTP 400") };
}

/**
 * Delete `names`; a missing one is no error. `ignoreUnavailable`: one request for several, the missing ones skipped
 * by the node (else a missing index answers 404, which counts as done).
 */
export async function deleteIndices(conn: Connection, names: string[], what: string, ignoreUnavailable = false): Promise<void> {
  const path = `/${names.map(q).join(",")}`;
  await conn.request(
    ignoreUnavailable
      ? { method: "DELETE", path, query: { ignore_unavailable: "true" }, missingIndexOk: true, what }
      : { method: "DELETE", path, accept: [404], missingIndexOk: true, what },
  );
}

/** The shape from an index-stats answer (`_stats/docs,segments`), or undefined when it holds none. */
export function shapeOfStats(body: any): IndexShape | undefined {
  const primaries = body?._all?.primaries;
  const docs = primaries?.docs?.count;
  const segments = primaries?.segments?.count;
  return typeof docs === "number" && typeof segments === "number" ? { docs, segments } : undefined;
}

/** Entries and segments of the primaries of `alias` (index stats), or undefined when the answer holds none. */
export async function indexShape(conn: Connection, alias: string): Promise<IndexShape | undefined> {
  const r = await conn.request({
    method: "GET",
    path: `/${q(alias)}/_stats/docs,segments`,
    query: { filter_path: "_all.primaries.docs.count,_all.primaries.segments.count" },
    what: `read the size of ${alias}`,
  });
  return shapeOfStats(r.body);
}

/** Whether the node can stem English (`porter_stem`, from analysis-common; the Elasticsearch integ-test zip lacks it). */
export async function hasPorterStem(conn: Connection): Promise<boolean> {
  const r = await conn.request({
    method: "POST",
    path: "/_analyze",
    body: { tokenizer: "standard", filter: ["lowercase", "porter_stem"], text: "running" },
    accept: [400],
    what: "probe the porter_stem filter",
  });
  return r.status === 200 && r.body?.tokens?.[0]?.token === "run";
}
