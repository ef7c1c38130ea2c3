/** Versioned indices behind aliases: find the one an alias points at, or create it with the alias in one request. */
import type { Connection } from "./connection.js";
import {
  type IndexKind,
  type IndexLayout,
  indexNames,
  layoutMismatches,
  loadTemplate,
  renderIndex,
  type RenderOptions,
} from "./dialect.js";
import { searchPages } from "./port.js";
import { addFields, aliasTargets, createIndex, deleteIndices, remeMeta, shardSettings } from "./port-indices.js";

export interface IndexInfo {
  alias: string;
  index: string;
  /** `_meta.reme_es` of the index: template_version, stemming, dims. */
  meta: Record<string, any>;
}

/** The index behind `<prefix>-memorie-<kind>`, or null when there is none yet. */
export async function findIndex(conn: Connection, prefix: string, kind: IndexKind): Promise<IndexInfo | null> {
  const { alias, version } = indexNames(prefix, kind);
  const names = await aliasTargets(conn, alias);
  if (names === null) return null;
  if (names.length !== 1) {
    throw conn.error(`alias ${alias} points at ${names.length} indices (${names.join(", ")}); it must name exactly one`);
  }
  const index = names[0] as string;
  const meta = await remeMeta(conn, index);
  if (meta.kind !== `memorie-${kind}`) {
    throw conn.error(`index ${index} (alias ${alias}) was not created by reme-es-memorie as a ${kind} index; ` +
      "choose another indexPrefix");
  }
  if (kind === "relations" && meta.template_version === 1 && version === 2) {
    return { alias, index, meta: await upgradeRelations(conn, index, meta) };
  }
  if (meta.template_version !== version) {
    throw conn.error(
      `index ${index} has template version ${meta.template_version} but this package writes version ${version}; ` +
        `rebuild it: create the stores with a new indexPrefix and run Memorie's reindex(), then drop the old indices`,
    );
  }
  return { alias, index, meta };
}

/**
 * Relations index version 1 had no scope fields; version 2 adds them (a mapping change that adds fields only, made in
 * place). Relations written before carry no scope, so `forget` does not find them.
 */
async function upgradeRelations(conn: Connection, index: string, meta: Record<string, any>): Promise<Record<string, any>> {
  const template = loadTemplate("relations");
  const added = Object.fromEntries(
    Object.entries(template.mappings.properties).filter(([name]) => /^(from|to)_(tenant_id|namespace|subject_id)$/.test(name)),
  );
  const upgraded = { ...meta, template_version: template.version };
  await addFields(conn, index, added, upgraded, `add the scope fields of template version ${template.version} to ${index}`);
  return upgraded;
}

/**
 * Check that an existing index has the shards and replicas the options ask for (nothing asked: nothing checked).
 * The number of shards is fixed when an index is created; replicas can be changed, but not behind the back of the
 * other processes that share the index, so a difference is an error that says what to do.
 */
export async function checkLayout(conn: Connection, info: IndexInfo, layout: IndexLayout): Promise<void> {
  if (layout.shards === undefined && layout.replicas === undefined) return;
  const settings = await shardSettings(conn, info.index);
  const problems = layoutMismatches(layout, settings);
  if (problems.length === 0) return;
  const fixReplicas = layout.replicas === undefined ? "" :
    ` To change the replicas of the existing index: PUT /${info.index}/_settings ` +
    `{"index": {"number_of_replicas": ${layout.replicas}, "auto_expand_replicas": false}}.`;
  throw conn.error(
    `index ${info.index} (alias ${info.alias}) exists with other settings: ${problems.join("; ")}.${fixReplicas} ` +
      "The number of shards is fixed at creation: for another one, create the stores with a new indexPrefix and " +
      "rebuild (Memorie's reindex()). Or leave shards/replicas out to open the index as it is",
    { details: { index: info.index, asked: { ...layout }, settings } },
  );
}

/** The index of `kind`, created (versioned name, alias, template) if missing; concurrent creators agree. */
export async function ensureIndex(
  conn: Connection,
  prefix: string,
  kind: IndexKind,
  options: () => Promise<RenderOptions> | RenderOptions,
  layout: IndexLayout = {},
): Promise<IndexInfo> {
  const existing = await findIndex(conn, prefix, kind);
  if (existing) {
    await checkLayout(conn, existing, layout);
    return existing;
  }
  const { alias, index } = indexNames(prefix, kind);
  const body = renderIndex(kind, conn.engine, alias, { ...(await options()), ...layout });
  const refused = await createIndex(conn, index, body);
  if (refused !== null) {
    const { type, reason } = refused;
    if (type === "invalid_alias_name_exception") throw concreteIndexAtAlias(conn, alias, index);
    if (type !== "resource_already_exists_exception") {
      const hint = /knn_vector/.test(reason) ? " (the OpenSearch node needs the k-NN plugin)" : "";
      throw conn.error(`create index ${index} failed: ${type}: ${reason}${hint}`, { status: 400, reason });
    }
  }
  const info = await findIndex(conn, prefix, kind);
  if (!info) throw conn.error(`index ${index} exists but alias ${alias} does not point at it; delete ${index} or fix the alias`);
  if (refused !== null) await checkLayout(conn, info, layout); // another process created it first
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
  await deleteIndices(conn, [name], `delete index ${name}`);
}

/** Every id in an index, in id order, a page at a time (search_after on `id`: no 10,000-hit window). */
export async function allIds(conn: Connection, alias: string, pageSize = 5000): Promise<string[]> {
  const { idPageBody } = await import("./dialect.js");
  const ids: string[] = [];
  await conn.beforeRead(alias);
  const body = (after: unknown[] | undefined) => idPageBody(pageSize, after?.[0] as string | undefined);
  for await (const hits of searchPages(conn, alias, body, pageSize, `list ids of ${alias}`)) ids.push(...hits.map((h) => h.id));
  return ids;
}
