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
import { findIndex, type IndexInfo } from "./indices.js";
import { countOf, type Hit, searchHits, searchPages } from "./port.js";
import { deleteIndices, remeMeta } from "./port-indices.js";
import { readSnapshot, startRestore, waitRestored } from "./port-snapshots.js";
import { pageSize } from "./port-upkeep.js";
import { countMismatches, KINDS, type KindPlan, planRestore, type RestorePlan } from "./restore-plan.js";
import { DEFAULT_TIMEOUT_MS } from "./snapshot.js";
import type { BulkOp, Connection } from "./transport.js";

/** Documents (with their sources, vectors included) per page of the copy. */
const COPY_PAGE = 500;

type Query = Record<string, unknown>;

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

/** Pages of the hits of `query` in `index`, in `id` order (search_after: no result window), `source` as asked. */
function pages(conn: Connection, index: string, query: Query, size: number, source: unknown): AsyncGenerator<Hit[]> {
  const body = (after: unknown[] | undefined) => withSource(matchingIdsBody(query, size, after?.[0] as string | undefined), source);
  return searchPages(conn, index, body, size, `read ${index}`);
}

/** The ids of `ids` that `index` holds among the documents `query` matches. */
async function held(conn: Connection, index: string, ids: string[], query: Query): Promise<Set<string>> {
  const hits = await searchHits(conn, index, idsAmongBody(ids, query), `look up ${ids.length} ids in ${index}`);
  return new Set(hits.map((h) => h.id));
}

/** The first id of the tenant's snapshot documents that a live document of another scope holds, or null. */
async function takenId(conn: Connection, k: KindPlan, query: Query, size: number): Promise<string | null> {
  for await (const page of pages(conn, k.temp, query, size, false)) {
    const what = `check that no other tenant holds the ids in ${k.alias}`;
    const [hit] = await searchHits(conn, k.alias, idsOutsideBody(page.map((h) => h.id), query), what);
    if (hit) return String(hit.id);
  }
  return null;
}

/** The live index of each kind of `prefix`; a kind of the plan without one, or of another template version, throws. */
async function liveIndices(conn: Connection, plan: RestorePlan, prefix: string, snapshot: string): Promise<Map<IndexKind, IndexInfo>> {
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
  return live;
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
    const live = await liveIndices(conn, plan, prefix, snapshot);
    const skipped = KINDS.filter((kind) => live.has(kind) && !plan.kinds.some((k) => k.kind === kind));
    const temps = plan.kinds.map((k) => k.temp);
    try {
      const sources = plan.kinds.map((k) => k.source);
      const what = `restore ${sources.join(", ")} of snapshot ${snapshot} as ${temps.join(", ")}`;
      await startRestore(conn, repository, snapshot, sources, plan.rename, what);
      await waitRestored(conn, temps, o.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      return await replaceTenant(conn, plan, live, { repository, snapshot, prefix, tenantId, skipped, started });
    } finally {
      await deleteIndices(conn, temps, `delete the temporary copies ${temps.join(", ")}`, true);
    }
  } finally {
    await conn.close();
  }
}

/** What a restore is of: the repository, snapshot, prefix and tenant, the kinds skipped and when it started. */
interface RestoreCall {
  repository: string;
  snapshot: string;
  prefix: string;
  tenantId: string;
  skipped: IndexKind[];
  started: number;
}

const NOTHING = "Nothing was changed";
const scopeOf = (c: RestoreCall, kind: IndexKind): Query => forgetQuery(kind, { tenantId: c.tenantId });

/** Step 2 of the module's comment: the checks before anything live changes; per kind its documents and id page. */
async function checkCopies(conn: Connection, plan: RestorePlan, live: Map<IndexKind, IndexInfo>, c: RestoreCall) {
  for (const k of plan.kinds) await conn.refreshIndex(k.temp);
  const wanted: Partial<Record<IndexKind, number>> = {};
  for (const k of plan.kinds) wanted[k.kind] = await countOf(conn, k.temp, scopeOf(c, k.kind), `count in ${k.temp}`);
  if (Object.values(wanted).every((n) => n === 0)) {
    throw conn.error(`snapshot ${c.snapshot} holds no document of tenant ${c.tenantId} under prefix ${c.prefix} (it was ` +
      `written after the snapshot? to remove it, use forget). ${NOTHING}`);
  }
  const vectors = plan.kinds.find((k) => k.kind === "vectors");
  if (vectors) {
    const dims = (await remeMeta(conn, vectors.temp)).dims;
    const liveDims = live.get("vectors")?.meta.dims;
    if (dims !== undefined && liveDims !== undefined && dims !== liveDims) {
      throw conn.error(`snapshot ${c.snapshot} holds ${dims}-d vectors but ${vectors.alias} now holds ${liveDims}-d ones. ${NOTHING}`);
    }
  }
  // Everything written so far, by any process, must be searchable: the checks and the removal scan must see it.
  for (const k of plan.kinds) await conn.refreshIndex(k.alias);
  const idPage = new Map<IndexKind, number>();
  for (const k of plan.kinds) {
    idPage.set(k.kind, Math.min(await pageSize(conn, k.temp), await pageSize(conn, k.alias)));
    const taken = await takenId(conn, k, scopeOf(c, k.kind), idPage.get(k.kind)!);
    if (taken !== null) {
      throw conn.error(`${k.alias} holds ${taken}, which the snapshot has as a document of tenant ${c.tenantId}, as a ` +
        `document of another tenant now: the restore would overwrite it. ${NOTHING}`, { details: { id: taken } });
    }
  }
  return { wanted, idPage };
}

/** Steps 3 and 4 of the module's comment for one kind: copy the tenant's snapshot documents, remove the later ones. */
async function copyKind(conn: Connection, k: KindPlan, query: Query, idPage: number): Promise<RestoredKind> {
  const before = await countOf(conn, k.alias, query, `count in ${k.alias}`);
  const copyPage = Math.min(COPY_PAGE, idPage);
  const source = k.kind === "vectors" ? dialectOf(conn.engine).sourceWithVectors(conn.version) : true;
  async function* copies(): AsyncIterable<BulkOp> {
    for await (const page of pages(conn, k.temp, query, copyPage, source)) {
      for (const h of page) {
        const doc = h.source;
        if (k.kind === "vectors" && doc.zero === false && !Array.isArray(doc.embedding)) {
          throw conn.error(`${k.temp} gave entry ${h.id} without its vector, so it was not written (entries before it ` +
            "in id order may be restored already; the others are as they were)", { details: { id: h.id } });
        }
        yield { action: "index", id: h.id, doc };
      }
    }
  }
  const copied = await sendPages(conn, k.alias, copies(), (n) => `restore ${n} documents into ${k.alias}`, { pageSize: copyPage });
  conn.throwBulkFailures(`restore into ${k.alias}`, copied.failures, copied.total);
  async function* removals(): AsyncIterable<BulkOp> {
    for await (const page of pages(conn, k.alias, query, idPage, false)) {
      const ids = page.map((h) => h.id);
      const keep = await held(conn, k.temp, ids, query);
      for (const id of ids) if (!keep.has(id)) yield { action: "delete", id };
    }
  }
  const removed = await sendPages(conn, k.alias, removals(), (n) => `delete ${n} later documents from ${k.alias}`);
  conn.throwBulkFailures(`remove the later documents from ${k.alias}`, removed.failures, removed.total);
  return { from: k.source, restored: copied.total, before, removed: removed.total };
}

/** Steps 2 to 5 of the module's comment, on the restored copies. */
async function replaceTenant(
  conn: Connection,
  plan: RestorePlan,
  live: Map<IndexKind, IndexInfo>,
  c: RestoreCall,
): Promise<RestoreTenantResult> {
  const { wanted, idPage } = await checkCopies(conn, plan, live, c);
  const kinds: Partial<Record<IndexKind, RestoredKind>> = {};
  for (const k of plan.kinds) kinds[k.kind] = await copyKind(conn, k, scopeOf(c, k.kind), idPage.get(k.kind)!);
  for (const k of plan.kinds) await conn.refreshIndex(k.alias);
  const got: Partial<Record<IndexKind, number>> = {};
  for (const k of plan.kinds) got[k.kind] = await countOf(conn, k.alias, scopeOf(c, k.kind), `count in ${k.alias}`);
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
