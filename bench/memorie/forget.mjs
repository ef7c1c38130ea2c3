#!/usr/bin/env node
// How long `forget` takes: one tenant out of N memories in the three stores of reme-es-memorie, with and without
// expunge, on one node.
//
//   (cd memorie && npm ci && npm run build)
//   node bench/memorie/forget.mjs --url http://127.0.0.1:9311 [--n 100000] [--out bench/results/memorie_forget.json]
//
// Data: bench/memorie/data.mjs's memories (10 tenants, so one tenant is N/10), hash256 vectors with the metadata
// Memorie's engine writes ({tenantId, namespace, subjectId}), and N/2 relations between memories of one tenant
// (memory i -> memory i + 10). Memories and vectors are loaded with indexMany/upsertMany; relations with plain bulk
// requests of the package's own relation documents (the GraphStore has no bulk load). After the load, the node's
// merges are waited for. Then, per store: forget tenant t3 (no expunge), then tenant t4 with expunge (the delete,
// then flush, wait for the retention leases, force merge only_expunge_deletes), and docs.deleted of the index after.
// The stores are forgotten one after the other, so each figure is one store alone on the node.
import { writeFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";

import { createGraphStore, createSearchStore, createVectorStore } from "../../memorie/dist/src/index.js";
import { relationDoc } from "../../memorie/dist/src/dialect.js";
import { embedder, makeMemory } from "./data.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = args.url ?? process.env.REME_ES_MEMORIE_OPENSEARCH_URL ?? "http://127.0.0.1:9250";
const n = Number(args.n ?? 100_000);
const out = args.out ?? "bench/results/memorie_forget.json";
const indexPrefix = args.prefix ?? `bench-forget-${Date.now().toString(36)}`;
const ms = () => performance.now();

async function json(method, path, body) {
  const r = await fetch(url + path, {
    method,
    headers: { "content-type": body === undefined || typeof body === "object" ? "application/json" : "application/x-ndjson" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const parsed = await r.json();
  if (r.status >= 300 || parsed.errors) throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(parsed).slice(0, 300)}`);
  return parsed;
}

async function waitMerges(aliases) {
  const t = ms();
  for (const a of aliases) await json("POST", `/${a}/_refresh`);
  for (;;) {
    let running = 0;
    for (const a of aliases) running += (await json("GET", `/${a}/_stats/merge`))._all.primaries.merges.current;
    if (running === 0) return (ms() - t) / 1000;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const docs = async (alias) => (await json("GET", `/${alias}/_stats/docs`))._all.primaries.docs;
const node = (await json("GET", "/_nodes/_local?filter_path=nodes.*.version")).nodes;
const version = Object.values(node)[0].version;

const memories = Array.from({ length: n }, (_, i) => makeMemory(i));
const canonical = new Map(memories.map((m) => [m.id, m]));
const embed = embedder("hash256");
const search = await createSearchStore({ url, indexPrefix });
const vectors = await createVectorStore({ url, indexPrefix, dimensions: embed.dims });
const graph = await createGraphStore({ url, indexPrefix, resolveMemory: (id) => canonical.get(id) ?? null });
const aliases = ["memories", "vectors", "relations"].map((k) => `${indexPrefix}-memorie-${k}`);
const engine = search.engine;
console.error(`${engine} ${version} at ${url}: loading ${n} memories, ${n} vectors, ${Math.floor(n / 2)} relations`);

const t0 = ms();
const scope = (m) => ({ tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId });
async function loadRelations() {
  const page = 2000;
  for (let start = 0; start < n / 2; start += page) {
    const lines = [];
    for (let i = start; i < Math.min(n / 2, start + page) && i + 10 < n; i++) {
      const from = memories[i];
      const to = memories[i + 10];
      const r = { id: `r${i}`, fromMemoryId: from.id, toMemoryId: to.id, type: "related_to", createdAt: from.createdAt };
      lines.push(JSON.stringify({ index: { _id: r.id } }), JSON.stringify(relationDoc(r, { from: scope(from), to: scope(to) })));
    }
    await json("POST", `/${aliases[2]}/_bulk?require_alias=true`, lines.join("\n") + "\n");
  }
}
await Promise.all([
  search.indexMany(memories),
  vectors.upsertMany(memories.map((m) => ({ id: m.id, embedding: embed(m.content), metadata: scope(m) }))),
  loadRelations(),
]);
const loadSeconds = (ms() - t0) / 1000;
const mergeSeconds = await waitMerges(aliases);
console.error(`loaded in ${loadSeconds.toFixed(1)} s, merges done ${mergeSeconds.toFixed(1)} s after`);

const rows = [];
for (const [name, store, alias] of [["memories", search, aliases[0]], ["vectors", vectors, aliases[1]], ["relations", graph, aliases[2]]]) {
  const before = await docs(alias);
  const plain = await store.forget({ tenantId: "t3" });
  const expunged = await store.forget({ tenantId: "t4", expunge: true });
  const after = await docs(alias);
  const row = {
    store: name, docs: before.count, method: plain.method,
    forget: { deleted: plain.deleted, seconds: plain.seconds },
    forgetExpunge: { deleted: expunged.deleted, seconds: expunged.seconds, expungeSeconds: expunged.expungeSeconds,
      expunged: expunged.expunged },
    docsDeletedAfter: after.deleted, sizeBytesAfter: after.total_size_in_bytes ?? null,
  };
  rows.push(row);
  console.error(JSON.stringify(row));
}

const result = { engine, version, url, n, loadSeconds, mergeSeconds, rows, loadavg: (await import("node:os")).loadavg() };
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(result, null, 2));

const f = (x) => x.toFixed(2);
console.log(`\nforget one tenant (t3, then t4 with expunge) out of ${n} memories, ${engine} ${version}\n`);
console.log("| store | docs | method | deleted | forget s | deleted | forget+expunge s | of which expunge s | expunged | docs.deleted after |");
console.log("|---|--:|---|--:|--:|--:|--:|--:|---|--:|");
for (const r of rows) {
  console.log(`| ${r.store} | ${r.docs} | ${r.method} | ${r.forget.deleted} | ${f(r.forget.seconds)} | ${r.forgetExpunge.deleted} | ` +
    `${f(r.forgetExpunge.seconds)} | ${f(r.forgetExpunge.expungeSeconds)} | ${r.forgetExpunge.expunged} | ${r.docsDeletedAfter} |`);
}

if (!args.keep) {
  await search.drop();
  await vectors.drop();
  await graph.drop();
}
await Promise.all([search.close(), vectors.close(), graph.close()]);
