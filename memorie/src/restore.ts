/**
 * The restore of one tenant from a snapshot of a store's indices (`restoreTenant`; `createSnapshot` in snapshot.ts
 * makes them), the other tenants and their later writes untouched. Additions beyond Memorie's interfaces, as `forget`
 * is; the projections can also be rebuilt from Memorie's canonical store (its `reindex()`), this is for when that
 * store was restored too, or is slower to replay.
 *
 * `restoreTenant`, in this order:
 *
 * 1. The snapshot's indices of the prefix (`<prefix>-memorie-<kind>-v<n>`, the kinds it holds) are restored under
 *    temporary names outside the prefix (`restore-<token>-<index>`), without their aliases and without replicas.
 * 2. Checks, before anything live is changed: each kind has a live index of the same template version (and, for
 *    vectors, the same dimension); the snapshot holds at least one document of the tenant; no id of the tenant's
 *    snapshot documents belongs to another tenant's document in the live index (the copy would overwrite it).
 * 3. Copy: the tenant's documents of each copy are written into the live alias with their ids and sources (a
 *    search_after scan and bulk index requests), replacing the live versions of the same ids. Vectors come with their
 *    `_source` (on Elasticsearch 9.2+, which keeps them out of the stored `_source`, the read asks for them back).
 * 4. Remove: the tenant's live documents whose id the snapshot does not hold (written after it) are deleted.
 * 5. The live indices are refreshed and must hold exactly as many documents of the tenant as the copies.
 * 6. The copies are deleted, whether the restore succeeded or not.
 *
 * Copy before remove: no record the snapshot holds is ever missing from the live index, so a reader of the tenant
 * sees each record at its current or its snapshot version (and, until step 4, also the records written after the
 * snapshot), never an empty tenant; a restore that stops half way leaves the tenant with more, not fewer, records,
 * and running it again finishes it. The copy is a scan and bulk, not `_reindex`: `_reindex` and `_delete_by_query`
 * come from the `reindex` module, which the Elasticsearch 9 and OpenSearch 2.19 integ-test nodes lack, and the scan
 * is what `forget` falls back to anyway. Writers of the tenant must be stopped while it runs (their writes would be
 * deleted or overwritten, and make the counts differ); writers of other tenants may go on.
 */
import { randomBytes } from "node:crypto";

import { sendPages } from "./bulk-load.js";
import { connect, type ConnectionOptions } from "./connection.js";
import { forgetQuery, type IndexKind, matchingIdsBody } from "./dialect.js";
import { dialectOf, idsAmongBody, idsOutsideBody, withSource } from "./engine-dialect.js";
import { RestoreError } from "./errors.js";
import { pageSize } from "./forget.js";
import { findIndex, type IndexInfo } from "./indices.js";
import { countMismatches, KINDS, type KindPlan, planRestore, type RestorePlan } from "./restore-plan.js";
import { DEFAULT_TIMEOUT_MS, readSnapshot } from "./snapshot.js";
import type { BulkOp, Connection } from "./transport.js";

/** Documents (with their sources, vectors included) per page of the copy. */
const COPY_PAGE = 500;

type Query = Record<string, unknown>;
const q = encodeURIComponent;

function checkTenantOptions(o: RestoreTenantOptions | undefined): RestoreTenantOptions {
  for (const key of ["repository", "snapshot", "tenantId"] as const) {
    const v = o?.[key];
    if (typeof v !== "string" || v.trim() === "") {
      throw new RestoreError(`restoreTenant: ${key} must be a non-empty string, not ${JSON.stringify(v)}`);
    }
  }
  return o as RestoreTenantOptions;
}

export interface RestoreTenantOptions {
  /** The cluster's snapshot repository (its registered name). */
  repository: string;
  snapshot: string;
  /** The tenant whose documents go back to the snapshot's (memories' `tenant_id`, vectors' `tenantId` metadata,
   *  relations with either end in the tenant: the scope of `forget`). */
  tenantId: string;
  /** How long to wait for the snapshot's indices to be restored (default 30 minutes). */
  timeoutMs?: number;
}

export interface RestoredKind {
  /** The snapshot's index it came from. */
  from: string;
  /** The tenant's documents in the snapshot, written back (their count in the live index after the restore). */
  restored: number;
  /** The tenant's live documents before the restore. */
  before: number;
  /** Of those, deleted because the snapshot does not hold them (written after it). */
  removed: number;
}

export interface RestoreTenantResult {
  repository: string;
  snapshot: string;
  indexPrefix: string;
  tenantId: string;
  /** Per kind the snapshot holds. */
  kinds: Partial<Record<IndexKind, RestoredKind>>;
  /** Kinds with a live index that the snapshot does not hold: left as they are. */
  skipped: IndexKind[];
  seconds: number;
}

/** Wait until every primary shard of `indices` is restored (health yellow), up to `timeoutMs`. */
async function waitRestored(conn: Connection, indices: string[], timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  const names = indices.map(q).join(",");
  for (;;) {
    const left = Math.max(1, Math.min(20, Math.floor((until - Date.now()) / 1000)));
    const r = await conn.request({
      method: "GET",
      path: `/_cluster/health/${names}`,
      query: { wait_for_status: "yellow", timeout: `${left}s` },
      accept: [408],
      missingIndexOk: true,
      what: `wait for the restore of ${indices.join(", ")}`,
    });
    if (!r.body?.timed_out && r.body?.status !== "red") return;
    if (Date.now() > until) {
      throw conn.error(`the restore of ${indices.join(", ")} had not ended after ${timeoutMs} ms (health ` +
        `${r.body?.status}); GET /_cat/recovery/${indices.join(",")} shows where it is`);
    }
  }
}

async function countOf(conn: Connection, index: string, query: Query): Promise<number> {
  const r = await conn.request({ method: "POST", path: `/${q(index)}/_count`, body: { query }, what: `count in ${index}` });
  return Number(r.body?.count ?? 0);
}

/** Pages of the hits of `query` in `index`, in `id` order (search_after: no result window), `source` as asked. */
async function* pages(conn: Connection, index: string, query: Query, size: number, source: unknown): AsyncGenerator<{ _id: string; _source?: Record<string, unknown> }[]> {
  let after: string | undefined;
  for (;;) {
    const body = withSource(matchingIdsBody(query, size, after), source);
    const r = await conn.request({ method: "POST", path: `/${q(index)}/_search`, body, what: `read ${index}` });
    const hits: { _id: string; _source?: Record<string, unknown>; sort: string[] }[] = r.body?.hits?.hits ?? [];
    if (hits.length > 0) yield hits;
    if (hits.length < size) return;
    after = hits[hits.length - 1]!.sort[0];
  }
}

/** The ids of `ids` that `index` holds among the documents `query` matches. */
async function held(conn: Connection, index: string, ids: string[], query: Query): Promise<Set<string>> {
  const r = await conn.request({
    method: "POST",
    path: `/${q(index)}/_search`,
    body: idsAmongBody(ids, query),
    what: `look up ${ids.length} ids in ${index}`,
  });
  return new Set((r.body?.hits?.hits ?? []).map((h: { _id: string }) => h._id));
}

/** The first id of the tenant's snapshot documents that a live document of another scope holds, or null. */
async function takenId(conn: Connection, k: KindPlan, query: Query, size: number): Promise<string | null> {
  for await (const page of pages(conn, k.temp, query, size, false)) {
    const r = await conn.request({
      method: "POST",
      path: `/${q(k.alias)}/_search`,
      body: idsOutsideBody(page.map((h) => h._id), query),
      what: `check that no other tenant holds the ids in ${k.alias}`,
    });
    const hit = r.body?.hits?.hits?.[0];
    if (hit) return String(hit._id);
  }
  return null;
}

/**
 * Replace tenant `tenantId`'s documents in the store's live indices of `indexPrefix` by those of a snapshot, the
 * other tenants untouched (see the module's comment for the order and why). Returns per kind what was restored.
 */
export async function restoreTenant(options: ConnectionOptions, o: RestoreTenantOptions): Promise<RestoreTenantResult> {
  const started = performance.now();
  const { repository, snapshot, tenantId } = checkTenantOptions(o);
  const conn = await connect({ ...options, refresh: "false" }, RestoreError);
  const prefix = options.indexPrefix;
  try {
    const info = await readSnapshot(conn, repository, snapshot);
    if (info.state !== "SUCCESS") {
      throw conn.error(`snapshot ${snapshot} of ${repository} is ${info.state}, not SUCCESS: restore from a complete one. ` +
        "Nothing was changed");
    }
    const plan = planRestore(info.indices, prefix, randomBytes(4).toString("hex"));
    const live = new Map<IndexKind, IndexInfo>();
    for (const kind of KINDS) {
      const found = await findIndex(conn, prefix, kind);
      if (found) live.set(kind, found);
    }
    for (const k of plan.kinds) {
      const found = live.get(k.kind);
      if (!found) {
        throw conn.error(`prefix ${prefix} has no ${k.alias} here: create the ${k.kind} store first (an empty index), ` +
          "then restore. Nothing was changed");
      }
      if (found.meta.template_version !== k.version) {
        throw conn.error(`snapshot ${snapshot} holds ${k.source} (template version ${k.version}) but ${found.index} is ` +
          `version ${found.meta.template_version}: restore the whole index with the snapshot API. Nothing was changed`);
      }
    }
    const skipped = KINDS.filter((kind) => live.has(kind) && !plan.kinds.some((k) => k.kind === kind));
    const temps = plan.kinds.map((k) => k.temp);
    try {
      await conn.request({
        method: "POST",
        path: `/_snapshot/${q(repository)}/${q(snapshot)}/_restore`,
        query: { wait_for_completion: "false" },
        body: {
          indices: plan.kinds.map((k) => k.source).join(","),
          include_global_state: false,
          include_aliases: false,
          rename_pattern: plan.rename[0],
          rename_replacement: plan.rename[1],
          index_settings: { "index.number_of_replicas": 0, "index.auto_expand_replicas": "false" },
        },
        what: `restore ${plan.kinds.map((k) => k.source).join(", ")} of snapshot ${snapshot} as ${temps.join(", ")}`,
      });
      await waitRestored(conn, temps, o.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      return await replaceTenant(conn, plan, live, { repository, snapshot, prefix, tenantId, skipped, started });
    } finally {
      await conn.request({
        method: "DELETE",
        path: `/${temps.map(q).join(",")}`,
        query: { ignore_unavailable: "true" },
        missingIndexOk: true,
        what: `delete the temporary copies ${temps.join(", ")}`,
      });
    }
  } finally {
    await conn.close();
  }
}

/** Steps 2 to 5 of the module's comment, on the restored copies. */
async function replaceTenant(
  conn: Connection,
  plan: RestorePlan,
  live: Map<IndexKind, IndexInfo>,
  c: { repository: string; snapshot: string; prefix: string; tenantId: string; skipped: IndexKind[]; started: number },
): Promise<RestoreTenantResult> {
  const scope = (kind: IndexKind): Query => forgetQuery(kind, { tenantId: c.tenantId });
  const nothing = "Nothing was changed";
  for (const k of plan.kinds) await conn.refreshIndex(k.temp);
  const wanted: Partial<Record<IndexKind, number>> = {};
  for (const k of plan.kinds) wanted[k.kind] = await countOf(conn, k.temp, scope(k.kind));
  if (Object.values(wanted).every((n) => n === 0)) {
    throw conn.error(`snapshot ${c.snapshot} holds no document of tenant ${c.tenantId} under prefix ${c.prefix} (it was ` +
      `written after the snapshot? to remove it, use forget). ${nothing}`);
  }
  const vectors = plan.kinds.find((k) => k.kind === "vectors");
  if (vectors) {
    const r = await conn.request({ method: "GET", path: `/${q(vectors.temp)}/_mapping`, what: `read the mapping of ${vectors.temp}` });
    const dims = r.body?.[vectors.temp]?.mappings?._meta?.reme_es?.dims;
    const liveDims = live.get("vectors")?.meta.dims;
    if (dims !== undefined && liveDims !== undefined && dims !== liveDims) {
      throw conn.error(`snapshot ${c.snapshot} holds ${dims}-d vectors but ${vectors.alias} now holds ${liveDims}-d ones. ${nothing}`);
    }
  }
  // Everything written so far, by any process, must be searchable: the checks and the removal scan must see it.
  for (const k of plan.kinds) await conn.refreshIndex(k.alias);
  const idPage = new Map<IndexKind, number>();
  for (const k of plan.kinds) {
    idPage.set(k.kind, Math.min(await pageSize(conn, k.temp), await pageSize(conn, k.alias)));
    const taken = await takenId(conn, k, scope(k.kind), idPage.get(k.kind)!);
    if (taken !== null) {
      throw conn.error(`${k.alias} holds ${taken}, which the snapshot has as a document of tenant ${c.tenantId}, as a ` +
        `document of another tenant now: the restore would overwrite it. ${nothing}`, { details: { id: taken } });
    }
  }
  const kinds: Partial<Record<IndexKind, RestoredKind>> = {};
  const source = dialectOf(conn.engine).sourceWithVectors(conn.version);
  for (const k of plan.kinds) {
    const before = await countOf(conn, k.alias, scope(k.kind));
    const copyPage = Math.min(COPY_PAGE, idPage.get(k.kind)!);
    async function* copies(): AsyncIterable<BulkOp> {
      for await (const page of pages(conn, k.temp, scope(k.kind), copyPage, k.kind === "vectors" ? source : true)) {
        for (const h of page) {
          const doc = h._source ?? {};
          if (k.kind === "vectors" && doc.zero === false && !Array.isArray(doc.embedding)) {
            throw conn.error(`${k.temp} gave entry ${h._id} without its vector, so it was not written (entries before it ` +
              "in id order may be restored already; the others are as they were)", { details: { id: h._id } });
          }
          yield { action: "index", id: h._id, doc };
        }
      }
    }
    const copied = await sendPages(conn, k.alias, copies(), (n) => `restore ${n} documents into ${k.alias}`, { pageSize: copyPage });
    conn.throwBulkFailures(`restore into ${k.alias}`, copied.failures, copied.total);
    async function* removals(): AsyncIterable<BulkOp> {
      for await (const page of pages(conn, k.alias, scope(k.kind), idPage.get(k.kind)!, false)) {
        const ids = page.map((h) => h._id);
        const keep = await held(conn, k.temp, ids, scope(k.kind));
        for (const id of ids) if (!keep.has(id)) yield { action: "delete", id };
      }
    }
    const removed = await sendPages(conn, k.alias, removals(), (n) => `delete ${n} later documents from ${k.alias}`);
    conn.throwBulkFailures(`remove the later documents from ${k.alias}`, removed.failures, removed.total);
    kinds[k.kind] = { from: k.source, restored: copied.total, before, removed: removed.total };
  }
  for (const k of plan.kinds) await conn.refreshIndex(k.alias);
  const got: Partial<Record<IndexKind, number>> = {};
  for (const k of plan.kinds) got[k.kind] = await countOf(conn, k.alias, scope(k.kind));
  const wrong = countMismatches(wanted, got);
  if (wrong.length > 0) {
    throw conn.error(`restore of tenant ${c.tenantId} from snapshot ${c.snapshot}: the counts differ (${wrong.join("; ")}): ` +
      "a writer of this tenant wrote during the restore. Stop it and run the restore again", { details: { wanted, got } });
  }
  return {
    repository: c.repository,
    snapshot: c.snapshot,
    indexPrefix: c.prefix,
    tenantId: c.tenantId,
    kinds,
    skipped: c.skipped,
    seconds: (performance.now() - c.started) / 1000,
  };
}
