#!/usr/bin/env node
// What limits a bulk load (indexMany + upsertMany at once, as bench/memorie/backends.mjs loads): the same memories
// loaded with variants, each into fresh indices, variants alternating round by round (so all see the same load):
//   both (default)          indexMany + upsertMany at once, the package's pages (1000) and concurrency (2)
//   both, pages of 5000     / both, concurrency 1 / both, concurrency 4
//   memories only           indexMany alone          vectors only    upsertMany alone
//   both / vectors only with the shared HNSW graph (m 16, ef_construction 64) instead of Memorie's m 32 / 150
// and the client's share: building the bulk bodies (JSON.stringify of both kinds of documents) without sending.
// memories/s medians over the rounds; the load each round left merging is not included (see memorie_backends).
//
//   node bench/memorie/bulk.mjs --url http://127.0.0.1:9403 [--size 20000] [--rounds 3] [--shape zipf] [--set hash256]
import { loadavg } from "node:os";

import { createSearchStore, createVectorStore } from "../../memorie/dist/src/index.js";
import { HNSW } from "../../memorie/dist/src/settings.js";
import { memoryDoc, vectorDoc } from "../../memorie/dist/src/dialect.js";
import { embedder, makeMemory } from "./data.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = args.url ?? process.env.REME_ES_MEMORIE_OPENSEARCH_URL ?? "http://127.0.0.1:9403";
const size = Number(args.size ?? 20000);
const rounds = Number(args.rounds ?? 3);
const shape = args.shape ?? "zipf";
const embed = embedder(args.set ?? "hash256");
const ms = () => performance.now();
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const memories = Array.from({ length: size }, (_, i) => makeMemory(i, shape));
const entries = memories.map((m) => ({
  id: m.id, embedding: embed(m.content), metadata: { tenantId: m.tenantId, namespace: m.namespace, subjectId: m.subjectId },
}));

const VARIANTS = [
  { name: "both (default: pages of 1000, 2 in flight)", memories: true, vectors: true, options: {} },
  { name: "both, pages of 5000", memories: true, vectors: true, options: { pageSize: 5000 } },
  { name: "both, 1 in flight", memories: true, vectors: true, options: { concurrency: 1 } },
  { name: "both, 4 in flight", memories: true, vectors: true, options: { concurrency: 4 } },
  { name: "memories only", memories: true, vectors: false, options: {} },
  { name: "vectors only", memories: false, vectors: true, options: {} },
  { name: "both, shared graph m 16 / 64", memories: true, vectors: true, options: {}, hnsw: HNSW },
  { name: "vectors only, shared graph m 16 / 64", memories: false, vectors: true, options: {}, hnsw: HNSW },
];

async function loadOnce(v, round, j) {
  const prefix = `bench-bulk-${process.pid}-${round}-${j}`;
  const search = await createSearchStore({ url, indexPrefix: prefix });
  const vectors = await createVectorStore({ url, indexPrefix: prefix, dimensions: embed.dims, hnsw: v.hnsw });
  try {
    const t = ms();
    await Promise.all([
      v.memories ? search.indexMany(memories, v.options) : null,
      v.vectors ? vectors.upsertMany(entries, v.options) : null,
    ]);
    await Promise.all([v.memories ? search.refresh() : null, v.vectors ? vectors.refresh() : null]);
    return size / ((ms() - t) / 1000);
  } finally {
    await search.drop();
    await vectors.drop();
    await search.close();
    await vectors.close();
  }
}

function serialiseRate() {
  const t = ms();
  let chars = 0;
  for (const [i, m] of memories.entries()) {
    chars += JSON.stringify({ index: { _index: "a", _id: m.id } }).length + JSON.stringify(memoryDoc(m)).length;
    const e = entries[i];
    chars += JSON.stringify({ index: { _index: "b", _id: e.id } }).length + JSON.stringify(vectorDoc(e.id, e.embedding, e.metadata)).length;
  }
  return { rate: size / ((ms() - t) / 1000), mib: chars / 2 ** 20 };
}

const rates = VARIANTS.map(() => []);
const client = [];
for (let round = 0; round < rounds; round++) {
  const order = round % 2 ? [...VARIANTS.keys()].reverse() : [...VARIANTS.keys()];
  for (const j of order) rates[j].push(await loadOnce(VARIANTS[j], round, j));
  client.push(serialiseRate());
}
console.log(`bulk loads of ${size.toLocaleString("en")} memories (${shape}, ${embed.dims}-d vectors) into ${url}, ` +
  `${rounds} rounds, medians; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}\n`);
console.log("| variant | memories/s | rounds |\n|---|--:|---|");
for (const [j, v] of VARIANTS.entries()) {
  console.log(`| ${v.name} | ${Math.round(median(rates[j])).toLocaleString("en")} | ${rates[j].map((r) => Math.round(r)).join(", ")} |`);
}
const c = median(client.map((x) => x.rate));
console.log(`| the client building both bodies, not sending (one core) | ${Math.round(c).toLocaleString("en")} | ` +
  `${client[0].mib.toFixed(1)} MiB of bulk bodies |`);
