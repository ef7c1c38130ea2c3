/** Versioned indices behind aliases: find the one an alias points at, or create it with the alias in one request. */
import type { Connection } from "./connection.js";
import { type IndexKind, indexNames, renderIndex, type RenderOptions } from "./dialect.js";

export interface IndexInfo {
  alias: string;
  index: string;
  /** `_meta.reme_es` of the index: template_version, stemming, dims. */
  meta: Record<string, any>;
}

/** The index behind `<prefix>-memorie-<kind>`, or null when there is none yet. */
export async function findIndex(conn: Connection, prefix: string, kind: IndexKind): Promise<IndexInfo | null> {
  const { alias, version } = indexNames(prefix, kind);
  const found = await conn.request({
    method: "GET",
    path: `/_alias/${encodeURIComponent(alias)}`,
    accept: [404],
    what: `look up alias ${alias}`,
  });
  if (found.status === 404) return null;
  const names = Object.keys(found.body ?? {});
  if (names.length !== 1) {
    throw conn.error(`alias ${alias} points at ${names.length} indices (${names.join(", ")}); it must name exactly one`);
  }
  const index = names[0] as string;
  const mapping = await conn.request({
    method: "GET",
    path: `/${encodeURIComponent(index)}/_mapping`,
    what: `read the mapping of ${index}`,
  });
  const meta = mapping.body?.[index]?.mappings?._meta?.reme_es ?? {};
  if (meta.kind !== `memorie-${kind}`) {
    throw conn.error(`index ${index} (alias ${alias}) was not created by reme-es-memorie as a ${kind} index; ` +
      "choose another indexPrefix");
  }
  if (meta.template_version !== version) {
    throw conn.error(
      `index ${index} has template version ${meta.template_version} but this package writes version ${version}; ` +
        `rebuild it: create the stores with a new indexPrefix and run Memorie's reindex(), then drop the old indices`,
    );
  }
  return { alias, index, meta };
}

/** The index of `kind`, created (versioned name, alias, template) if missing; concurrent creators agree. */
export async function ensureIndex(
  conn: Connection,
  prefix: string,
  kind: IndexKind,
  options: () => Promise<RenderOptions> | RenderOptions,
): Promise<IndexInfo> {
  const existing = await findIndex(conn, prefix, kind);
  if (existing) return existing;
  const { alias, index } = indexNames(prefix, kind);
  const body = renderIndex(kind, conn.engine, alias, await options());
  const created = await conn.request({
    method: "PUT",
    path: `/${encodeURIComponent(index)}`,
    body,
    accept: [400],
    what: `create index ${index}`,
  });
  if (created.status === 400) {
    const type = created.body?.error?.type;
    if (type === "invalid_alias_name_exception") throw concreteIndexAtAlias(conn, alias, index);
    if (type !== "resource_already_exists_exception") {
      const reason = created.body?.error?.caused_by?.reason ?? created.body?.error?.reason ?? "HTTP 400";
      const hint = /knn_vector/.test(String(reason)) ? " (the OpenSearch node needs the k-NN plugin)" : "";
      throw conn.error(`create index ${index} failed: ${type}: ${reason}${hint}`, { status: 400, reason });
    }
  }
  const info = await findIndex(conn, prefix, kind);
  if (!info) throw conn.error(`index ${index} exists but alias ${alias} does not point at it; delete ${index} or fix the alias`);
  return info;
}

/** The error when a concrete index holds the alias name (a write without `require_alias` auto-created it). */
function concreteIndexAtAlias(conn: Connection, alias: string, index: string) {
  return conn.error(
    `cannot create ${index} behind alias ${alias}: an index named ${alias} exists (not an alias). A write that did not ` +
      "require the alias (an older reme-es-memorie, or another client) created it with a dynamic mapping after the " +
      `store's index was deleted. Copy out any documents you need, delete that index (DELETE /${alias}), then ` +
      "create the store again",
    { status: 400, details: { alias, index } },
  );
}

/** Delete the index behind `<prefix>-memorie-<kind>` (and so its alias); nothing to do when there is none. */
export async function dropIndex(conn: Connection, prefix: string, kind: IndexKind): Promise<void> {
  const info = await findIndex(conn, prefix, kind).catch(() => null);
  const { index } = indexNames(prefix, kind);
  const name = info?.index ?? index;
  await conn.request({
    method: "DELETE",
    path: `/${encodeURIComponent(name)}`,
    accept: [404],
    missingIndexOk: true,
    what: `delete index ${name}`,
  });
}

/** Every id in an index, in id order, a page at a time (search_after on `id`: no 10,000-hit window). */
export async function allIds(conn: Connection, alias: string, pageSize = 5000): Promise<string[]> {
  const { idPageBody } = await import("./dialect.js");
  const ids: string[] = [];
  let after: string | undefined;
  await conn.beforeRead(alias);
  for (;;) {
    const r = await conn.request({
      method: "POST",
      path: `/${encodeURIComponent(alias)}/_search`,
      body: idPageBody(pageSize, after),
      what: `list ids of ${alias}`,
    });
    const hits: any[] = r.body?.hits?.hits ?? [];
    for (const h of hits) ids.push(h._id);
    if (hits.length < pageSize) return ids;
    after = hits[hits.length - 1].sort[0];
  }
}
