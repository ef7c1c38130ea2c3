// Runs the exported contract suites against every configured node with this package's factories.
import { createGraphStore, createSearchStore, createVectorStore } from "../src/index.js";
import { runGraphStoreContract, runSearchStoreContract, runVectorStoreContract } from "../src/contract/index.js";
import type { Memory } from "../src/types.js";
import { freshPrefix, targets } from "./targets.js";

for (const { engine, url } of targets) {
  // Called as the README shows it, without `stemming`: the suite reads what each store declares (`info.stemming`,
  // from its index); adapter.test.ts checks that the declaration matches what the node can do.
  runSearchStoreContract(`${engine} ${url}`, {
    create: () => createSearchStore({ url, indexPrefix: freshPrefix("search") }),
    destroy: async (s) => {
      await s.drop();
      await s.close();
    },
  });

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
