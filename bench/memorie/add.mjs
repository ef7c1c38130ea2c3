#!/usr/bin/env node
// Where the time of one engine.add() goes: searchStore.index(m) then vectorStore.upsert(id, vec, scope), one at a
// time, against one node, with index-setting variants side by side (each on its own pair of indices, adds
// alternating between the variants call by call so all see the same load):
//   - default: the package as shipped (deferred refresh, the templates' settings);
//   - refresh 1s: the indices' refresh_interval set to 1s explicitly (the templates before issue 21);
//   - refresh unset: the node's default (1 s, but none while the shard has had no search for 30 s: search-idle);
//   - refresh -1: no scheduled refresh at all (only the client's deferred refreshes);
//   - translog async: index.translog.durability async (NOT durable: a crash loses up to 5 s of acknowledged writes;
//     here only to show what the per-write translog fsync costs);
//   - raw fetch: the same two PUTs sent with fetch (keep-alive), no adapter, default settings.
// Also: fdatasync of a 4 KiB write on the node's disk (what each durable write waits for at least once), and the
// floor of one add: two requests that each wait for a durable write (the node's `index.translog.durability:
// request` syncs the translog, and its checkpoint, before it answers), i.e. 2 x (a GET round trip + 1 or 2 fdatasyncs).
//
//   node bench/memorie/add.mjs --url http://127.0.0.1:9250 [--adds 300] [--preload 2000] [--datadir <node data dir>]
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";

import { createSearchStore, createVectorStore } from "../../memorie/dist/src/index.js";
import { memoryDoc, vectorDoc } from "../../memorie/dist/src/dialect.js";
import { embedder, makeMemory } from "./data.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = args.url ?? process.env.REME_ES_MEMORIE_OPENSEARCH_URL ?? "http://127.0.0.1:9250";
const adds = Number(args.adds ?? 300);
const preload = Number(args.preload ?? 2000);
const embed = embedder("hash256");

const q = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const ms = () => performance.now();
const scopeOf = (m) => ({ tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId });

/** p50 ms of `writes` 4 KiB writes each followed by fdatasync, timed together (one durable write = 2 syncs). */
function fsyncP50(dir, n = 200, writes = 1) {
  const d = mkdtempSync(join(dir, "fsync-"));
  const fd = openSync(join(d, "f"), "w");
  const buf = Buffer.alloc(4096, 7);
  const t = [];
  for (let i = 0; i < n; i++) {
    const s = ms();
    for (let w = 0; w < writes; w++) {
      writeSync(fd, buf);
      fdatasyncSync(fd);
    }
    t.push(ms() - s);
  }
  closeSync(fd);
  rmSync(d, { recursive: true, force: true });
  return q(t, 0.5);
}

async function put(path, body) {
  const r = await fetch(url + path, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const out = await r.json();
  if (!r.ok) throw new Error(`${path}: ${JSON.stringify(out).slice(0, 300)}`);
  return out;
}

const VARIANTS = [
  { name: "default (as shipped)", settings: null },
  { name: "refresh_interval 1s", settings: { refresh_interval: "1s" } },
  { name: "refresh_interval unset (1s, search-idle)", settings: { refresh_interval: null } },
  { name: "refresh_interval -1", settings: { refresh_interval: "-1" } },
  { name: "translog async (not durable)", settings: { "translog.durability": "async" } },
  { name: "raw fetch, no adapter", settings: null, raw: true },
];

const stores = [];
try {
  for (const [i, v] of VARIANTS.entries()) {
    const prefix = `bench-add-${process.pid}-${i}`;
    const search = await createSearchStore({ url, indexPrefix: prefix });
    const vectors = await createVectorStore({ url, indexPrefix: prefix, dimensions: embed.dims });
    const aliases = [search.info.alias, `${prefix}-memorie-vectors`];
    if (v.settings) for (const a of aliases) await put(`/${a}/_settings`, { index: v.settings });
    const batch = Array.from({ length: preload }, (_, k) => makeMemory(i * 1_000_000 + k));
    await search.indexMany(batch);
    await vectors.upsertMany(batch.map((m) => ({ id: m.id, embedding: embed(m.content), metadata: scopeOf(m) })));
    await search.refresh();
    await vectors.refresh();
    stores.push({ ...v, search, vectors, aliases, next: i * 1_000_000 + preload, index: [], upsert: [], add: [] });
  }
  const one = async (s) => {
    const m = makeMemory(s.next++);
    const vec = embed(m.content);
    const t0 = ms();
    if (s.raw) await put(`/${s.aliases[0]}/_doc/${m.id}?refresh=false&require_alias=true`, memoryDoc(m));
    else await s.search.index(m);
    const t1 = ms();
    if (s.raw) await put(`/${s.aliases[1]}/_doc/${m.id}?refresh=false&require_alias=true`, vectorDoc(m.id, vec, scopeOf(m)));
    else await s.vectors.upsert(m.id, vec, scopeOf(m));
    const t2 = ms();
    return [t1 - t0, t2 - t1, t2 - t0];
  };
  for (let w = 0; w < 20; w++) for (const s of stores) await one(s);
  for (let k = 0; k < adds; k++) {
    for (const s of k % 2 ? [...stores].reverse() : stores) {
      const [a, b, c] = await one(s);
      s.index.push(a);
      s.upsert.push(b);
      s.add.push(c);
    }
  }
  // The floor of any request: a round trip that writes nothing (GET of one document by id, realtime), through the
  // adapter's connection and with fetch.
  const conn = stores[0].search.conn;
  const alias = stores[0].aliases[0];
  const get = (raw) => raw
    ? fetch(`${url}/${alias}/_doc/${stores[0].next - 1}`).then((r) => r.arrayBuffer())
    : conn.request({ method: "GET", path: `/${alias}/_doc/m${stores[0].next - 1}`, accept: [404], what: "get" });
  const floor = [[], []];
  for (let k = 0; k < adds + 20; k++) {
    for (const j of [0, 1]) {
      const t = ms();
      await get(j === 1);
      if (k >= 20) floor[j].push(ms() - t);
    }
  }
  const f = (x) => x.toFixed(2);
  const dir = args.datadir ?? tmpdir();
  console.log(`engine.add() on ${stores[0].search.engine} ${url}, ${adds} adds per variant after ${preload} loaded; ms`);
  const sync1 = fsyncP50(dir);
  const sync2 = fsyncP50(dir, 200, 2);
  const rtt = q(floor[0], 0.5);
  console.log(`fdatasync of a 4 KiB write in ${dir}: p50 ${f(sync1)} ms, two in a row ${f(sync2)} ms; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  const durability = await (await fetch(`${url}/${alias}/_settings/index.translog.durability?include_defaults=true&flat_settings=true`)).json();
  const mode = Object.values(durability)[0];
  console.log(`translog durability: ${mode?.settings?.["index.translog.durability"] ?? mode?.defaults?.["index.translog.durability"] ?? "?"}`);
  console.log(`floor of one add, 2 requests each a round trip + a durable write: 2 x (${f(rtt)} + ${f(sync1)}) = ` +
    `${f(2 * (rtt + sync1))} ms with one sync per write, 2 x (${f(rtt)} + ${f(sync2)}) = ${f(2 * (rtt + sync2))} ms with two ` +
    "(translog and checkpoint); compare the add p50, and what translog async (no sync) saves\n");
  console.log("| variant | index p50 | upsert p50 | add p50 / p95 | adds/s |\n|---|--:|--:|--:|--:|");
  console.log(`| a GET by id (no write): adapter connection / fetch | ${f(q(floor[0], 0.5))} | ${f(q(floor[1], 0.5))} | | |`);
  for (const s of stores) {
    const p50 = q(s.add, 0.5);
    console.log(`| ${s.name} | ${f(q(s.index, 0.5))} | ${f(q(s.upsert, 0.5))} | ${f(p50)} / ${f(q(s.add, 0.95))} | ${Math.round(1000 / p50)} |`);
  }
} finally {
  for (const s of stores) {
    await s.search.drop();
    await s.vectors.drop();
    await s.search.close();
    await s.vectors.close();
  }
}
