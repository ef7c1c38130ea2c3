// Runs the exported contract suites against every configured node with this package's factories.
import { createGraphStore, createSearchStore, createVectorStore } from "../src/index.js";
import { runGraphStoreContract, runSearchStoreContract, runVectorStoreContract } from "../src/contract/index.js";
import type { Memory } from "../src/types.js";
import { freshPrefix, targets } from "./targets.js";

for (const { engine, url } of targets) {
  // Whether this node stems is decided by the node (porter_stem comes with analysis-common); the suite then
  // checks the store really behaves that way.
  const probe = await createSearchStore({ url, indexPrefix: freshPrefix("probe") });
  const stemming = probe.info.stemming;
  await probe.drop();
  await probe.close();

  runSearchStoreContract(`${engine} ${url}`, {
    create: () => createSearchStore({ url, indexPrefix: freshPrefix("search") }),
    destroy: async (s) => {
      await s.drop();
      await s.close();
    },
  }, { stemming });

  runVectorStoreContract(`${engine} ${url}`, {
    create: () => createVectorStore({ url, indexPrefix: freshPrefix("vector") }),
    destroy: async (s) => {
      await s.drop();
      await s.close();
    },
  });

  runGraphStoreContract(`${engine} ${url}`, {
    create: async () => {
      const memories = new Map<string, Memory>();
      const store = await createGraphStore({
        url,
        indexPrefix: freshPrefix("graph"),
        resolveMemory: async (id) => memories.get(id) ?? null,
      });
      return { store, putMemory: (m: Memory) => void memories.set(m.id, m) };
    },
    destroy: async (g) => {
      await g.drop();
      await g.close();
    },
  });
}
